import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { SendMessageRequest, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { REST_ROUTE_PATHS } from '../../src/a2a-inbound/rest/rest-routes.js';
import { isTenantScope, OPERATOR_ROLES, TENANT_SCOPES } from '../../src/common/auth.decorators.js';
import { newTenant } from '../helpers/factories.js';
import { authFetch, cardUrl } from '../helpers/a2a.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
}

/** One HTTP+JSON exchange as a client sent and received it. */
interface Exchange {
  method: string;
  path: string;
  body?: unknown;
  status: number;
  answer?: unknown;
}

/** A fetch that records every exchange (JSON bodies parsed) before handing the response back. */
function recordingFetch(inner: typeof fetch, log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await inner(input, init);
    const text = await res.clone().text();
    const isJson = (res.headers.get('content-type') ?? '').includes('json') && text !== '';
    log.push({
      method: init?.method ?? 'GET',
      path: new URL(String(input instanceof Request ? input.url : input)).pathname,
      ...(typeof init?.body === 'string' ? { body: JSON.parse(init.body) as unknown } : {}),
      status: res.status,
      ...(isJson ? { answer: JSON.parse(text) as unknown } : {}),
    });
    return res;
  };
}

/** The document's REST route template (`/v1/a2a/agents/{agentId}/tasks/{taskId}`) that a concrete path matches. */
function templateOf(doc: any, method: string, path: string): string | undefined {
  return Object.keys(doc.paths).find((t) => {
    if (!doc.paths[t][method.toLowerCase()]) return false;
    const re = new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/:]+')}$`);
    return re.test(path);
  });
}

/** Every (method, path) the Express router serves, in OpenAPI's `{param}` form. */
function servedRoutes(server: TestServer): Set<string> {
  const express = server.running.app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  const out = new Set<string>();
  for (const layer of express.router.stack) {
    if (!layer.route) continue;
    for (const path of [layer.route.path].flat()) {
      for (const [method, on] of Object.entries(layer.route.methods)) {
        if (on) out.add(`${method.toUpperCase()} ${path.replace(/:([A-Za-z]+)/g, '{$1}')}`);
      }
    }
  }
  return out;
}

describe('the OpenAPI document (/openapi.json) and the docs page (/docs)', () => {
  let server: TestServer;
  let doc: any;
  before(async () => {
    server = await startTestServer({ env: { ARBITER_PUSH_ALLOWLIST: '127.0.0.1' } });
    const res = await server.http.get('/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(async () => {
    await server.close();
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
    // Every $ref resolves.
    const refs = JSON.stringify(doc).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) ?? [];
    for (const r of new Set(refs)) {
      const name = r.slice('"$ref":"#/components/schemas/'.length, -1);
      assert.ok(doc.components.schemas[name], `missing schema ${name}`);
    }
  });

  it('describes every route the server serves (the A2A bindings, served ahead of Express, by their route tables)', () => {
    const documented = new Set<string>();
    for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const served = servedRoutes(server);
    assert.ok(served.size > 25, `found ${served.size} routes`);
    const undocumented = [...served].filter((r) => {
      if (r.startsWith('GET /docs') || r.includes('/openapi.')) return false; // the docs themselves
      return !documented.has(r);
    });
    assert.deepEqual(undocumented, []);
    assert.ok(documented.has('POST /v1/a2a/agents/{agentId}'), 'the JSON-RPC endpoint');
    for (const r of REST_ROUTE_PATHS) {
      assert.ok(documented.has(`${r.method} /v1/a2a/agents/{agentId}/${r.path}`), `${r.method} ${r.path}`);
      // a2a.proto's `/{tenant}/…` binding, which the SDK's REST client uses with the card's tenant.
      assert.ok(documented.has(`${r.method} /v1/a2a/agents/{agentId}/{tenant}/${r.path}`), `${r.method} ${r.path}`);
    }
  });

  it('request schemas come from the validators: what the schema forbids, the server refuses', async () => {
    const create = doc.paths['/v1/admin/tenants'].post.requestBody.content['application/json'].schema.$ref;
    const schema = doc.components.schemas[create.split('/').pop()];
    assert.deepEqual(schema.required, ['name']);
    assert.equal(schema.properties.name.maxLength, 128);
    const res = await server.admin.post('/v1/admin/tenants', { name: 'x'.repeat(129), extra: 1 });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.details.map((d: { field: string }) => d.field).sort(), ['extra', 'name']);
    const list = doc.paths['/v1/requests'].get.parameters.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(list, ['agent_id', 'context_id', 'cursor', 'limit', 'state']);
    assert.deepEqual(doc.paths['/v1/health'].get.security, []);
    assert.deepEqual(doc.security, [{ bearer: [] }]);
  });

  it('each operation lists what it accepts — the scopes of a tenant route, the roles of an operator route — and the server holds a credential to exactly that', async () => {
    const scheme = doc.components.securitySchemes.bearer;
    assert.deepEqual({ type: scheme.type, scheme: scheme.scheme }, { type: 'http', scheme: 'bearer' });
    for (const name of [...TENANT_SCOPES, ...OPERATOR_ROLES])
      assert.match(scheme.description, new RegExp(`\`${name}\``));
    /** An operation's alternatives: one name (a scope or a role) per requirement, or [] for none. */
    const accepted = (op: any): string[] => {
      assert.ok(Array.isArray(op.security), `${op.operationId} lists its security`);
      return op.security.map((r: Record<string, string[]>) => {
        assert.deepEqual(Object.keys(r), ['bearer'], op.operationId);
        assert.ok(r.bearer.length <= 1, `${op.operationId}: one scope per alternative (any one is enough)`);
        return r.bearer[0] ?? '';
      });
    };
    const ops = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ path, method, op, names: accepted(op) })),
    );
    const of = (method: string, path: string) => ops.find((o) => o.method === method && o.path === path)!.names;
    // Examples of each kind: open, any credential, operator reads and writes, tenant routes, the A2A bindings.
    assert.deepEqual(of('get', '/v1/health'), []);
    assert.deepEqual(of('get', '/.well-known/agent-card.json'), []);
    assert.deepEqual(of('get', '/v1/me'), ['']);
    assert.deepEqual(of('get', '/v1/admin/tenants'), ['admin', 'auditor']);
    assert.deepEqual(of('post', '/v1/admin/tenants'), ['admin']);
    assert.deepEqual(of('delete', '/v1/admin/issuers/{id}'), ['admin']);
    assert.deepEqual(of('get', '/metrics'), ['admin', 'auditor']);
    assert.deepEqual(of('post', '/v1/agents'), ['agents:write']);
    assert.deepEqual(of('get', '/v1/agents'), ['agents:read', 'agents:write']);
    assert.deepEqual(of('get', '/v1/requests'), ['a2a:invoke', 'tasks:read']);
    assert.deepEqual(of('get', '/v1/stats'), ['tasks:read']);
    assert.deepEqual(of('get', '/v1/admin/stats'), ['admin', 'auditor']);
    assert.deepEqual(of('post', '/v1/orchestrate'), ['a2a:invoke']);
    assert.deepEqual(of('post', '/v1/a2a/agents/{agentId}/message:send'), ['a2a:invoke']);
    assert.deepEqual(of('get', '/v1/a2a/agents/{agentId}/extendedAgentCard'), [
      'a2a:invoke',
      'agents:read',
      'agents:write',
      'tasks:read',
    ]);
    assert.deepEqual(of('post', '/v1/a2a/agents/{agentId}').sort(), [
      'a2a:invoke',
      'agents:read',
      'agents:write',
      'tasks:read',
    ]);
    assert.match(doc.paths['/v1/a2a/agents/{agentId}'].post.description, /a2a:invoke: SendMessage, /);
    for (const o of ops) {
      for (const name of o.names) {
        assert.ok(['', ...TENANT_SCOPES, ...OPERATOR_ROLES].includes(name), `${o.method} ${o.path}: ${name}`);
      }
      const admin = o.path.startsWith('/v1/admin/');
      if (admin) assert.deepEqual(o.names, o.method === 'get' ? ['admin', 'auditor'] : ['admin'], o.path);
    }

    // What the document lists is what the server enforces: a token of each scope the operation does not list gets
    // a 403 naming exactly the listed ones; one of a listed scope gets through.
    const tenant = (await server.admin.post('/v1/admin/tenants', { name: 'openapi-scopes' })).body.tenant.id;
    const only = {} as Record<string, string>;
    for (const scope of TENANT_SCOPES) {
      only[scope] = (await server.admin.post(`/v1/admin/tenants/${tenant}/tokens`, { scopes: [scope] })).body.token;
    }
    const tenantOps = ops.filter((o) => o.names.length > 0 && o.names.every((n) => isTenantScope(n)));
    assert.ok(tenantOps.length > 30, `${tenantOps.length} tenant operations`);
    for (const o of tenantOps) {
      if (o.path === '/v1/a2a/agents/{agentId}') continue; // per method: the route-scopes test
      const path = o.path
        .replace('{agentId}', 'index')
        .replace(/\{[A-Za-z]+\}/g, '00000000-0000-4000-8000-000000000000');
      for (const scope of TENANT_SCOPES) {
        const res = await server.as(only[scope]).request(o.method.toUpperCase(), path, {
          headers: { 'a2a-version': '1.0' },
          ...(o.method === 'post' || o.method === 'patch' ? { json: {} } : {}),
        });
        const what = `${o.method} ${o.path} with a token of ${scope} → ${res.status}`;
        if (o.names.includes(scope)) {
          assert.ok(res.status !== 401 && res.status !== 403, what);
          continue;
        }
        assert.equal(res.status, 403, what);
        const listed = res.body.required_scopes ?? res.body.error.details.at(-1).metadata.required_scopes.split(' ');
        assert.deepEqual(listed, o.names, what);
      }
    }
  });

  it('the HTTP+JSON routes take and answer what the document says: the SDK REST transport’s real requests and their answers validate against it', async () => {
    const t = await newTenant(server, 'openapi-rest');
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    /** A validator of one of the document's schemas, its `#/components/…` refs resolving in the document. */
    const validator = (schema: object) => ajv.compile({ ...schema, components: doc.components });
    const requestSchema = (template: string, method: string) =>
      doc.paths[template][method].requestBody?.content['application/json'].schema as object | undefined;
    const answerSchema = (template: string, method: string) =>
      doc.paths[template][method].responses['200'].content?.['application/json']?.schema as object | undefined;

    const log: Exchange[] = [];
    const recording = recordingFetch(authFetch(t.token), log);
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new RestTransportFactory({ fetchImpl: recording })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch(t.token) }),
        preferredTransports: ['HTTP+JSON'],
      }),
    ).createFromUrl(cardUrl(server.url, 'index'), '');
    const task = (await client.sendMessage(
      SendMessageRequest.fromJSON({
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'documented' }] },
      }),
    )) as Task;
    await client.getTask({ tenant: '', id: task.id, historyLength: 1 });
    const hook = 'http://127.0.0.1:9/hook';
    await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'doc1',
      taskId: task.id,
      url: hook,
      token: 'a-token',
      authentication: { scheme: 'Bearer', credentials: 'a-credential' },
    });
    await client.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url: hook,
      token: '',
      authentication: undefined,
    });
    await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'doc1' });
    await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'doc1' });

    const pushCreates = log.filter((x) => x.method === 'POST' && x.path.endsWith('/pushNotificationConfigs'));
    assert.equal(pushCreates.length, 2);
    assert.ok(log.length >= 7, JSON.stringify(log.map((x) => `${x.method} ${x.path}`)));
    for (const x of log) {
      const what = `${x.method} ${x.path} → ${x.status}`;
      assert.ok(x.status < 300, `${what}: ${JSON.stringify(x.answer)}`);
      const template = templateOf(doc, x.method, x.path);
      assert.ok(template, `${what}: a documented route`);
      const method = x.method.toLowerCase();
      const body = requestSchema(template, method);
      if (x.body !== undefined) {
        assert.ok(body, `${what}: the document describes a body`);
        const valid = validator(body);
        assert.ok(valid(x.body), `${what}: request ${JSON.stringify(x.body)}: ${ajv.errorsText(valid.errors)}`);
      }
      const answer = answerSchema(template, method);
      if (x.answer !== undefined && answer) {
        const valid = validator(answer);
        assert.ok(valid(x.answer), `${what}: answer ${JSON.stringify(x.answer)}: ${ajv.errorsText(valid.errors)}`);
      }
    }
    // A nested pushNotificationConfig is v0.3's shape: the v1.0 route refuses it, and so does the document.
    const nested = { pushNotificationConfig: { url: hook } };
    const refused = await t.client.post(`/v1/a2a/agents/index/tasks/${task.id}/pushNotificationConfigs`, nested, {
      'a2a-version': '1.0',
    });
    assert.equal(refused.status, 400, refused.text);
    const template = templateOf(doc, 'POST', pushCreates[0].path)!;
    assert.equal(validator(requestSchema(template, 'post')!)(nested), false);
  });

  it('/docs is a page on this origin (no requests elsewhere)', async () => {
    const res = await fetch(`${server.url}/docs`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /swagger-ui/);
    assert.doesNotMatch(html, /(src|href)="https?:\/\//);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    const js = await fetch(`${server.url}/docs/swagger-ui-init.js`);
    assert.equal(js.status, 200);
    assert.match(await js.text(), /openapi|swaggerDoc/);
  });
});
