import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { Operation } from '../../a2a-wire/dialects/dialect.js';
import { isObject, type Json } from '../../a2a-wire/dialects/params.js';
import { readProtoNames, spellingsOf } from '../../a2a-wire/dialects/proto-names.js';

/** A route of the HTTP+JSON binding under an agent's URL (spec §11.3, §5.3), matched to its operation. */
export type RouteMatch =
  /** `tenant`: the path's `/{tenant}/…` prefix (a2a.proto's additional bindings), decoded. */
  | { kind: 'route'; op: Operation; taskId?: string; configId?: string; tenant?: string }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allow: string[] };

/** Operations whose answer is an SSE stream (§11.7). */
export const STREAMING_OPS: ReadonlySet<Operation> = new Set(['stream', 'subscribe']);

const ROUTES: { pattern: RegExp; methods: Readonly<Record<string, Operation>> }[] = [
  { pattern: /^message:send$/, methods: { POST: 'send' } },
  { pattern: /^message:stream$/, methods: { POST: 'stream' } },
  { pattern: /^tasks$/, methods: { GET: 'list' } },
  { pattern: /^tasks\/([^/]+):cancel$/, methods: { POST: 'cancel' } },
  // POST in the specification's prose (§11.3.2), GET in a2a.proto's HTTP annotation (which the proto calls
  // normative, and which transcoding gateways generate from): both are served, as the SDK's server does.
  { pattern: /^tasks\/([^/]+):subscribe$/, methods: { POST: 'subscribe', GET: 'subscribe' } },
  { pattern: /^tasks\/([^/]+)$/, methods: { GET: 'get' } },
  // §11.3.3: the push-config routes. They are matched here and answered by the request handler's push
  // operations (the same ones JSON-RPC's CreateTaskPushNotificationConfig … reach); see `restParams`.
  { pattern: /^tasks\/([^/]+)\/pushNotificationConfigs$/, methods: { POST: 'push_set', GET: 'push_list' } },
  {
    pattern: /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/,
    methods: { GET: 'push_get', DELETE: 'push_delete' },
  },
  { pattern: /^extendedAgentCard$/, methods: { GET: 'extended_card' } },
];

function decode(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * `path` is what follows `/v1/a2a/agents/:id/`, still percent-encoded (so
 * an id holding an encoded `/` or `:` stays one segment). Pure.
 *
 * Every route may also come after a `/{tenant}` segment (a2a.proto's
 * `additional_bindings`: `/{tenant}/message:send`, `/{tenant}/tasks/{id}` …),
 * as the SDK's REST client sends it when the card's interface names a
 * tenant. Which reading wins where both would match (`tasks/tasks` is
 * GetTask of `tasks`, or ListTasks for a tenant `tasks`): the prefixed one
 * when the prefix is the agent's own id `agentId` (what its card declares),
 * else the path as it is; a prefix naming anything else is still matched,
 * so that the call can answer it like a missing agent.
 */
export function matchRoute(method: string, path: string, agentId?: string): RouteMatch {
  const slash = path.indexOf('/');
  const prefixed = (): RouteMatch => {
    const tenant = slash > 0 ? decode(path.slice(0, slash)) : undefined;
    const m = tenant ? matchPlain(method, path.slice(slash + 1)) : { kind: 'not_found' as const };
    return m.kind === 'route' ? { ...m, tenant } : m;
  };
  if (agentId !== undefined && slash > 0 && decode(path.slice(0, slash)) === agentId) {
    const own = prefixed();
    if (own.kind !== 'not_found') return own;
  }
  const plain = matchPlain(method, path);
  return plain.kind === 'not_found' ? prefixed() : plain;
}

/** A route without a tenant prefix. */
function matchPlain(method: string, path: string): RouteMatch {
  for (const route of ROUTES) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    const op = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
    if (!op) return { kind: 'method_not_allowed', allow: Object.keys(route.methods) };
    const [taskId, configId] = [decode(m[1]), decode(m[2])];
    if ((m[1] !== undefined && !taskId) || (m[2] !== undefined && !configId)) return { kind: 'not_found' };
    return { kind: 'route', op, ...(taskId ? { taskId } : {}), ...(configId ? { configId } : {}) };
  }
  return { kind: 'not_found' };
}

type Query = Record<string, unknown>;

/** The request message whose fields a GET's query carries, per operation (`a2a.proto`). */
export const QUERY_TYPES: Partial<Record<Operation, string>> = {
  get: 'GetTaskRequest',
  list: 'ListTasksRequest',
  subscribe: 'SubscribeToTaskRequest',
  push_get: 'GetTaskPushNotificationConfigRequest',
  push_list: 'ListTaskPushNotificationConfigsRequest',
  push_delete: 'DeleteTaskPushNotificationConfigRequest',
  extended_card: 'GetExtendedAgentCardRequest',
};

/**
 * A query value as the dialects' readers take it (§11.5): numbers and
 * booleans arrive as strings; an empty value is absent; a repeated
 * parameter stays an array, which every reader refuses by name.
 */
function q(query: Query, name: string, kind: 'string' | 'int' | 'bool' = 'string'): unknown {
  const v = query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') return v;
  if (kind === 'int' && /^-?\d{1,12}$/.test(v)) return Number(v);
  if (kind === 'bool' && (v === 'true' || v === 'false')) return v === 'true';
  return v;
}

/**
 * The query of a GET as its request message's fields (§11.5): each by its
 * JSON name or its proto name (`pageSize` or `page_size`, as ProtoJSON reads
 * a body; PocketPaw sends `history_length`); both names of one field is an
 * error naming it. Query names are the binding's, so this holds in both
 * dialects.
 */
function queryOf(query: Query, type: string | undefined): Query {
  if (!type) return query;
  // An empty value is an absent one (see `q`), also when the other name is given.
  return readProtoNames(type, Object.fromEntries(Object.entries(query).filter(([, v]) => v !== '')), 'params');
}

/** A body with the path's fields set: the path wins over the body, under either of the field's names. */
function withPath(body: Json, type: string, path: Json): Json {
  const drop = new Set(Object.keys(path).flatMap((k) => spellingsOf(type, k)));
  return { ...Object.fromEntries(Object.entries(body).filter(([k]) => !drop.has(k))), ...path };
}

function bodyObject(body: unknown, required: boolean): Json {
  if (body === undefined || body === null) {
    if (required) throw A2aError.invalidParams('body', 'is required: a JSON object');
    return {};
  }
  if (!isObject(body)) throw A2aError.invalidParams('body', 'must be a JSON object');
  return body;
}

/**
 * The operation's request object (the same one JSON-RPC carries in
 * `params`), from the path, the query (GET) or the body (POST). Fields of
 * the path win over the body's. Unknown query parameters are ignored, like
 * unknown fields (§5.7). `version` is the dialect that reads it: v0.3's
 * push-config params name the task `id` and the config
 * `pushNotificationConfigId` (v0.3 §7.6.1–7.8.1), v1.0's `taskId` and `id`.
 */
export function restParams(
  route: Extract<RouteMatch, { kind: 'route' }>,
  raw: Query,
  body: unknown,
  version: '1.0' | '0.3' = '1.0',
): Json {
  const query = queryOf(raw, QUERY_TYPES[route.op]);
  const tenant = q(query, 'tenant');
  const withTenant = (p: Json): Json => (tenant === undefined ? p : { tenant, ...p });
  switch (route.op) {
    case 'send':
    case 'stream':
      return bodyObject(body, true);
    case 'get':
      return withTenant({ id: route.taskId, historyLength: q(query, 'historyLength', 'int') });
    case 'list':
      return withTenant({
        contextId: q(query, 'contextId'),
        status: q(query, 'status'),
        pageSize: q(query, 'pageSize', 'int'),
        pageToken: q(query, 'pageToken'),
        historyLength: q(query, 'historyLength', 'int'),
        statusTimestampAfter: q(query, 'statusTimestampAfter'),
        includeArtifacts: q(query, 'includeArtifacts', 'bool'),
      });
    case 'cancel':
      return withPath(bodyObject(body, false), 'CancelTaskRequest', { id: route.taskId });
    case 'subscribe':
      return withTenant({ id: route.taskId });
    case 'push_set':
      return withPath(bodyObject(body, true), 'TaskPushNotificationConfig', { taskId: route.taskId });
    case 'push_get':
    case 'push_delete':
      if (version === '0.3') return { id: route.taskId, pushNotificationConfigId: route.configId };
      return withTenant({ taskId: route.taskId, id: route.configId });
    case 'push_list':
      if (version === '0.3') return { id: route.taskId };
      return withTenant({
        taskId: route.taskId,
        pageSize: q(query, 'pageSize', 'int'),
        pageToken: q(query, 'pageToken'),
      });
    case 'extended_card':
      return withTenant({});
    default: {
      const unreachable: never = route.op;
      return unreachable;
    }
  }
}

/** The routes above as OpenAPI paths under an agent's URL (`{taskId}` a task id, `{configId}` a push config id). */
export const REST_ROUTE_PATHS: readonly { path: string; method: 'GET' | 'POST' | 'DELETE'; op: Operation }[] = [
  { path: 'message:send', method: 'POST', op: 'send' },
  { path: 'message:stream', method: 'POST', op: 'stream' },
  { path: 'tasks', method: 'GET', op: 'list' },
  { path: 'tasks/{taskId}', method: 'GET', op: 'get' },
  { path: 'tasks/{taskId}:cancel', method: 'POST', op: 'cancel' },
  { path: 'tasks/{taskId}:subscribe', method: 'POST', op: 'subscribe' },
  { path: 'tasks/{taskId}:subscribe', method: 'GET', op: 'subscribe' },
  { path: 'tasks/{taskId}/pushNotificationConfigs', method: 'POST', op: 'push_set' },
  { path: 'tasks/{taskId}/pushNotificationConfigs', method: 'GET', op: 'push_list' },
  { path: 'tasks/{taskId}/pushNotificationConfigs/{configId}', method: 'GET', op: 'push_get' },
  { path: 'tasks/{taskId}/pushNotificationConfigs/{configId}', method: 'DELETE', op: 'push_delete' },
  { path: 'extendedAgentCard', method: 'GET', op: 'extended_card' },
];
