// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AgentCard } from '@a2a-js/sdk';
import type { JWK } from 'jose';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, tempHome, type TestServer } from '../helpers/server.js';
import { grpcClient, rpc, V1 } from '../helpers/a2a.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';
import {
  headersOf,
  newKeyPair,
  verifyIndependently,
  verifyWithSdk,
  writePrivateKey,
} from '../helpers/card-signatures.js';

type Json = Record<string, any>;

describe('signed agent cards (A2A §8.4)', () => {
  let server: TestServer;
  let t: TestTenant;
  let jwks: { keys: JWK[] };
  const previous = newKeyPair('EdDSA');
  const home = tempHome();
  let upstream: Upstream;

  before(async () => {
    upstream = await startUpstream();
    const current = newKeyPair('ES256');
    const keyFile = writePrivateKey(join(home, 'card-key.pem'), current.privateKey);
    // The key of the last rotation: still published, so cards a client cached with its signature verify.
    const previousFile = join(home, 'previous-keys.json');
    writeFileSync(
      previousFile,
      JSON.stringify({ keys: [{ ...previous.publicKey.export({ format: 'jwk' }), kid: 'old-1' }] }),
    );
    server = await startTestServer({
      home,
      env: {
        ...GRPC_ON,
        ARBITER_CARD_SIGNING_KEY_FILE: keyFile,
        ARBITER_CARD_SIGNING_PREVIOUS_KEYS_FILE: previousFile,
        // The remote-backed agent's upstream is on loopback.
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
      },
    });
    t = await newTenant(server);
    await newAgent(t, { id: 'research', model: 'echo', role: 'researcher', goal: 'finds things' });
    const entry = await t.client.post('/v1/remote-agents', { name: 'vendor', url: `${upstream.url}/rpc` });
    assert.equal(entry.status, 201, entry.text);
    await newAgent(t, { id: 'front', backend: { remote: 'vendor' } });
    const res = await server.http.get('/.well-known/jwks.json');
    assert.equal(res.status, 200);
    jwks = res.body;
  });
  after(async () => {
    await server?.close();
    await upstream?.close();
  });

  /** Every check a client could make: the SDK's verifier, an independent JCS + compact-JWS one, the header. */
  const verified = async (card: Json, what: string): Promise<string> => {
    await verifyWithSdk(card, jwks);
    const kid = await verifyIndependently(card, jwks);
    for (const h of headersOf(card)) {
      assert.equal(h.typ, 'JOSE', what);
      assert.equal(h.alg, 'ES256', what);
      // The base URL the card names (gRPC has no request to read it from: the configured one).
      assert.equal(h.jku, `${card.provider?.url ?? server.url}/.well-known/jwks.json`, what);
    }
    return kid;
  };

  it('publishes the current key and the previous one as a JWKS, public keys only', () => {
    assert.equal(jwks.keys.length, 2);
    const [cur, old] = jwks.keys;
    assert.equal(cur.kty, 'EC');
    assert.equal(cur.alg, 'ES256');
    assert.match(cur.kid!, /^[A-Za-z0-9_-]{43}$/, 'the RFC 7638 thumbprint');
    assert.equal(old.kid, 'old-1');
    assert.equal(old.alg, 'EdDSA');
    for (const k of jwks.keys) assert.equal(k.d, undefined);
  });

  it('every card it serves verifies: the discovery stub, the v1.0 and the v0.3-compatible card', async () => {
    const kid = jwks.keys[0].kid;
    const stub = await server.http.get('/.well-known/agent-card.json');
    assert.equal(await verified(stub.body, 'stub'), kid);
    const v1 = await t.client.get('/v1/a2a/agents/research/agent-card.json', V1);
    assert.equal(await verified(v1.body, 'v1'), kid);
    assert.equal(v1.body.signatures.length, 1, 'a v1.0 card: one signature both verifiers check');
    const compat = await t.client.get('/v1/a2a/agents/research/agent-card.json');
    assert.equal(compat.body.protocolVersion, '0.3.0');
    assert.equal(await verified(compat.body, 'compat'), kid);
    assert.equal(compat.body.signatures.length, 2, 'the whole card, and its v1.0 fields as the SDK reads them');
  });

  it("a remote-backed agent's card, derived from the upstream's, is Arbiter's and signed by Arbiter", async () => {
    const card = await t.client.get('/v1/a2a/agents/front/agent-card.json', V1);
    assert.equal(card.status, 200, card.text);
    assert.equal(card.body.name, 'Vendor Upstream');
    assert.equal(await verified(card.body, 'remote-backed'), jwks.keys[0].kid);
  });

  it('the extended card verifies on JSON-RPC (1.0 and 0.3), HTTP+JSON and gRPC', async () => {
    const r1 = await rpc(
      server.url,
      t.token,
      'research',
      { jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' },
      V1,
    );
    const ext1 = ((await r1.json()) as Json).result;
    assert.ok(ext1.capabilities.extensions.length > 0);
    await verified(ext1, 'jsonrpc 1.0');
    const r03 = await rpc(server.url, t.token, 'research', {
      jsonrpc: '2.0',
      id: 1,
      method: 'agent/getAuthenticatedExtendedCard',
    });
    await verified(((await r03.json()) as Json).result, 'jsonrpc 0.3');
    const rest = await t.client.get('/v1/a2a/agents/research/extendedAgentCard', V1);
    assert.equal(rest.status, 200);
    await verified(rest.body, 'rest');
    const client = await grpcClient(server.url, t.token, 'research');
    const ext = await client.transport.getExtendedAgentCard(
      { tenant: '' },
      { serviceParameters: { 'A2A-Version': '1.0' } },
    );
    await verified(AgentCard.toJSON(ext) as Json, 'grpc');
  });

  it('a tampered card fails both checks', async () => {
    const card = (await t.client.get('/v1/a2a/agents/research/agent-card.json', V1)).body;
    const tampered = {
      ...card,
      supportedInterfaces: [{ ...card.supportedInterfaces[0], url: 'http://evil.example/a2a' }],
    };
    await assert.rejects(verifyWithSdk(tampered, jwks));
    await assert.rejects(verifyIndependently(tampered, jwks));
    const renamed = { ...card, name: 'Someone else' };
    await assert.rejects(verifyIndependently(renamed, jwks));
  });

  it('a repeated read is the same signature (not signed again): one ETag, and 304', async () => {
    // ES256 signatures are randomised: a card signed anew would differ. The cache keeps one per content.
    const a = await t.client.get('/v1/a2a/agents/research/agent-card.json', V1);
    const b = await t.client.get('/v1/a2a/agents/research/agent-card.json', V1);
    assert.deepEqual(a.body.signatures, b.body.signatures);
    const etag = a.headers.get('etag')!;
    assert.equal(b.headers.get('etag'), etag);
    const again = await t.client.get('/v1/a2a/agents/research/agent-card.json', { ...V1, 'if-none-match': etag });
    assert.equal(again.status, 304);
  });
});

describe('signed agent cards behind a gateway, with an RSA JWK key', () => {
  let server: TestServer;
  let t: TestTenant;
  const home = tempHome();

  before(async () => {
    const keyFile = writePrivateKey(join(home, 'card-key.jwk'), newKeyPair('RS256').privateKey, 'rsa-2026');
    server = await startTestServer({
      home,
      env: { ARBITER_CARD_SIGNING_KEY_FILE: keyFile, ARBITER_PUBLIC_BASE_URL: 'https://agents.example.com' },
    });
    t = await newTenant(server);
  });
  after(async () => {
    await server?.close();
  });

  it('signs the URLs the client sees, with the JWK kid', async () => {
    const jwks = (await server.http.get('/.well-known/jwks.json')).body;
    assert.deepEqual(
      jwks.keys.map((k: JWK) => [k.kid, k.alg]),
      [['rsa-2026', 'RS256']],
    );
    const card = (await t.client.get('/v1/a2a/agents/index/agent-card.json', V1)).body;
    assert.equal(card.supportedInterfaces[0].url, 'https://agents.example.com/v1/a2a/agents/index');
    // The public card's URLs come from the configured base, never the request's Host: a shared cache may keep it.
    const open = await server.http.get('/.well-known/agent-card.json', { host: 'evil.example' });
    assert.equal(open.body.url, 'https://agents.example.com/v1/a2a/agents/index');
    assert.equal(open.headers.get('cache-control'), 'public, max-age=300');
    assert.equal(headersOf(card)[0].jku, 'https://agents.example.com/.well-known/jwks.json');
    assert.equal(await verifyIndependently(card, jwks), 'rsa-2026');
    await verifyWithSdk(card, jwks);
  });
});

describe('card signing settings', () => {
  it('a symmetric key stops the start, naming the setting', async () => {
    const home = tempHome();
    const file = join(home, 'oct.jwk');
    writeFileSync(file, JSON.stringify({ kty: 'oct', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0', kid: 'x' }));
    await assert.rejects(
      startTestServer({ home, env: { ARBITER_CARD_SIGNING_KEY_FILE: file } }),
      /ARBITER_CARD_SIGNING_KEY_FILE .*symmetric keys \(kty "oct"\) are refused/,
    );
  });

  it('without a key, cards carry no signatures and the JWKS is empty', async () => {
    const server = await startTestServer();
    try {
      assert.deepEqual((await server.http.get('/.well-known/jwks.json')).body, { keys: [] });
      assert.equal((await server.http.get('/.well-known/agent-card.json')).body.signatures, undefined);
    } finally {
      await server.close();
    }
  });
});
