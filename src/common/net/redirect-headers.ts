/**
 * The headers a request keeps on a redirect to another origin: those that say what it is and what it accepts.
 * Every other is dropped — `Authorization` and cookies, and also whatever a caller added for the first origin: a
 * credential of the `header` type, an MCP server's `headers`, a session id — since which of those are secret is
 * the caller's knowledge, not this module's.
 */
const PLAIN_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-type',
  'user-agent',
  'a2a-version',
  'a2a-extensions',
  'x-a2a-extensions',
  'mcp-protocol-version',
  'last-event-id',
]);

export function forAnotherOrigin(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => PLAIN_HEADERS.has(k.toLowerCase())));
}
