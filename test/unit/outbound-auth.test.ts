// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { RegistryFileError } from '../../src/common/registry-file/registry-fields.js';
import { SubjectToken } from '../../src/common/subject-token.js';
import { checkAuthUrl, readOutboundAuth, type AuthSource } from '../../src/outbound-auth/auth-fields.js';
import { credentialOf, sendWithCredential, stripSecrets } from '../../src/outbound-auth/credentials.js';
import { stripIssued } from '../../src/outbound-auth/issued-tokens.js';
import { OutboundAuthError, type OAuthClient } from '../../src/outbound-auth/outbound-auth.types.js';
import { DEFAULT_LIFETIME_S, requestToken } from '../../src/outbound-auth/token-endpoint.js';
import { makeClientCerts } from '../helpers/client-certs.js';

const CERTS = makeClientCerts();
const PEM = CERTS.cert;
const KEY = CERTS.key;
const operator = (dir = '.') => ({ env: { SECRET: 's3cret', EMPTY: '' }, baseDir: dir });
const bad = (raw: unknown, pattern: RegExp, source: AuthSource = operator()) =>
  assert.throws(
    () => readOutboundAuth(raw, 'agents.x.auth', source),
    (e) => e instanceof RegistryFileError && pattern.test(e.message) && !e.message.includes('s3cret'),
  );

describe('outbound auth in the operator files', () => {
  it('reads every type, with secrets inline or from host variables, PEM inline or from files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'arbiter-auth-'));
    writeFileSync(join(dir, 'c.pem'), PEM);
    writeFileSync(join(dir, 'k.pem'), KEY);
    const read = (raw: unknown) => readOutboundAuth(raw, 'a', operator(dir));
    assert.deepEqual(read({ token: 'x' }), { auth: { type: 'bearer', token: 'x' }, missingEnv: [] });
    assert.deepEqual(read({ type: 'bearer', token_env: 'NOPE' }), {
      auth: { type: 'bearer', token: '' },
      missingEnv: ['NOPE'],
    });
    assert.deepEqual(read({ type: 'header', name: 'X-Api-Key', value_env: 'SECRET' }).auth, {
      type: 'header',
      name: 'x-api-key',
      value: 's3cret',
    });
    const cc = read({
      type: 'oauth2_client_credentials',
      token_url: 'https://idp.example.com/oauth/token',
      client_id: 'arbiter',
      client_secret_env: 'SECRET',
      scopes: 'a b',
      audience: 'api',
      resource: 'urn:remote',
    });
    assert.deepEqual(cc.auth, {
      type: 'oauth2_client_credentials',
      tokenUrl: 'https://idp.example.com/oauth/token',
      clientId: 'arbiter',
      clientSecret: 's3cret',
      scopes: ['a', 'b'],
      audience: 'api',
      resource: 'urn:remote',
      clientAuth: 'basic',
    });
    assert.deepEqual(read({ type: 'mtls', cert_file: 'c.pem', key_file: join(dir, 'k.pem') }).auth, {
      type: 'mtls',
      tls: { cert: PEM, key: KEY },
    });
    const tx = read({
      type: 'token_exchange',
      token_url: 'https://i/t',
      client_id: 'c',
      client_secret: 'x',
      actor_token: true,
    });
    assert.equal(tx.auth.type === 'token_exchange' && tx.auth.actorToken, true);
  });

  it('refuses what is malformed, naming the field, never quoting a value', () => {
    bad(
      { type: 'basic' },
      /agents\.x\.auth\.type must be one of bearer, header, oauth2_client_credentials, mtls, token_exchange/,
    );
    bad({ type: 'bearer', token: 'a', token_env: 'SECRET' }, /give token or token_env, not both/);
    bad({ type: 'bearer', token: 'has space' }, /agents\.x\.auth\.token must be printable ASCII without spaces/);
    bad({ type: 'header', name: 'Host', value: 'x' }, /agents\.x\.auth\.name must be a header name/);
    bad({ type: 'header', name: 'X-A' }, /give value or value_env/);
    bad({ type: 'oauth2_client_credentials', client_id: 'a', client_secret: 'b' }, /token_url is required/);
    bad(
      { type: 'oauth2_client_credentials', token_url: 'ftp://x/', client_id: 'a', client_secret: 'b' },
      /token_url must be an absolute http\(s\) URL/,
    );
    bad(
      {
        type: 'oauth2_client_credentials',
        token_url: 'https://x/t',
        client_id: 'a',
        client_secret: 'b',
        client_auth: 'jwt',
      },
      /client_auth must be "basic" or "post"/,
    );
    bad({ type: 'oauth2_client_credentials', token_url: 'https://x/t', client_secret: 'b' }, /client_id is required/);
    bad(
      { type: 'oauth2_client_credentials', token_url: 'https://x/t', client_id: 'a' },
      /give client_secret or client_secret_env/,
    );
    bad({ type: 'mtls', cert_file: '/nonexistent/c.pem', key: KEY }, /cert_file: cannot read it \(ENOENT\)/);
    bad({ type: 'mtls', cert: 'not pem', key: KEY }, /agents\.x\.auth\.cert must hold PEM/);
    bad(
      { type: 'token_exchange', token_url: 'https://x/t', client_id: 'a', client_secret: 'b', actor_token: 'yes' },
      /actor_token must be true or false/,
    );
    bad({ type: 'header', name: 'X-A', value: 'v', token: 'x' }, /unknown field "token" for header/);
  });

  it('a client certificate that cannot work is refused when read: expired, not a certificate, not its key', () => {
    bad(
      { type: 'mtls', cert: CERTS.expired.cert, key: CERTS.expired.key },
      /agents\.x\.auth\.cert: the client certificate expired on 2020-01-02T00:00:00\.000Z/,
    );
    bad({ type: 'mtls', cert: PEM, key: CERTS.otherKey }, /agents\.x\.auth\.key is not the certificate's key/);
    bad({ type: 'mtls', cert: KEY, key: KEY }, /agents\.x\.auth\.cert is not a valid X\.509 certificate/);
    bad({ type: 'mtls', cert: PEM, key: PEM }, /agents\.x\.auth\.key is not a valid private key/);
  });

  it('an mtls entry must be https', () => {
    const { auth } = readOutboundAuth({ type: 'mtls', cert: PEM, key: KEY }, 'a', operator());
    assert.throws(() => checkAuthUrl(auth, new URL('http://h/'), 'agents.x'), /agents\.x\.url must be https for mtls/);
    checkAuthUrl(auth, new URL('https://h/'), 'agents.x');
  });

  it('host variables and files are for the operator’s files only', () => {
    bad({ token_env: 'SECRET' }, /host variables are for the operator's files/, {});
    bad({ type: 'mtls', cert_file: 'c.pem', key: KEY }, /files are for the operator's files/, {});
  });
});

describe('the token endpoint', () => {
  let server: Server;
  let base = '';
  const answers = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  const seen: { path: string; authorization?: string; body: string }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
        answers.get(req.url ?? '')?.(req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const json = (status: number, body: unknown) => (_q: IncomingMessage, res: ServerResponse) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    answers.set('/no-expiry', json(200, { access_token: 'tok-1', token_type: 'Bearer' }));
    answers.set('/expiry', json(200, { access_token: 'tok-2', token_type: 'bearer', expires_in: 60 }));
    answers.set('/garbage', (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_'));
    answers.set('/refused', json(401, { error: 'invalid_client', error_description: 'secret s3cret is wrong' }));
    answers.set('/mac', json(200, { access_token: 'x', token_type: 'mac' }));
    answers.set('/slow', () => undefined); // never answers
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const client = (path: string, clientAuth: 'basic' | 'post' = 'basic'): OAuthClient => ({
    tokenUrl: `${base}${path}`,
    clientId: 'arbiter client',
    clientSecret: 's3cret',
    scopes: ['read', 'write'],
    resource: 'urn:remote',
    clientAuth,
  });
  const opts = { policy: { allowPrivate: false, allowHosts: new Set(['127.0.0.1']) }, timeoutMs: 200 };
  const fails = async (path: string, pattern: RegExp) =>
    assert.rejects(
      requestToken(client(path), { grant_type: 'client_credentials' }, opts),
      (e) => e instanceof OutboundAuthError && pattern.test(e.message) && !e.message.includes('s3cret'),
    );

  it('sends the grant with the client in Basic (form-encoded parts) or in the form; a missing expires_in gets the default', async () => {
    assert.deepEqual(await requestToken(client('/no-expiry'), { grant_type: 'client_credentials' }, opts), {
      token: 'tok-1',
      expiresIn: DEFAULT_LIFETIME_S,
    });
    const basic = seen.at(-1)!;
    assert.equal(basic.authorization, `Basic ${Buffer.from('arbiter+client:s3cret').toString('base64')}`);
    assert.equal(basic.body, 'grant_type=client_credentials&scope=read+write&resource=urn%3Aremote');
    assert.deepEqual(await requestToken(client('/expiry', 'post'), { grant_type: 'client_credentials' }, opts), {
      token: 'tok-2',
      expiresIn: 60,
    });
    const post = seen.at(-1)!;
    assert.equal(post.authorization, undefined);
    assert.match(post.body, /client_id=arbiter\+client&client_secret=s3cret$/);
  });

  it('garbage, a refusal, an unusable token type, silence or a closed port: a clear error without the secret', async () => {
    await fails('/garbage', /answered something else than a token \(application\/json, not JSON\)/);
    await fails('/refused', /answered HTTP 401: invalid_client$/);
    await fails('/mac', /issued a token of a type Arbiter cannot send/);
    await fails('/slow', /token endpoint http:\/\/127\.0\.0\.1:\d+ failed: no answer within 0 s/);
    await assert.rejects(
      requestToken(
        { ...client('/x'), tokenUrl: 'http://127.0.0.1:9/token' },
        { grant_type: 'client_credentials' },
        opts,
      ),
      /token endpoint http:\/\/127\.0\.0\.1:9 failed: ECONNREFUSED/,
    );
  });

  it('a credential shares one fetch among concurrent callers, and renews a refused token once', async () => {
    let fetches = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const credential = credentialOf({ type: 'oauth2_client_credentials', ...client('/unused') }, async () => {
      fetches++;
      await gate;
      return { token: `t${fetches}`, expiresIn: 3600 };
    });
    const ctx = {};
    const all = Promise.all([1, 2, 3].map(() => credential.headers(ctx)));
    release();
    assert.deepEqual(
      (await all).map((h) => h.authorization),
      ['Bearer t1', 'Bearer t1', 'Bearer t1'],
    );
    assert.equal(fetches, 1);
    let sends = 0;
    const res = await sendWithCredential(
      credential,
      ctx,
      true,
      () => Promise.resolve({ status: ++sends < 10 ? 401 : 200 }),
      () => undefined,
    );
    assert.equal(res.status, 401, 'a second 401 is the answer');
    assert.equal(sends, 2, 'one retry');
    assert.equal(fetches, 2, 'one refresh');
  });

  it('an opaque token Arbiter was issued is taken out of what a remote says, however it is quoted', async () => {
    // Opaque (no JWT shape) and unique to this test; the two share their first eight characters.
    const issued = [`opq-${randomUUID()}`, `opq-${randomUUID()}`];
    let n = 0;
    const credential = credentialOf({ type: 'oauth2_client_credentials', ...client('/unused') }, () =>
      Promise.resolve({ token: issued[n++], expiresIn: 3600 }),
    );
    const [first, second] = issued;
    const said = `refused "${first}"; token=${first}. ${first}`;
    assert.equal(stripSecrets(said, []), said, 'not known before it is issued');
    assert.equal((await credential.headers({})).authorization, `Bearer ${first}`);
    assert.equal(stripSecrets(said, []), 'refused "[redacted]"; token=[redacted]. [redacted]');
    // Refused and renewed: both are known (the refusal is what quotes the old one).
    credential.refused({ authorization: `Bearer ${first}` }, {});
    assert.equal((await credential.headers({})).authorization, `Bearer ${second}`);
    assert.equal(
      stripSecrets(`${first}${second} ${second.slice(0, 20)}`, []),
      `[redacted][redacted] ${second.slice(0, 20)}`,
    );
    assert.equal(stripIssued('short'), 'short');
  });

  it('token_exchange refuses without a caller; the subject token never shows in JSON or logs', async () => {
    const credential = credentialOf({ type: 'token_exchange', actorToken: false, ...client('/unused') }, () =>
      Promise.resolve({ token: 'x', expiresIn: 60 }),
    );
    await assert.rejects(credential.headers({}), (e) => e instanceof OutboundAuthError && e.code === 'no_subject');
    const subject = new SubjectToken('eyJ.secret.jwt');
    assert.deepEqual(await credential.headers({ subject }), { authorization: 'Bearer x' });
    const principal = { tenantId: 't' };
    Object.defineProperty(principal, 'subject', { value: subject, enumerable: false });
    assert.equal(JSON.stringify({ principal, subject }), '{"principal":{"tenantId":"t"},"subject":"[subject token]"}');
    assert.ok(!inspect(subject).includes('secret') && !String(subject).includes('secret'));
    assert.deepEqual({ ...principal }, { tenantId: 't' });
  });
});
