// Which A2A binding an HTTP request is for, read from its target alone (no framework routing): the JSON-RPC
// endpoint at an agent's URL, the HTTP+JSON routes under it, or neither (the routes Nest serves).

/** The route template of the HTTP+JSON binding, for metrics and traces (as Express named it). */
export const REST_ROUTE = '/v1/a2a/agents/:id/*path';

const PREFIX = '/v1/a2a/agents/';
/** Paths under an agent's URL that are its card (served by Nest's card controller), lower case. */
const CARD_PATHS = new Set(['agent-card.json', '.well-known/agent-card.json', '.well-known/agent.json']);

/** A request of the A2A bindings, by the path: the agent's id (still encoded), and the rest for HTTP+JSON. */
export type Target = { kind: 'jsonrpc'; agent: string } | { kind: 'rest'; agent: string; sub: string };

/**
 * Which binding a request is for, or undefined for the routes Nest serves.
 * Like Express's routing here: the prefix is matched without regard to case,
 * a trailing slash after the agent's id is the JSON-RPC endpoint still, and
 * a card's path (with or without a trailing slash) goes to Nest's card route
 * for GET and HEAD — any other method on it is an HTTP+JSON request (a 401,
 * or §11.6's 404 for a route that does not exist).
 */
export function a2aTarget(path: string, method = 'GET'): Target | undefined {
  if (path.length <= PREFIX.length || path.slice(0, PREFIX.length).toLowerCase() !== PREFIX) return undefined;
  const slash = path.indexOf('/', PREFIX.length);
  const agent = path.slice(PREFIX.length, slash === -1 ? undefined : slash);
  if (agent === '') return undefined;
  if (slash === -1 || slash === path.length - 1) return { kind: 'jsonrpc', agent };
  const sub = path.slice(slash + 1);
  const card = (sub.endsWith('/') ? sub.slice(0, -1) : sub).toLowerCase();
  if (CARD_PATHS.has(card) && (method === 'GET' || method === 'HEAD')) return undefined;
  return { kind: 'rest', agent, sub };
}

/**
 * A request target's path and query, as Express reads it: an absolute-form
 * target (`http://host/path`, RFC 9112 §3.2.2) is taken by its path, and a
 * `#fragment` a client sent is dropped.
 */
export function splitTarget(url: string): { path: string; search: string } {
  let target = url;
  const hash = target.indexOf('#');
  if (hash !== -1) target = target.slice(0, hash);
  if (target[0] !== '/') {
    try {
      const u = new URL(target);
      return { path: u.pathname, search: u.search.slice(1) };
    } catch {
      return { path: target, search: '' };
    }
  }
  const q = target.indexOf('?');
  return q === -1 ? { path: target, search: '' } : { path: target.slice(0, q), search: target.slice(q + 1) };
}

/** Decodes a path segment; null when its percent-encoding is malformed. */
export function decodeSegment(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
