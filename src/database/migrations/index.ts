import { Initial1763771000000 } from './1763771000000-initial.js';
import { Tasks1763780000000 } from './1763780000000-tasks.js';
import { TaskMessageId1763790000000 } from './1763790000000-task-message-id.js';
import { MemoryConversations1763800000000 } from './1763800000000-memory-conversations.js';
import { TaskInputs1763810000000 } from './1763810000000-task-inputs.js';
import { PushConfigs1763820000000 } from './1763820000000-push-configs.js';
import { Quotas1763830000000 } from './1763830000000-quotas.js';
import { TaskFiles1763840000000 } from './1763840000000-task-files.js';
import { TaskContentBytes1763850000000 } from './1763850000000-task-content-bytes.js';
import { TaskMessageHash1763860000000 } from './1763860000000-task-message-hash.js';
import { TenantRunning1763870000000 } from './1763870000000-tenant-running.js';
import { RateGrants1763880000000 } from './1763880000000-rate-grants.js';
import { Identity1763890000000 } from './1763890000000-identity.js';
import { PushSecrets1763900000000 } from './1763900000000-push-secrets.js';
import { TenantRegistries1763910000000 } from './1763910000000-tenant-registries.js';
import { Usage1763920000000 } from './1763920000000-usage.js';
import { Budgets1763930000000 } from './1763930000000-budgets.js';
import { Stats1763940000000 } from './1763940000000-stats.js';
import { RequestBudgets1763960000000 } from './1763960000000-request-budgets.js';
import { TaskEventsCascade1763970000000 } from './1763970000000-task-events-cascade.js';

/** Every migration, oldest first. Never edit one that has been committed; add a new one. */
export const MIGRATIONS = [
  Initial1763771000000,
  Tasks1763780000000,
  TaskMessageId1763790000000,
  MemoryConversations1763800000000,
  TaskInputs1763810000000,
  PushConfigs1763820000000,
  Quotas1763830000000,
  TaskFiles1763840000000,
  TaskContentBytes1763850000000,
  TaskMessageHash1763860000000,
  TenantRunning1763870000000,
  RateGrants1763880000000,
  Identity1763890000000,
  PushSecrets1763900000000,
  TenantRegistries1763910000000,
  Usage1763920000000,
  Budgets1763930000000,
  Stats1763940000000,
  RequestBudgets1763960000000,
  TaskEventsCascade1763970000000,
];
