// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { readSse } from '../helpers/a2a.js';
import { newTenant, type TestTenant } from '../helpers/factories.js';
import { startEverythingHttp, type HttpMcp } from '../helpers/mcp-servers.js';
import { demoClients, startIdp, type TestIdp } from '../helpers/oidc-provider.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SECRET = 'arbiter-mcp-client-secret';
const OUTBOUND = { id: 'arbiter-outbound', secret: SECRET };

describe('outbound credentials: /mcp over streamable HTTP with an OAuth client-credentials token', () => {
  let idp: TestIdp;
  let mcp: HttpMcp;
  let server: TestServer;
  let tenant: TestTenant;
  const revoked = new Set<string>();

  const run = async (message: string): Promise<string> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
    });
    const { events } = await readSse(res);
    return String(events.find((e) => e.event === 'done')?.data.content);
  };
  const jtiOf = (authorization: string | undefined): string =>
    String(decodeJwt((authorization ?? '').replace(/^Bearer /, '')).jti);

  before(async () => {
    idp = await startIdp([...demoClients, OUTBOUND], { resources: { 'urn:docs-mcp': 'docs-mcp' } });
    const jwks = createRemoteJWKSet(new URL(idp.jwksUri));
    mcp = await startEverythingHttp(async (authorization) => {
      const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
      if (!token) return false;
      try {
        const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer, audience: 'docs-mcp' });
        return !revoked.has(String(payload.jti));
      } catch {
        return false;
      }
    });
    process.env.ARBITER_TEST_MCP_CLIENT_SECRET = SECRET;
    const auth = {
      type: 'oauth2_client_credentials',
      token_url: `${idp.issuer}/token`,
      client_id: OUTBOUND.id,
      client_secret_env: 'ARBITER_TEST_MCP_CLIENT_SECRET',
      resource: 'urn:docs-mcp',
      client_auth: 'post',
    };
    server = await startTestServer({
      env: {
        ARBITER_MCP_ALLOW_PRIVATE: 'true',
        ARBITER_TOKEN_ENDPOINT_ALLOWLIST: new URL(idp.issuer).host,
      },
      prepareHome: (home) =>
        writeFileSync(join(home, 'mcp_servers.json'), JSON.stringify({ mcpServers: { docs: { url: mcp.url, auth } } })),
    });
    tenant = await newTenant(server);
  });

  after(async () => {
    await server?.close();
    await mcp?.close();
    await idp?.close();
  });

  it('calls a tool with the token the IdP issued for the server, and renews it once when the server refuses it', async () => {
    assert.match(await run('/mcp call docs echo {"message":"hello"}'), /Echo: hello/);
    const first = mcp.auth.at(-1);
    assert.equal(decodeJwt(first!.replace(/^Bearer /, '')).aud, 'docs-mcp');
    assert.equal(new Set(mcp.auth.map(jtiOf)).size, 1, 'one token for the whole session');
    revoked.add(jtiOf(first));
    const before = mcp.auth.length;
    assert.match(await run('/mcp call docs echo {"message":"again"}'), /Echo: again/);
    const after = mcp.auth.slice(before).map(jtiOf);
    assert.equal(after[0], jtiOf(first), 'the refused token, once');
    assert.ok(after.length > 1 && after.slice(1).every((j) => j !== after[0]));
    assert.equal(new Set(after.slice(1)).size, 1, 'one refresh');
  });
});
