import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetTaskRequest, TaskState, type Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { status as grpcStatus } from '@grpc/grpc-js';
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWTPayload } from 'jose';
import {
  a2a,
  followSse,
  grpcClient,
  restClient,
  sendParams,
  textMessage,
  v1Client,
  waitFor,
  type SseEvent,
} from '../helpers/a2a.js';
import { demoClients, startIdp, type LocalIdpClient, type SigningJwk, type TestIdp } from '../helpers/oidc-provider.js';
import { within } from '../helpers/patience.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Identity end to end: JWT access tokens of a real OpenID Provider (oidc-provider on loopback, the one
 * `npm run idp` runs) are the only credentials of the tenants here — created with `issue_token: false`, they have
 * no opaque token at all. The issuer is trusted through the admin API; tenants are found by the `org` claim
 * (`external_id`), operators by the `roles` claim; scopes come from `scope`.
 */

/** A client of the demo IdP that may manage acme's agents (the demo set has none). */
const ACME_BUILDER: LocalIdpClient = { id: 'acme-builder', org: 'acme', scopes: ['agents:read', 'agents:write'] };

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** `host:port` of an IdP, for ARBITER_IDENTITY_ALLOWLIST (plain http on loopback is allowed only for these). */
const hostOf = (idp: TestIdp): string => new URL(idp.issuer).host;

/** Trusts the IdP (tenant by `org`, operator by `roles`); returns the issuer's id. */
async function trust(server: TestServer, idp: TestIdp, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.admin.post('/v1/admin/issuers', {
    issuer: idp.issuer,
    audiences: ['arbiter'],
    tenant_claim: 'org',
    role_claim: 'roles',
    ...extra,
  });
  assert.equal(res.status, 201, res.text);
  return res.body.id as string;
}

/** A tenant with an external id and no opaque token. */
async function tenantWithoutToken(server: TestServer, name: string): Promise<string> {
  const res = await server.admin.post('/v1/admin/tenants', { name, external_id: name, issue_token: false });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.token, undefined, 'no opaque token was issued');
  assert.equal((await server.admin.get(`/v1/admin/tenants/${res.body.tenant.id}/tokens`)).body.items.length, 0);
  return res.body.tenant.id as string;
}

/** A new RS256 signing key as a private JWK, for an IdP whose key the test also holds. */
async function signingKey(): Promise<SigningJwk> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** What an SDK error says, on any binding: the A2A reason, the binding's code, the message. */
interface ErrorOutcome {
  error: string;
  code: number | undefined;
  message: string;
}

async function outcome<T>(p: Promise<T>): Promise<T | ErrorOutcome> {
  try {
    return await p;
  } catch (err) {
    const e = err as { reason?: string; envelopeCode?: number; statusCode?: number; status?: number; code?: number };
    return {
      error: e.reason ?? `not an A2A error: ${String(err)}`,
      code: e.envelopeCode ?? e.statusCode ?? e.status ?? e.code,
      message: (err as Error).message,
    };
  }
}

const asTask = (r: unknown): Task => {
  assert.ok(r && typeof r === 'object' && 'status' in r, `a Task, got ${JSON.stringify(r)}`);
  return r as Task;
};
const stateOf = (t: Task): string => TaskState[t.status?.state ?? 0];
const answerOf = (t: Task): string =>
  t.artifacts
    .filter((a) => a.name === 'response')
    .flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')))
    .join('');

/** The three bindings' official clients for one token on one agent. */
async function clients(server: TestServer, token: string, agent: string): Promise<[string, Client][]> {
  return [
    ['JSONRPC', await v1Client(server.url, token, agent)],
    ['HTTP+JSON', await restClient(server.url, token, agent)],
    ['GRPC', await grpcClient(server.url, token, agent)],
  ];
}

describe('identity: tenants and operators of a trusted OpenID Provider', () => {
  let idp: TestIdp;
  let stranger: TestIdp;
  let key: SigningJwk;
  let server: TestServer;
  let issuerId: string;
  let acme: string;
  let globex: string;
  const token = (client: string, scope?: string) => idp.token(client, scope === undefined ? {} : { scope });

  before(async () => {
    key = await signingKey();
    idp = await startIdp([...demoClients, ACME_BUILDER], { keys: [key] });
    // Another IdP, never trusted: its tokens are well formed and validly signed, by a key Arbiter never saw.
    stranger = await startIdp();
    server = await startTestServer({
      env: { ...GRPC_ON, ARBITER_IDENTITY_ALLOWLIST: `${hostOf(idp)},${hostOf(stranger)}` },
    });
    issuerId = await trust(server, idp);
    acme = await tenantWithoutToken(server, 'acme');
    globex = await tenantWithoutToken(server, 'globex');
    const builder = server.as(await token('acme-builder', 'agents:read agents:write'));
    const agent = await builder.post('/v1/agents', { id: 'helper', role: 'helper' });
    assert.equal(agent.status, 201, agent.text);
  });
  after(async () => {
    await server?.close();
    await stranger?.close();
    await idp?.close();
  });

  it('an http issuer is trusted only when its host:port is allow-listed', async () => {
    const refused = await server.admin.post('/v1/admin/issuers', {
      issuer: 'http://127.0.0.1:9',
      audiences: ['arbiter'],
      tenant_claim: 'org',
    });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.text, /ARBITER_IDENTITY_ALLOWLIST/);
    const listed = await server.admin.get('/v1/admin/issuers');
    assert.deepEqual(
      listed.body.items.map((i: any) => [i.id, i.issuer, i.tenant_claim, i.role_claim]),
      [[issuerId, idp.issuer, 'org', 'roles']],
    );
  });

  it('GET /v1/me: a tenant JWT is its tenant with the scopes it was granted, and its actor', async () => {
    const me = await server.as(await token('acme-agent', 'a2a:invoke')).get('/v1/me');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.kind, 'tenant');
    assert.deepEqual(me.body.tenant, { id: acme, name: 'acme' });
    assert.deepEqual(me.body.scopes, ['a2a:invoke']);
    assert.equal(me.body.actor, `jwt:${idp.issuer}|acme-agent`);
    assert.equal(me.body.credential.kind, 'jwt');
    assert.equal(me.body.credential.issuer_id, issuerId);
  });

  it('the card says how to authenticate: a bearer, or a token of the trusted issuer (openIdConnect), in both shapes', async () => {
    const reader = server.as(await token('acme-dashboard', 'agents:read tasks:read'));
    const discovery = `${idp.issuer}/.well-known/openid-configuration`;
    const v1 = await reader.get('/v1/a2a/agents/helper/agent-card.json', { 'A2A-Version': '1.0' });
    assert.equal(v1.status, 200, v1.text);
    const scheme = `oidc-${issuerId.slice(0, 8)}`;
    assert.deepEqual(Object.keys(v1.body.securitySchemes), ['bearer', scheme]);
    assert.equal(v1.body.securitySchemes[scheme].openIdConnectSecurityScheme.openIdConnectUrl, discovery);
    assert.deepEqual(v1.body.securityRequirements, [
      { schemes: { bearer: {} } },
      { schemes: { [scheme]: { list: ['a2a:invoke'] } } },
    ]);
    const v03 = await reader.get('/v1/a2a/agents/helper/agent-card.json');
    assert.deepEqual(v03.body.securitySchemes[scheme], {
      type: 'openIdConnect',
      openIdConnectUrl: discovery,
      description: v1.body.securitySchemes[scheme].openIdConnectSecurityScheme.description,
    });
    assert.deepEqual(v03.body.security, [{ bearer: [] }, { [scheme]: ['a2a:invoke'] }]);
  });

  it("the official SDK client sends to acme's agent with acme-agent's JWT on JSON-RPC, HTTP+JSON and gRPC", async () => {
    const invoke = await token('acme-agent', 'a2a:invoke');
    const results: Record<string, unknown> = {};
    for (const [name, client] of await clients(server, invoke, 'helper')) {
      const task = asTask(await client.sendMessage(textMessage(`hello over ${name}`)));
      const got = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
      results[name] = { state: stateOf(task), answer: answerOf(task), again: got.id === task.id };
    }
    assert.deepEqual(results, {
      JSONRPC: { state: 'TASK_STATE_COMPLETED', answer: 'hello over JSONRPC', again: true },
      'HTTP+JSON': { state: 'TASK_STATE_COMPLETED', answer: 'hello over HTTP+JSON', again: true },
      GRPC: { state: 'TASK_STATE_COMPLETED', answer: 'hello over GRPC', again: true },
    });
  });

  it('scopes: acme-dashboard (agents:read tasks:read) reads agents and requests, but may not invoke or write', async () => {
    const dashboard = await token('acme-dashboard', 'agents:read tasks:read');
    const as = server.as(dashboard);
    const agents = await as.get('/v1/agents');
    assert.equal(agents.status, 200, agents.text);
    assert.ok(
      agents.body.items.some((a: any) => a.id === 'helper'),
      agents.text,
    );
    const requests = await as.get('/v1/requests?limit=50');
    assert.equal(requests.status, 200, requests.text);
    assert.ok(requests.body.items.length >= 3, 'the tasks acme-agent sent are there to read');

    const write = await as.post('/v1/agents', { id: 'sneaky', role: 'sneaky' });
    assert.equal(write.status, 403, write.text);
    assert.deepEqual(write.body.required_scopes, ['agents:write']);
    assert.match(write.body.error, /agents:write/);
    assert.match(write.headers.get('www-authenticate') ?? '', /insufficient_scope/);

    // The SDK on each binding: refused, naming the scope, with the binding's own code.
    const results: Record<string, unknown> = {};
    for (const [name, client] of await clients(server, dashboard, 'helper')) {
      const e = (await outcome(client.sendMessage(textMessage('may I?')))) as ErrorOutcome;
      assert.match(e.message, /a2a:invoke/, `${name}: ${JSON.stringify(e)}`);
      results[name] = e.code;
    }
    assert.deepEqual(results, { JSONRPC: -32000, 'HTTP+JSON': 403, GRPC: grpcStatus.PERMISSION_DENIED });

    // The wire, as a client without the SDK reads it: JSON-RPC's ErrorInfo, HTTP+JSON's 403.
    const rpc = await a2a(server.url, dashboard, 'helper').send('may I?');
    assert.equal(rpc.error?.code, -32000, JSON.stringify(rpc));
    const info = rpc.error.data.find((d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
    assert.equal(info.reason, 'PERMISSION_DENIED');
    assert.equal(info.metadata.required_scopes, 'a2a:invoke');
    const rest = await as.post('/v1/a2a/agents/helper/message:send', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'may I?' }] },
    });
    assert.equal(rest.status, 403, rest.text);
    const restInfo = rest.body.error.details.find(
      (d: any) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo',
    );
    assert.equal(restInfo.metadata.required_scopes, 'a2a:invoke');
    assert.equal((await as.get('/v1/requests?limit=50')).body.items.length, requests.body.items.length, 'no task');
  });

  it('operators: an admin JWT changes tenants, an auditor JWT only reads, and the audit names each actor', async () => {
    const alice = server.as(await token('ops-alice'));
    const auditor = server.as(await token('ops-audit'));
    const aliceActor = `jwt:${idp.issuer}|ops-alice`;
    const me = await alice.get('/v1/me');
    assert.deepEqual([me.body.kind, me.body.role, me.body.actor], ['admin', 'admin', aliceActor]);
    assert.deepEqual(
      [(await auditor.get('/v1/me')).body.role, (await auditor.get('/v1/me')).body.actor],
      ['auditor', `jwt:${idp.issuer}|ops-audit`],
    );

    const created = await alice.post('/v1/admin/tenants', { name: 'initech', issue_token: false });
    assert.equal(created.status, 201, created.text);
    const initech = created.body.tenant.id as string;
    const patched = await alice.patch(`/v1/admin/tenants/${initech}`, { external_id: 'initech' });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.external_id, 'initech');

    assert.equal((await auditor.get('/v1/admin/tenants')).status, 200);
    const audit = await auditor.get(`/v1/admin/audit?tenant_id=${initech}`);
    assert.equal(audit.status, 200, audit.text);
    const actions = Object.fromEntries(audit.body.items.map((e: any) => [e.action, e.actor_id]));
    assert.deepEqual(actions, { 'tenant.create': aliceActor, 'tenant.external_id': aliceActor });

    const refused = await auditor.post('/v1/admin/tenants', { name: 'nope', issue_token: false });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error, /auditor/);
    assert.equal((await auditor.patch(`/v1/admin/tenants/${initech}`, { disabled: true })).status, 403);

    // A tenant's JWT is no operator, and an operator's JWT acts on /v1/admin only.
    const tenantJwt = server.as(await token('acme-agent', 'a2a:invoke'));
    assert.equal((await tenantJwt.get('/v1/admin/tenants')).status, 403);
    assert.equal((await alice.get('/v1/agents')).status, 403);

    // A named operator token: made by alice, acts and is audited as operator:<name>, dies with its DELETE.
    const named = await alice.post('/v1/admin/operators', { name: 'deploy-bot', role: 'admin' });
    assert.equal(named.status, 201, named.text);
    const bot = server.as(named.body.token as string);
    assert.equal((await bot.get('/v1/me')).body.actor, 'operator:deploy-bot');
    const disabled = await bot.patch(`/v1/admin/tenants/${initech}`, { disabled: true });
    assert.equal(disabled.status, 200, disabled.text);
    const after = await auditor.get(`/v1/admin/audit?tenant_id=${initech}`);
    assert.equal(after.body.items.find((e: any) => e.action === 'tenant.disable')?.actor_id, 'operator:deploy-bot');
    const global = await auditor.get('/v1/admin/audit?limit=100');
    const made = global.body.items.find((e: any) => e.action === 'operator.create' && e.detail.name === 'deploy-bot');
    assert.equal(made?.actor_id, aliceActor);
    assert.equal((await alice.delete(`/v1/admin/operators/${named.body.id}`)).status, 200);
    const gone = await bot.get('/v1/admin/tenants');
    assert.equal(gone.status, 401, gone.text);
  });

  it("tenant isolation: globex's JWT sees acme's agent and task exactly like missing ones", async () => {
    const acmeToken = await token('acme-agent', 'a2a:invoke');
    const globexToken = await token('globex-agent', 'a2a:invoke');
    assert.equal((await server.as(globexToken).get('/v1/me')).body.tenant.id, globex);
    const mine = asTask(await (await v1Client(server.url, acmeToken, 'helper')).sendMessage(textMessage('private')));

    // acme's agent: the card and the JSON-RPC endpoint answer as for an agent that does not exist.
    const card = await server.as(globexToken).get('/v1/a2a/agents/helper/agent-card.json');
    const noCard = await server.as(globexToken).get('/v1/a2a/agents/no-such-agent/agent-card.json');
    assert.equal(card.status, 404, card.text);
    assert.deepEqual(
      [card.body.code, card.body.error.replace('helper', 'X')],
      [noCard.body.code, noCard.body.error.replace('no-such-agent', 'X')],
    );
    const send = await a2a(server.url, globexToken, 'helper').send('hi');
    const sendMissing = await a2a(server.url, globexToken, 'no-such-agent').send('hi');
    assert.equal(send.error?.code, sendMissing.error?.code, JSON.stringify(send));
    assert.equal(send.error?.message.replace('helper', 'X'), sendMissing.error?.message.replace('no-such-agent', 'X'));

    // acme's task, through the index agent every tenant has, and the native API.
    const missing = randomUUID();
    const globexIndex = a2a(server.url, globexToken);
    const [theirs, none] = [await globexIndex.get(mine.id), await globexIndex.get(missing)];
    assert.equal(theirs.error?.code, -32001, JSON.stringify(theirs));
    assert.equal(theirs.error?.message.replace(mine.id, 'ID'), none.error?.message.replace(missing, 'ID'));
    const native = await server.as(globexToken).get(`/v1/requests/${mine.id}`);
    const nativeMissing = await server.as(globexToken).get(`/v1/requests/${missing}`);
    assert.equal(native.status, 404);
    assert.equal(native.body.error.replace(mine.id, 'ID'), nativeMissing.body.error.replace(missing, 'ID'));
    const list = await server.as(globexToken).get('/v1/requests?limit=50');
    assert.equal(list.status, 200);
    assert.ok(!list.body.items.some((t: any) => t.id === mine.id));
  });

  it('bad tokens end to end: a clear 401 (never a 500) on the native API and on the A2A binding', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims: JWTPayload = { iss: idp.issuer, aud: 'arbiter', sub: 'acme-agent', org: 'acme', scope: 'a2a:invoke' };
    const signer = await importJWK(key, 'RS256');
    const sign = (payload: JWTPayload, header: Record<string, unknown> = {}) =>
      new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'at+jwt', ...header }).sign(signer);
    const good = await token('acme-agent', 'a2a:invoke');
    const [head, , sig] = good.split('.');
    const cases: [string, string, RegExp][] = [
      ['alg none', `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, exp: now + 600 })}.`, /"none"/],
      ['wrong audience', await sign({ ...claims, aud: 'someone-else', exp: now + 600 }), /audience/],
      ['expired', await sign({ ...claims, iat: now - 7200, exp: now - 3600 }), /expired/],
      ['untrusted issuer', await stranger.token('acme-agent', { scope: 'a2a:invoke' }), /issuer is not trusted/],
      ['forged claims', `${head}.${b64url({ ...claims, org: 'globex', exp: now + 600 })}.${sig}`, /signature/],
      ['unknown kid', await sign({ ...claims, exp: now + 600 }, { kid: 'no-such-key' }), /key is not known/],
      ['three segments of garbage', 'abc.def.ghi', /not valid|not a JWT/],
      ['three dots of garbage', 'abc.def.ghi.jkl', /invalid or revoked token/],
      ['an expiry past year 9999', await sign({ ...claims, exp: 1e13 }), /claim "exp" is not valid/],
    ];
    for (const [name, bad, reason] of cases) {
      const native = await server.as(bad).get('/v1/requests');
      assert.equal(native.status, 401, `${name}: ${native.text}`);
      assert.match(native.body.error, reason, name);
      assert.match(native.headers.get('www-authenticate') ?? '', /^Bearer/, name);
      const rpc = await a2a(server.url, bad, 'helper').post('SendMessage', sendParams('x'));
      // Refused before any JSON-RPC is read: the same 401 as any route's.
      assert.equal(rpc.status, 401, name);
      const body = (await rpc.json()) as { error?: string; code?: string };
      assert.equal(body.code, 'unauthorized', name);
      assert.match(body.error ?? '', reason, `${name}: ${JSON.stringify(body)}`);
    }
    // A tenant claim no tenant's external_id could be (a NUL, a space, not ASCII): 403, as for an unknown tenant.
    for (const org of ['acme\u0000', 'a\u0000b', 'ac me', 'acmé']) {
      const named = await sign({ ...claims, org, exp: now + 600 });
      for (const res of [await server.as(named).get('/v1/me'), await server.as(named).get('/v1/agents')]) {
        assert.equal(res.status, 403, `${JSON.stringify(org)}: ${res.text}`);
        assert.match(res.body.error, /names no tenant of this deployment/);
      }
      const rpc = await a2a(server.url, named, 'helper').post('SendMessage', sendParams('x'));
      assert.equal(rpc.status, 403, JSON.stringify(org));
    }
    // The good token still works, so the refusals were the tokens'.
    assert.equal((await server.as(good).get('/v1/requests')).status, 200);
  });
});

describe('identity: the IdP rotates its signing key while tokens are in use', () => {
  let idp: TestIdp;
  let server: TestServer;

  before(async () => {
    idp = await startIdp();
    server = await startTestServer({
      env: { ARBITER_IDENTITY_ALLOWLIST: hostOf(idp), ARBITER_JWKS_REFRESH_MS: '1000' },
    });
    await trust(server, idp);
    await tenantWithoutToken(server, 'acme');
  });
  after(async () => {
    await server?.close();
    await idp?.close();
  });

  const kidOf = (jwt: string): string | undefined => decodeProtectedHeader(jwt).kid;
  const status = async (jwt: string): Promise<number> => (await server.as(jwt).get('/v1/requests')).status;

  it('new tokens work after the rotation, old ones until their key is retired, then 401', async () => {
    const [oldKid] = idp.kids();
    const old = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.equal(kidOf(old), oldKid);
    assert.equal(await status(old), 200);
    const sendOld = await a2a(server.url, old).send('before the rotation');
    assert.equal(sendOld.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(sendOld));

    const newKid = await idp.rotate();
    const fresh = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    assert.equal(kidOf(fresh), newKid);
    // An unknown kid makes Arbiter fetch the issuer's keys, at most once per ARBITER_JWKS_REFRESH_MS (the first
    // fetch, for the old token, may be that recent), and they are fetched in the background every interval: the
    // new kid is known at the latest after the next fetch.
    await waitFor(async () => ((await status(fresh)) === 200 ? true : undefined));
    const sendNew = await a2a(server.url, fresh).send('after the rotation');
    assert.equal(sendNew.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(sendNew));
    assert.equal(await status(old), 200, 'the old key is still published');

    idp.retire(oldKid);
    // The old token was verified and cached; the cache holds it only while its key is among the issuer's keys.
    await waitFor(async () => ((await status(old)) === 401 ? true : undefined));
    const refused = await server.as(old).get('/v1/requests');
    assert.equal(refused.status, 401);
    assert.match(refused.body.error, /signing key is not known/);
    const rpc = await a2a(server.url, old).post('SendMessage', sendParams('after the retirement'));
    assert.equal(rpc.status, 401);
    assert.match(await rpc.text(), /signing key is not known/);
    assert.equal(await status(fresh), 200, 'tokens of the new key go on');
  });
});

/** The last frame of a JSON-RPC stream, as a v1.0 error. */
function rpcErrorOf(events: SseEvent[]): { code: number; message: string; data?: any[] } {
  const last = events.at(-1)?.data as { error?: { code: number; message: string; data?: any[] } } | undefined;
  assert.ok(last?.error, `the stream ends with an error frame: ${JSON.stringify(events.at(-1))}`);
  return last.error;
}

describe('identity: streams opened with a JWT end when it expires, its issuer goes, or its tenant is disabled', () => {
  /** Tokens that live an hour. */
  let idp: TestIdp;
  /** Tokens that live a few seconds. */
  let brief: TestIdp;
  let server: TestServer;
  let idpIssuer: string;
  let acme: string;
  const TTL_SECONDS = 3;

  before(async () => {
    idp = await startIdp();
    brief = await startIdp(demoClients, { ttlSeconds: TTL_SECONDS });
    server = await startTestServer({
      env: { ARBITER_IDENTITY_ALLOWLIST: `${hostOf(idp)},${hostOf(brief)}` },
    });
    idpIssuer = await trust(server, idp);
    // No clock skew: a token is refused from its exp on, so a stream opened with it never starts after it expired.
    await trust(server, brief, { clock_skew_seconds: 0 });
    acme = await tenantWithoutToken(server, 'acme');
  });
  after(async () => {
    await server?.close();
    await brief?.close();
    await idp?.close();
  });

  /** A task held working by the echo model's `hold`, started with `jwt`. */
  const holdTask = async (jwt: string): Promise<string> => {
    const r = await a2a(server.url, jwt).send('hold', { returnImmediately: true });
    assert.ok(r.result?.task?.id, JSON.stringify(r));
    return r.result.task.id as string;
  };

  /** The native event stream of a task, followed (see `followSse`). */
  const nativeEvents = (jwt: string, taskId: string) =>
    followSse(fetch(`${server.url}/v1/requests/${taskId}/events`, { headers: bearer(jwt) }));

  it('a JWT stream ends with "expired; subscribe again" when the token expires; the task goes on', async () => {
    const long = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    const task = await holdTask(long);
    // A short-lived token may expire before its stream opens on a slow machine (then it is refused with 401):
    // take a fresh one and try again, until the streams have opened with it and ended.
    const ended = await within(
      (async () => {
        for (;;) {
          const short = await brief.token('acme-agent', { scope: 'a2a:invoke' });
          const agent = a2a(server.url, short);
          const subscribe = agent.subscribe(task);
          const streaming = agent.stream('hold');
          const native = nativeEvents(short, task);
          const opened = await Promise.all([subscribe.opened, streaming.opened, native.opened]).then(
            () => true,
            () => false,
          );
          const results = await Promise.all([subscribe.ended, streaming.ended, native.ended]);
          if (opened) return results;
        }
      })(),
      'the streams of a short-lived token to end',
    );
    const [subscribe, streaming, native] = ended;
    for (const [name, s] of [
      ['SubscribeToTask', subscribe],
      ['SendStreamingMessage', streaming],
    ] as const) {
      const first = s.events[0]?.data;
      assert.equal(first?.result?.task?.status?.state, 'TASK_STATE_WORKING', `${name}: the task first`);
      const err = rpcErrorOf(s.events);
      assert.equal(err.code, -32000, name);
      assert.match(err.message, /expired; subscribe again with a fresh token/, name);
      assert.equal(err.data?.at(-1).reason, 'UNAUTHENTICATED', name);
    }
    const last = native.events.at(-1)!;
    assert.equal(last.event, 'error');
    assert.equal(last.data.error_code, 'unauthorized');
    assert.match(last.data.message, /expired; subscribe again with a fresh token/);

    // The tasks are not the token's: they go on, and a fresh token follows them again.
    const held = await a2a(server.url, long).get(task);
    assert.equal(held.result?.status?.state, 'TASK_STATE_WORKING', JSON.stringify(held));
    const streamed = streaming.events[0].data.result.task.id as string;
    for (const id of [task, streamed]) {
      assert.equal((await a2a(server.url, long).cancel(id)).result?.status?.state, 'TASK_STATE_CANCELED');
    }
  });

  it('disabling the tenant ends its JWT streams; its JWTs are refused until it is enabled again', async () => {
    const jwt = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    const task = await holdTask(jwt);
    const subscribe = a2a(server.url, jwt).subscribe(task);
    const native = nativeEvents(jwt, task);
    await within(Promise.all([subscribe.opened, native.opened]), 'the streams to open');
    const res = await server.admin.patch(`/v1/admin/tenants/${acme}`, { disabled: true });
    try {
      assert.equal(res.status, 200, res.text);
      const [s, n] = await within(Promise.all([subscribe.ended, native.ended]), 'the streams to end');
      assert.match(rpcErrorOf(s.events).message, /tenant was disabled/);
      assert.equal(n.events.at(-1)?.event, 'error');
      assert.match(n.events.at(-1)?.data.message, /tenant was disabled/);
      // The JWT was verified and cached when the streams opened: the change drops it (embedded database too).
      const refused = await server.as(jwt).get('/v1/requests');
      assert.equal(refused.status, 401, refused.text);
      assert.match(refused.body.error, /tenant is disabled/);
    } finally {
      // The next test needs the tenant, whatever happened here.
      assert.equal((await server.admin.patch(`/v1/admin/tenants/${acme}`, { disabled: false })).status, 200);
    }
    assert.equal((await server.as(jwt).get('/v1/requests')).status, 200, 'the same JWT works again');
    assert.equal((await a2a(server.url, jwt).cancel(task)).result?.status?.state, 'TASK_STATE_CANCELED');
  });

  it("removing the issuer ends the streams opened with its tokens, not others', and its tokens get 401", async () => {
    const jwt = await idp.token('acme-agent', { scope: 'a2a:invoke' });
    // An opaque token of the same tenant: its streams are not the issuer's.
    const issued = await server.admin.post(`/v1/admin/tenants/${acme}/tokens`, { scopes: ['a2a:invoke'] });
    assert.equal(issued.status, 201, issued.text);
    const opaque = issued.body.token as string;
    const task = await holdTask(jwt);
    const subscribe = a2a(server.url, jwt).subscribe(task);
    const streaming = a2a(server.url, jwt).stream('hold');
    const native = nativeEvents(jwt, task);
    const bystander = a2a(server.url, opaque).subscribe(task);
    await within(
      Promise.all([subscribe.opened, streaming.opened, native.opened, bystander.opened]),
      'the streams to open',
    );

    const removed = await server.admin.delete(`/v1/admin/issuers/${idpIssuer}`);
    assert.equal(removed.status, 204, removed.text);
    const [s, st, n] = await within(
      Promise.all([subscribe.ended, streaming.ended, native.ended]),
      'the streams to end',
    );
    for (const events of [s.events, st.events]) {
      const err = rpcErrorOf(events);
      assert.match(err.message, /no longer trusted/);
      assert.equal(err.data?.at(-1).reason, 'UNAUTHENTICATED');
    }
    assert.match(n.events.at(-1)?.data.message, /no longer trusted/);

    const refused = await server.as(jwt).get('/v1/requests');
    assert.equal(refused.status, 401, refused.text);
    assert.match(refused.body.error, /issuer is not trusted/);
    const rpc = await a2a(server.url, jwt).post('SendMessage', sendParams('still there?'));
    assert.equal(rpc.status, 401);
    assert.match(await rpc.text(), /issuer is not trusted/);

    // The opaque token's stream was not the issuer's: it is still open, and sees the task end.
    assert.equal((await a2a(server.url, opaque).cancel(task)).result?.status?.state, 'TASK_STATE_CANCELED');
    const b = await within(bystander.ended, 'the bystander stream to end with its task');
    assert.equal(b.events.at(-1)?.data.result?.statusUpdate?.status?.state, 'TASK_STATE_CANCELED');
    const streamed = st.events[0].data.result.task.id as string;
    assert.equal((await a2a(server.url, opaque).cancel(streamed)).result?.status?.state, 'TASK_STATE_CANCELED');
  });
});
