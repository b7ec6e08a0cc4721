/**
 * The headers a request keeps on a redirect to another origin: those that say what it is and what it accepts.
 * Every other is dropped — `Authorization` and cookies, and also whatever a caller added for the first origin: a
 * credential of the `header` type, an MCP server's `headers` — since which of those are secret is the caller's
 * knowledge, not this module's. An MCP session id goes on: the server a request is moved to is the one that issued
 * it (the SDK sends every request to the first URL, and each is moved), and it is no credential (the MCP
 * specification forbids using it as one).
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
  'mcp-session-id',
  'last-event-id',
]);

export function forAnotherOrigin(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => PLAIN_HEADERS.has(k.toLowerCase())));
}
