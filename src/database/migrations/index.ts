import { Initial1763771000000 } from './1763771000000-initial.js';
import { Tasks1763780000000 } from './1763780000000-tasks.js';

/** Every migration, oldest first. Never edit one that has been committed; add a new one. */
export const MIGRATIONS = [Initial1763771000000, Tasks1763780000000];
