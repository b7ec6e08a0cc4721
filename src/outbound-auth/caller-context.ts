import { AsyncLocalStorage } from 'node:async_hooks';
import type { SubjectToken } from '../common/subject-token.js';

/**
 * On whose behalf outbound calls are made: the inbound caller's JWT, for credentials that exchange it. The
 * clients that make those calls (the A2A SDK's, the MCP SDK's) are shared and call our `fetch` with nothing of
 * ours, so the caller travels with the async context of the run instead of through their arguments.
 */
const caller = new AsyncLocalStorage<SubjectToken | undefined>();

/**
 * Runs `fn` (and everything it starts) on behalf of `subject` (none: on behalf of no JWT caller). With no
 * subject and none in effect it just calls `fn`: entering an `AsyncLocalStorage` switches on Node's promise
 * hooks for every promise in the process from then on, a cost no caller without a JWT should bring about.
 */
export function onBehalfOf<T>(subject: SubjectToken | undefined, fn: () => T): T {
  if (subject === undefined && caller.getStore() === undefined) return fn();
  return caller.run(subject, fn);
}

/** The JWT of the caller the current outbound call is made for, if any. */
export function currentSubject(): SubjectToken | undefined {
  return caller.getStore();
}
