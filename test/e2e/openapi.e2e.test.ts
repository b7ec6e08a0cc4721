import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { REST_ROUTE_PATHS } from '../../src/a2a-inbound/rest/rest-routes.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
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
    server = await startTestServer();
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
    assert.equal(doc.paths['/v1/agents'].get.security, undefined, 'the bearer requirement applies');
    assert.deepEqual(doc.security, [{ bearer: [] }]);
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
