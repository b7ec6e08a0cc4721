import { DomainError } from '../common/errors.js';
import { RegistryFileError } from '../common/registry-file/registry-fields.js';
import { EgressError } from '../common/net/egress.js';

/**
 * A registry problem found in an API body, as a 400 naming the field. The registry's messages start with the
 * path of the bad field under `at` (`entry.auth.token_env: …`); the field is that path without it.
 */
export function entryProblem(err: unknown, at: string): unknown {
  if (!(err instanceof RegistryFileError)) return err;
  if (err.message.startsWith(`${at}: `)) {
    return DomainError.validation([{ field: 'body', messages: [err.message.slice(at.length + 2)] }]);
  }
  const message = err.message.startsWith(`${at}.`) ? err.message.slice(at.length + 1) : err.message;
  const field = /^[A-Za-z0-9_.-]+/.exec(message)?.[0]?.replace(/\.$/, '') ?? 'body';
  return DomainError.validation([{ field, messages: [message] }]);
}

/**
 * A URL the egress guard refuses as it stands (a literal loopback, private or metadata address the operator has
 * not allowed), as a 400 naming the field and the setting that would allow it. A name is judged where it
 * resolves, on every request.
 */
export function urlProblem(err: unknown, field: string, setting: string): unknown {
  if (!(err instanceof EgressError)) return err;
  const hint = err.code === 'blocked' ? ` (the operator allows private addresses with ${setting})` : '';
  return DomainError.validation([{ field, messages: [`${field}: ${err.message}${hint}`] }]);
}
