import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, ModulesContainer } from '@nestjs/core';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import {
  ACCESS_KEY,
  SCOPES_KEY,
  TENANT_SCOPES,
  type Access,
  type TenantScope,
} from '../../src/common/auth.decorators.js';
import { OPERATION_SCOPES } from '../../src/a2a-inbound/handler/a2a-call.js';
import { A2A_PACKAGE, A2A_ROOT, A2A_SERVICE } from '../../src/a2a-inbound/grpc/grpc-codec.js';
import { matchRoute, REST_ROUTE_PATHS } from '../../src/a2a-inbound/rest/rest-routes.js';
import { V03, V1 } from '../../src/a2a-wire/dialects/dialects.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Every route, every binding: who may call it. The Nest routes are read
 * from the running application (its controllers' metadata, checked against
 * what Express serves), the A2A methods from the dialects' method tables,
 * the HTTP+JSON routes from their route table and the gRPC methods from
 * `a2a.proto`'s service. Each must be in the tables below with what it
 * declares — so a new route without a scope (or with one nobody decided
 * on) fails here — and then every credential is tried on every route: a
 * token holding one scope gets through exactly where that scope is
 * accepted, else a 403 naming the scopes that are; operators get the admin
 * routes (auditors: reads only) and no tenant route; tenants no admin route.
 *
 * Only the access decision is under test: it comes before the body is
 * read, so each call carries an empty or dummy body, ids that do not exist,
 * and an allowed call is one answered neither 401 nor 403.
 */

/** What a route accepts: a kind of credential, or (a tenant route) the scopes of which any one suffices. */
type Expected = 'public' | 'any' | 'scrape' | 'admin' | readonly TenantScope[];

const INVOKE = ['a2a:invoke'] as const;
const TASKS = ['a2a:invoke', 'tasks:read'] as const;
const AGENTS_READ = ['agents:read', 'agents:write'] as const;
const AGENTS_WRITE = ['agents:write'] as const;
const CARD = ['a2a:invoke', 'agents:read', 'agents:write', 'tasks:read'] as const;
const USAGE = ['tasks:read', 'agents:read', 'agents:write'] as const;
const STATS = ['tasks:read'] as const;

/** The Nest routes (`METHOD /path` as Express has it). */
const ROUTES: Readonly<Record<string, Expected>> = {
  'GET /v1/health': 'public',
  'GET /v1/health/ready': 'public',
  'GET /.well-known/agent-card.json': 'public',
  'GET /.well-known/jwks.json': 'public',
  'GET /v1/me': 'any',
  'GET /metrics': 'scrape',

  'POST /v1/agents': AGENTS_WRITE,
  'GET /v1/agents': AGENTS_READ,
  'GET /v1/agents/:id': AGENTS_READ,
  'PATCH /v1/agents/:id': AGENTS_WRITE,
  'DELETE /v1/agents/:id': AGENTS_WRITE,
  'GET /v1/models': AGENTS_READ,
  'POST /v1/remote-agents': AGENTS_WRITE,
  'GET /v1/remote-agents': AGENTS_READ,
  'GET /v1/remote-agents/:name': AGENTS_READ,
  'PATCH /v1/remote-agents/:name': AGENTS_WRITE,
  'DELETE /v1/remote-agents/:name': AGENTS_WRITE,
  'POST /v1/mcp-servers': AGENTS_WRITE,
  'GET /v1/mcp-servers': AGENTS_READ,
  'GET /v1/mcp-servers/:name': AGENTS_READ,
  'PATCH /v1/mcp-servers/:name': AGENTS_WRITE,
  'DELETE /v1/mcp-servers/:name': AGENTS_WRITE,
  'GET /v1/a2a/agents/:id/agent-card.json': CARD,
  'GET /v1/a2a/agents/:id/.well-known/agent-card.json': CARD,
  'GET /v1/a2a/agents/:id/.well-known/agent.json': CARD,

  'POST /v1/orchestrate': INVOKE,
  'POST /v1/agents/:id/chat': INVOKE,
  'POST /v1/conversations': INVOKE,
  'GET /v1/conversations': TASKS,
  'GET /v1/conversations/:id': TASKS,
  'PATCH /v1/conversations/:id': INVOKE,
  'DELETE /v1/conversations/:id': INVOKE,
  'GET /v1/conversations/:id/messages': TASKS,
  'POST /v1/conversations/:id/messages': INVOKE,
  'GET /v1/requests': TASKS,
  'GET /v1/requests/:id': TASKS,
  'POST /v1/requests/:id/cancel': INVOKE,
  'GET /v1/requests/:id/events': TASKS,
  'GET /v1/requests/:id/push-configs': TASKS,
  'GET /v1/usage': USAGE,
  'GET /v1/budgets': USAGE,
  'PUT /v1/agents/:id/budget': AGENTS_WRITE,
  'DELETE /v1/agents/:id/budget': AGENTS_WRITE,
  'GET /v1/stats': STATS,

  'POST /v1/admin/tenants': 'admin',
  'GET /v1/admin/tenants': 'admin',
  'GET /v1/admin/tenants/:id': 'admin',
  'PATCH /v1/admin/tenants/:id': 'admin',
  'PATCH /v1/admin/tenants/:id/limits': 'admin',
  'GET /v1/admin/tenants/:id/tokens': 'admin',
  'POST /v1/admin/tenants/:id/tokens/rotate': 'admin',
  'POST /v1/admin/tenants/:id/tokens': 'admin',
  'DELETE /v1/admin/tenants/:id/tokens/:tokenId': 'admin',
  'GET /v1/admin/audit': 'admin',
  'GET /v1/admin/usage': 'admin',
  'GET /v1/admin/budgets': 'admin',
  'GET /v1/admin/stats': 'admin',
  'POST /v1/admin/tasks/:id/cancel': 'admin',
  'GET /v1/admin/registries/a2a-agents': 'admin',
  'GET /v1/admin/registries/mcp-servers': 'admin',
  'POST /v1/admin/issuers': 'admin',
  'GET /v1/admin/issuers': 'admin',
  'GET /v1/admin/issuers/:id': 'admin',
  'PATCH /v1/admin/issuers/:id': 'admin',
  'DELETE /v1/admin/issuers/:id': 'admin',
  'POST /v1/admin/operators': 'admin',
  'GET /v1/admin/operators': 'admin',
  'DELETE /v1/admin/operators/:id': 'admin',
};

/** Routes Express serves that are no Nest controller's: the API description (no token, no secret in it). */
const OUTSIDE_NEST = /^GET \/(docs|openapi\.(json|yaml))\b/;

/** The JSON-RPC methods of both dialects (one endpoint per agent, `POST /v1/a2a/agents/:id`). */
const JSONRPC_METHODS: Readonly<Record<string, readonly TenantScope[]>> = {
  SendMessage: INVOKE,
  SendStreamingMessage: INVOKE,
  GetTask: INVOKE,
  ListTasks: INVOKE,
  CancelTask: INVOKE,
  SubscribeToTask: INVOKE,
  CreateTaskPushNotificationConfig: INVOKE,
  GetTaskPushNotificationConfig: INVOKE,
  ListTaskPushNotificationConfigs: INVOKE,
  DeleteTaskPushNotificationConfig: INVOKE,
  GetExtendedAgentCard: CARD,
  'message/send': INVOKE,
  'message/stream': INVOKE,
  'tasks/send': INVOKE,
  'tasks/sendSubscribe': INVOKE,
  'tasks/get': INVOKE,
  'tasks/list': INVOKE,
  'tasks/cancel': INVOKE,
  'tasks/resubscribe': INVOKE,
  'tasks/pushNotificationConfig/set': INVOKE,
  'tasks/pushNotificationConfig/get': INVOKE,
  'tasks/pushNotificationConfig/list': INVOKE,
  'tasks/pushNotificationConfig/delete': INVOKE,
  'agent/getAuthenticatedExtendedCard': CARD,
};

/** The HTTP+JSON routes under an agent's URL. */
const REST_ROUTES: Readonly<Record<string, readonly TenantScope[]>> = {
  'POST message:send': INVOKE,
  'POST message:stream': INVOKE,
  'GET tasks': INVOKE,
  'GET tasks/{taskId}': INVOKE,
  'POST tasks/{taskId}:cancel': INVOKE,
  'POST tasks/{taskId}:subscribe': INVOKE,
  'GET tasks/{taskId}:subscribe': INVOKE,
  'POST tasks/{taskId}/pushNotificationConfigs': INVOKE,
  'GET tasks/{taskId}/pushNotificationConfigs': INVOKE,
  'GET tasks/{taskId}/pushNotificationConfigs/{configId}': INVOKE,
  'DELETE tasks/{taskId}/pushNotificationConfigs/{configId}': INVOKE,
  'GET extendedAgentCard': CARD,
};

/** The gRPC methods of `lf.a2a.v1.A2AService`. */
const GRPC_METHODS: Readonly<Record<string, readonly TenantScope[]>> = {
  SendMessage: INVOKE,
  SendStreamingMessage: INVOKE,
  GetTask: INVOKE,
  ListTasks: INVOKE,
  CancelTask: INVOKE,
  SubscribeToTask: INVOKE,
  CreateTaskPushNotificationConfig: INVOKE,
  GetTaskPushNotificationConfig: INVOKE,
  ListTaskPushNotificationConfigs: INVOKE,
  DeleteTaskPushNotificationConfig: INVOKE,
  GetExtendedAgentCard: CARD,
};

/** A Nest route as read from its controller: what it declares. */
interface DiscoveredRoute {
  key: string;
  handler: string;
  access: Access | undefined;
  scopes: readonly TenantScope[] | undefined;
}

const join = (...parts: string[]): string =>
  `/${parts
    .join('/')
    .split('/')
    .filter((s) => s !== '')
    .join('/')}`;

/** Every route of every controller of the running application, with the access metadata the guard reads. */
function nestRoutes(server: TestServer): DiscoveredRoute[] {
  const app = server.running.app;
  const discovery = new DiscoveryService(app.get(ModulesContainer));
  const out: DiscoveredRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const type = wrapper.metatype as (new (...args: unknown[]) => object) | null;
    if (!type) continue;
    const prefixes = [(Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined) ?? '/'].flat();
    const proto = type.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const fn = proto[name];
      if (name === 'constructor' || typeof fn !== 'function') continue;
      const paths = Reflect.getMetadata(PATH_METADATA, fn) as string | string[] | undefined;
      if (paths === undefined) continue; // not an HTTP handler (gRPC methods are checked from the proto)
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, fn) as RequestMethod];
      const access = (Reflect.getMetadata(ACCESS_KEY, fn) ?? Reflect.getMetadata(ACCESS_KEY, type)) as
        Access | undefined;
      const scopes = (Reflect.getMetadata(SCOPES_KEY, fn) ?? Reflect.getMetadata(SCOPES_KEY, type)) as
        TenantScope[] | undefined;
      for (const prefix of prefixes) {
        for (const path of [paths].flat()) {
          out.push({ key: `${method} ${join(prefix, path)}`, handler: `${type.name}.${name}`, access, scopes });
        }
      }
    }
  }
  return out;
}

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
}

/** Every (method, path) the Express router serves. */
function expressRoutes(server: TestServer): Set<string> {
  const express = server.running.app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  const out = new Set<string>();
  for (const layer of express.router.stack) {
    if (!layer.route) continue;
    for (const path of [layer.route.path].flat()) {
      for (const [method, on] of Object.entries(layer.route.methods)) {
        if (on && method !== '_all') out.add(`${method.toUpperCase()} ${path}`);
      }
    }
  }
  return out;
}

/** What a route declares, in the tables' terms ("none" for a tenant route without a scope: refused to everyone). */
function declared(r: DiscoveredRoute): Expected | 'none' {
  const access = r.access ?? 'tenant';
  if (access !== 'tenant') return access;
  return r.scopes?.length ? [...r.scopes].sort() : 'none';
}

const sorted = (e: Expected): Expected => (typeof e === 'string' ? e : [...e].sort());
const isTenantRoute = (e: Expected): e is readonly TenantScope[] => typeof e !== 'string';

/** A placeholder for every path parameter: no such thing exists, so an allowed call changes nothing. */
const fill = (path: string): string =>
  path.replace(/\/:[A-Za-z]+/g, '/00000000-0000-4000-8000-000000000000').replace(/\{[A-Za-z]+\}/g, 'no-such-id');

/** One call; the body is read only when the answer is a refusal (an allowed call may be a stream). */
async function call(
  url: string,
  method: string,
  token: string | undefined,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body?: any; challenge: string | null }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (token) headers.authorization = `Bearer ${token}`;
  const withBody = opts.body !== undefined || method === 'POST' || method === 'PATCH';
  if (withBody) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method, headers, body: withBody ? JSON.stringify(opts.body ?? {}) : undefined });
  const challenge = res.headers.get('www-authenticate');
  if (res.status === 401 || res.status === 403 || opts.body !== undefined) {
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, challenge };
  }
  await res.body?.cancel();
  return { status: res.status, challenge };
}

/** Let through: the route's own answer (a 400 for the empty body, a 404 for the made-up id …), never a refusal or a crash. */
const allowed = (status: number): boolean => status !== 401 && status !== 403 && status < 500;

const challengeFor = (scopes: readonly string[]): string =>
  `Bearer realm="arbiter", error="insufficient_scope", scope="${scopes.join(' ')}"`;

/** googleapis' `google.rpc.Status` and `ErrorInfo`, to read the gRPC status details trailer. */
const RPC = protobuf.parse(`
syntax = "proto3";
package google.rpc;
message Any { string type_url = 1; bytes value = 2; }
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
message ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
`).root;

/** The `ErrorInfo` of a gRPC error's status details, if any. */
function errorInfo(err: grpc.ServiceError): { reason: string; metadata?: Record<string, string> } | undefined {
  const bin = err.metadata?.get('grpc-status-details-bin')[0];
  if (!Buffer.isBuffer(bin)) return undefined;
  const Status = RPC.lookupType('google.rpc.Status');
  const Info = RPC.lookupType('google.rpc.ErrorInfo');
  const status = Status.toObject(Status.decode(bin)) as { details?: { typeUrl: string; value: Uint8Array }[] };
  const info = status.details?.find((d) => d.typeUrl.endsWith('/google.rpc.ErrorInfo'));
  return info ? (Info.toObject(Info.decode(info.value)) as { reason: string }) : undefined;
}

type GrpcClient = Record<string, (req: object, md: grpc.Metadata, cb?: (err: grpc.ServiceError | null) => void) => any>;

/** A gRPC call's outcome: OK (0) or the error's code and `ErrorInfo`. */
function grpcCall(
  client: GrpcClient,
  method: string,
  streaming: boolean,
  token: string,
): Promise<{ code: number; info?: ReturnType<typeof errorInfo> }> {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  md.set('a2a-version', '1.0');
  // The agent is the request's `tenant`; nothing else is filled in (an allowed call is refused for its params).
  const req = { tenant: 'index' };
  return new Promise((resolve) => {
    const done = (err: grpc.ServiceError | null): void =>
      resolve(err ? { code: err.code, info: errorInfo(err) } : { code: grpc.status.OK });
    if (!streaming) {
      client[method](req, md, done);
      return;
    }
    const stream = client[method](req, md) as grpc.ClientReadableStream<unknown>;
    stream.on('data', () => undefined);
    stream.on('error', done);
    stream.on('end', () => done(null));
  });
}

describe('every route declares who may call it, and the guard holds every credential to it', () => {
  let server: TestServer;
  /** A token per tenant scope, holding that scope only; and one holding every scope. */
  const only = {} as Record<TenantScope, string>;
  let all: string;
  let auditor: string;
  let operator: string;
  let routes: DiscoveredRoute[];

  before(async () => {
    server = await startTestServer({ env: { ...GRPC_ON } });
    const created = await server.admin.post('/v1/admin/tenants', { name: 'route-scopes' });
    assert.equal(created.status, 201, created.text);
    all = created.body.token.token;
    const tenant = created.body.tenant.id as string;
    for (const scope of TENANT_SCOPES) {
      const issued = await server.admin.post(`/v1/admin/tenants/${tenant}/tokens`, { scopes: [scope] });
      assert.equal(issued.status, 201, issued.text);
      assert.deepEqual(issued.body.scopes, [scope]);
      only[scope] = issued.body.token;
    }
    for (const role of ['auditor', 'admin'] as const) {
      const op = await server.admin.post('/v1/admin/operators', { name: `route-scopes-${role}`, role });
      assert.equal(op.status, 201, op.text);
      if (role === 'auditor') auditor = op.body.token;
      else operator = op.body.token;
    }
    routes = nestRoutes(server);
  });
  after(() => server?.close());

  const url = (path: string): string => `${server.url}${path}`;

  describe('the tables', () => {
    it('every Nest route is in the table with what it declares, and nothing in the table is gone', () => {
      assert.ok(routes.length >= Object.keys(ROUTES).length - 5, `found ${routes.length} routes`);
      const problems: string[] = [];
      const seen = new Set<string>();
      for (const r of routes) {
        seen.add(r.key);
        const expected = ROUTES[r.key];
        const has = declared(r);
        if (has === 'none') problems.push(`${r.key} (${r.handler}) is a tenant route that declares no scope`);
        else if (!expected) problems.push(`${r.key} (${r.handler}) is not in the table: it declares ${String(has)}`);
        else assert.deepEqual(has, sorted(expected), `${r.key} (${r.handler})`);
      }
      for (const key of Object.keys(ROUTES)) if (!seen.has(key)) problems.push(`${key} is no route any more`);
      assert.deepEqual(problems, []);
    });

    it('Express serves the Nest routes and nothing else but the API description', () => {
      const nest = new Set(routes.map((r) => r.key));
      const served = expressRoutes(server);
      assert.deepEqual(
        [...served].filter((r) => !nest.has(r) && !OUTSIDE_NEST.test(r)),
        [],
        'served outside any controller',
      );
      assert.deepEqual(
        [...nest].filter((r) => !served.has(r)),
        [],
        'declared but not served',
      );
    });

    it('every JSON-RPC method of both dialects, every HTTP+JSON route and every gRPC method is in its table', () => {
      const methods = { ...V1.methods, ...V03.methods };
      assert.deepEqual(Object.keys(methods).sort(), Object.keys(JSONRPC_METHODS).sort());
      for (const [name, op] of Object.entries(methods)) {
        assert.deepEqual([...OPERATION_SCOPES[op]].sort(), sorted(JSONRPC_METHODS[name]), name);
      }
      assert.deepEqual(REST_ROUTE_PATHS.map((r) => `${r.method} ${r.path}`).sort(), Object.keys(REST_ROUTES).sort());
      for (const r of REST_ROUTE_PATHS) {
        // The route table the binding serves by agrees with the documented paths.
        const match = matchRoute(r.method, fill(r.path));
        assert.deepEqual(match.kind === 'route' ? match.op : match, r.op, `${r.method} ${r.path}`);
        assert.deepEqual([...OPERATION_SCOPES[r.op]].sort(), sorted(REST_ROUTES[`${r.method} ${r.path}`]));
      }
      const service = A2A_ROOT.lookupService(`${A2A_PACKAGE}.${A2A_SERVICE}`);
      assert.deepEqual(service.methodsArray.map((m) => m.name).sort(), Object.keys(GRPC_METHODS).sort());
      for (const m of service.methodsArray) {
        assert.ok(Object.hasOwn(V1.methods, m.name), `${m.name}: an operation of the v1.0 dialect`);
        assert.deepEqual([...OPERATION_SCOPES[V1.methods[m.name]]].sort(), sorted(GRPC_METHODS[m.name]), m.name);
      }
    });
  });

  describe('the Nest routes', () => {
    const entries = () =>
      routes.map((r) => ({ ...r, expected: ROUTES[r.key] })).filter((r) => r.expected !== undefined);

    it('tenant routes: a one-scope token gets through iff its scope is accepted, else a 403 naming the scopes', async () => {
      const tenantRoutes = entries().filter((r) => isTenantRoute(r.expected));
      assert.ok(tenantRoutes.length > 15);
      for (const r of tenantRoutes) {
        const [method, path] = r.key.split(' ');
        const accepted = r.expected as readonly TenantScope[];
        for (const scope of TENANT_SCOPES) {
          const res = await call(url(fill(path)), method, only[scope]);
          const what = `${r.key} with a token of ${scope} → ${res.status}`;
          if (accepted.includes(scope)) {
            assert.ok(allowed(res.status), `${what}: ${JSON.stringify(res.body)}`);
            continue;
          }
          assert.equal(res.status, 403, what);
          assert.equal(res.body.code, 'forbidden', what);
          assert.deepEqual(res.body.required_scopes, accepted, what);
          assert.equal(res.challenge, challengeFor(accepted), what);
        }
        const full = await call(url(fill(path)), method, all);
        assert.ok(allowed(full.status), `${r.key} with every scope → ${full.status}`);
        for (const token of [server.adminToken, operator, auditor]) {
          const res = await call(url(fill(path)), method, token);
          assert.equal(res.status, 403, `${r.key} with an operator token`);
          assert.match(res.body.error, /needs a tenant token/);
        }
        assert.equal((await call(url(fill(path)), method, undefined)).status, 401, `${r.key} without a token`);
      }
    });

    it('operator routes: the admin role writes, the auditor only reads, a tenant credential never', async () => {
      const adminRoutes = entries().filter((r) => r.expected === 'admin');
      assert.ok(adminRoutes.length > 15);
      for (const r of adminRoutes) {
        const [method, path] = r.key.split(' ');
        const reading = method === 'GET';
        for (const token of [server.adminToken, operator]) {
          const res = await call(url(fill(path)), method, token);
          assert.ok(allowed(res.status), `${r.key} as admin → ${res.status}`);
        }
        const audit = await call(url(fill(path)), method, auditor);
        if (reading) assert.ok(allowed(audit.status), `${r.key} as auditor → ${audit.status}`);
        else {
          assert.equal(audit.status, 403, `${r.key} as auditor`);
          assert.match(audit.body.error, /auditor role may only read/);
        }
        for (const token of [all, ...Object.values(only)]) {
          const res = await call(url(fill(path)), method, token);
          assert.equal(res.status, 403, `${r.key} with a tenant token`);
          assert.equal(res.body.required_scopes, undefined);
        }
        assert.equal((await call(url(fill(path)), method, undefined)).status, 401, `${r.key} without a token`);
      }
    });

    it('open routes need no token; `any` takes every credential; the scrape route takes operators only', async () => {
      for (const r of entries()) {
        const [method, path] = r.key.split(' ');
        const u = url(fill(path));
        switch (r.expected) {
          case 'public':
            assert.equal((await call(u, method, undefined)).status, 200, r.key);
            break;
          case 'any':
            for (const token of [server.adminToken, operator, auditor, all, ...Object.values(only)]) {
              assert.equal((await call(u, method, token)).status, 200, r.key);
            }
            assert.equal((await call(u, method, undefined)).status, 401, r.key);
            break;
          case 'scrape':
            for (const token of [server.adminToken, operator, auditor]) {
              assert.equal((await call(u, method, token)).status, 200, r.key);
            }
            for (const token of [all, ...Object.values(only)]) {
              assert.equal((await call(u, method, token)).status, 403, r.key);
            }
            assert.equal((await call(u, method, undefined)).status, 401, r.key);
            break;
          case 'admin':
            break; // above
          default:
            break; // tenant routes: above
        }
      }
      for (const path of ['/openapi.json', '/docs'])
        assert.equal((await call(url(path), 'GET', undefined)).status, 200);
    });
  });

  describe('the A2A bindings', () => {
    it('JSON-RPC: every method of both dialects, with each one-scope token', async () => {
      for (const [name, accepted] of Object.entries(JSONRPC_METHODS)) {
        const v03 = Object.hasOwn(V03.methods, name);
        for (const scope of TENANT_SCOPES) {
          const res = await call(url('/v1/a2a/agents/index'), 'POST', only[scope], {
            body: { jsonrpc: '2.0', id: 1, method: name, params: {} },
            headers: { 'a2a-version': '1.0' },
          });
          const what = `${name} with a token of ${scope}: ${JSON.stringify(res.body)}`;
          assert.equal(res.status, 200, what);
          if (accepted.includes(scope)) {
            assert.notEqual(res.body.error?.code, -32000, what);
            continue;
          }
          assert.equal(res.body.error.code, -32000, what);
          assert.match(res.body.error.message, new RegExp(accepted.join(' or ')), what);
          if (v03) {
            assert.deepEqual(res.body.error.data, { required_scopes: accepted.join(' ') }, what);
          } else {
            const info = res.body.error.data.find((d: { '@type': string }) => d['@type'].endsWith('ErrorInfo'));
            assert.equal(info.reason, 'PERMISSION_DENIED', what);
            assert.deepEqual(info.metadata, { required_scopes: accepted.join(' ') }, what);
          }
        }
      }
      // An operator's credential is no tenant's: refused before the envelope is read.
      const res = await call(url('/v1/a2a/agents/index'), 'POST', server.adminToken, {
        body: { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} },
        headers: { 'a2a-version': '1.0' },
      });
      assert.equal(res.status, 403);
      assert.match(res.body.error, /needs a tenant token/);
    });

    it('HTTP+JSON: every route, with each one-scope token (403 with PERMISSION_DENIED naming the scopes)', async () => {
      for (const [route, accepted] of Object.entries(REST_ROUTES)) {
        const [method, path] = route.split(' ');
        const u = url(`/v1/a2a/agents/index/${fill(path)}`);
        for (const scope of TENANT_SCOPES) {
          const res = await call(u, method, only[scope], { headers: { 'a2a-version': '1.0' } });
          const what = `${route} with a token of ${scope} → ${res.status}`;
          if (accepted.includes(scope)) {
            assert.ok(allowed(res.status), `${what}: ${JSON.stringify(res.body)}`);
            continue;
          }
          assert.equal(res.status, 403, what);
          assert.equal(res.body.error.status, 'PERMISSION_DENIED', what);
          const info = res.body.error.details.find((d: { '@type': string }) => d['@type'].endsWith('ErrorInfo'));
          assert.deepEqual(info.metadata, { required_scopes: accepted.join(' ') }, what);
          assert.equal(res.challenge, challengeFor(accepted), what);
        }
        const res = await call(u, method, server.adminToken, { headers: { 'a2a-version': '1.0' } });
        assert.equal(res.status, 403, `${route} with the admin token`);
      }
    });

    it('gRPC: every method of A2AService, with each one-scope token (PERMISSION_DENIED naming the scopes)', async () => {
      const definition = protoLoader.fromJSON(A2A_ROOT.toJSON(), { keepCase: false, enums: String, defaults: false });
      const pkg = grpc.loadPackageDefinition(definition) as any;
      const client = new pkg.lf.a2a.v1.A2AService(server.grpcAddress, grpc.credentials.createInsecure());
      try {
        const service = A2A_ROOT.lookupService(`${A2A_PACKAGE}.${A2A_SERVICE}`);
        for (const m of service.methodsArray) {
          const accepted = GRPC_METHODS[m.name];
          for (const scope of TENANT_SCOPES) {
            const res = await grpcCall(client, m.name, Boolean(m.responseStream), only[scope]);
            const what = `${m.name} with a token of ${scope}: ${JSON.stringify(res)}`;
            if (accepted.includes(scope)) {
              assert.ok(
                ![grpc.status.PERMISSION_DENIED, grpc.status.UNAUTHENTICATED, grpc.status.UNIMPLEMENTED].includes(
                  res.code,
                ),
                what,
              );
              continue;
            }
            assert.equal(res.code, grpc.status.PERMISSION_DENIED, what);
            assert.equal(res.info?.reason, 'PERMISSION_DENIED', what);
            assert.deepEqual(res.info?.metadata, { required_scopes: accepted.join(' ') }, what);
          }
          const res = await grpcCall(client, m.name, Boolean(m.responseStream), server.adminToken);
          assert.equal(res.code, grpc.status.PERMISSION_DENIED, `${m.name} with the admin token`);
        }
      } finally {
        client.close();
      }
    });
  });
});
