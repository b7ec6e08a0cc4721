import assert from 'node:assert/strict';
import type { HttpClient } from './http.js';
import type { TestServer } from './server.js';

let counter = 0;

export interface TestTenant {
  id: string;
  name: string;
  token: string;
  tokenId: string;
  client: HttpClient;
}

export async function newTenant(server: TestServer, name = `tenant-${++counter}`): Promise<TestTenant> {
  const res = await server.admin.post('/v1/admin/tenants', { name });
  assert.equal(res.status, 201, res.text);
  return {
    id: res.body.tenant.id,
    name,
    token: res.body.token.token,
    tokenId: res.body.token.id,
    client: server.as(res.body.token.token),
  };
}

export async function newAgent(tenant: TestTenant, body: Record<string, unknown>): Promise<any> {
  const res = await tenant.client.post('/v1/agents', body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}
