import { AsyncLocalStorage } from 'node:async_hooks';
import type { SubjectToken } from '../common/subject-token.js';

/**
 * On whose behalf outbound calls are made: the inbound caller's JWT, for credentials that exchange it. The
 * clients that make those calls (the A2A SDK's, the MCP SDK's) are shared and call our `fetch` with nothing of
 * ours, so the caller travels with the async context of the run instead of through their arguments.
 */
const caller = new AsyncLocalStorage<SubjectToken | undefined>();

/** Runs `fn` (and everything it starts) on behalf of `subject` (none: on behalf of no JWT caller). */
export function onBehalfOf<T>(subject: SubjectToken | undefined, fn: () => T): T {
  return caller.run(subject, fn);
}

/** The JWT of the caller the current outbound call is made for, if any. */
export function currentSubject(): SubjectToken | undefined {
  return caller.getStore();
}
