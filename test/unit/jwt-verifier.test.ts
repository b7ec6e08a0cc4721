// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  EncryptJWT,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  generateSecret,
  SignJWT,
  UnsecuredJWT,
  type CryptoKey,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import type { AppConfig } from '../../src/config/app-config.js';
import { IssuerKeys, type IssuerKeysOptions, RETRY_WITHOUT_KEYS_MS } from '../../src/tenants/identity/issuer-keys.js';
import { JwtRefusal, JwtVerifier, type VerifiedJwt } from '../../src/tenants/identity/jwt-verifier.js';
import type { AsymmetricAlgorithm, TrustedIssuer } from '../../src/tenants/identity/trusted-issuer.js';
import { closedPort, FakeIdp } from '../helpers/fake-idp.js';
import { within } from '../helpers/patience.js';

/** The tests' clock (epoch ms): the verifier and the key cache read it; tests move it. */
class Clock {
  t = Date.parse('2030-01-01T00:00:00Z');
  readonly now = (): number => this.t;
  get seconds(): number {
    return Math.floor(this.t / 1000);
  }
}

interface Signer {
  alg: AsymmetricAlgorithm;
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signer(alg: AsymmetricAlgorithm, kid: string, extra: Partial<JWK> = {}): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { alg, kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, use: 'sig', ...extra } };
}

const REFRESH_MS = 60_000;
const AUDIENCE = 'https://arbiter.test';

function trustedIssuer(issuer: string, over: Partial<TrustedIssuer> = {}): TrustedIssuer {
  return {
    id: 'idp',
    issuer,
    audiences: [AUDIENCE],
    algorithms: ['RS256', 'ES256', 'EdDSA'],
    clockSkewSeconds: 30,
    jwksUri: null,
    tenantClaim: null,
    tenantId: 't1',
    roleClaim: null,
    scopeMap: {},
    createdAt: '2030-01-01T00:00:00Z',
    updatedAt: '2030-01-01T00:00:00Z',
    ...over,
  };
}

/** One fake IdP, the key cache and the verifier over it, on the test's clock. */
class Setup {
  readonly clock = new Clock();
  readonly warnings: string[] = [];
  readonly keys: IssuerKeys;
  readonly verifier: JwtVerifier;
  issuer: TrustedIssuer;

  constructor(
    readonly idp: FakeIdp,
    options: Partial<IssuerKeysOptions> & { issuer?: Partial<TrustedIssuer> } = {},
  ) {
    this.keys = new IssuerKeys({
      identityAllowlist: idp.hostPort,
      jwksRefreshMs: REFRESH_MS,
      jwksTimeoutMs: 10_000,
      now: this.clock.now,
      warn: (m) => this.warnings.push(m),
      ...options,
    });
    this.verifier = new JwtVerifier(this.keys);
    this.issuer = trustedIssuer(idp.url, options.issuer);
  }

  /** A token of `s`, valid for an hour from the clock's now, with these claims and header members on top. */
  mint(s: Signer, claims: JWTPayload = {}, header: Partial<JWTHeaderParameters> = {}): Promise<string> {
    const t = this.clock.seconds;
    return new SignJWT({ iss: this.issuer.issuer, aud: AUDIENCE, sub: 'alice', iat: t, exp: t + 3600, ...claims })
      .setProtectedHeader({ alg: s.alg, kid: s.kid, typ: 'at+jwt', ...header })
      .sign(s.privateKey);
  }

  verify(token: string): Promise<VerifiedJwt> {
    return this.verifier.verify(token, (iss) => (iss === this.issuer.issuer ? this.issuer : undefined));
  }
}

/** Resolves once `done()` holds, checking every few milliseconds (bounded by the caller's `within`). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** AppConfig carries the settings IssuerKeys takes, under the same names: `new IssuerKeys(config)` compiles. */
const _fromConfig: AppConfig extends IssuerKeysOptions ? true : never = true;

/** The refusal `p` ends with, asserting its reason; anything else (acceptance, another error) fails. */
async function refused(p: Promise<unknown>, reason: string): Promise<JwtRefusal> {
  try {
    await within(p, `verdict (${reason})`);
  } catch (err) {
    assert.ok(err instanceof JwtRefusal, `expected a JwtRefusal, got ${String(err)}`);
    assert.equal(err.reason, reason);
    assert.equal(err.status, 401);
    return err;
  }
  assert.fail(`accepted; expected the refusal "${reason}"`);
}

const UNAVAILABLE = "the token issuer's signing keys are unavailable";
const UNKNOWN_KID = 'token signing key is not known';

describe('JWT verification for trusted issuers', () => {
  let rs: Signer;
  let es: Signer;
  let ed: Signer;
  let rs2: Signer;
  let stranger: Signer;
  const idps: FakeIdp[] = [];

  before(async () => {
    [rs, es, ed, rs2, stranger] = await Promise.all([
      signer('RS256', 'rs-1'),
      signer('ES256', 'es-1'),
      signer('EdDSA', 'ed-1'),
      signer('RS256', 'rs-2'),
      signer('RS256', 'stranger'),
    ]);
  });

  async function setup(
    jwks: JWK[] | null,
    options: Partial<IssuerKeysOptions> & { issuer?: Partial<TrustedIssuer> } = {},
  ): Promise<Setup> {
    const idp = await FakeIdp.start();
    idps.push(idp);
    idp.jwks = { keys: jwks ?? [rs.jwk, es.jwk, ed.jwk] };
    return new Setup(idp, options);
  }

  afterEach(async () => {
    await Promise.all(idps.splice(0).map((idp) => idp.close()));
  });
  after(async () => {
    await Promise.all(idps.splice(0).map((idp) => idp.close()));
  });

  describe('accepts', () => {
    it('RS256, ES256 and EdDSA tokens of the discovered JWKS, fetching it once', async () => {
      const s = await setup(null);
      for (const signer of [rs, es, ed]) {
        const v = await s.verify(await s.mint(signer));
        assert.equal(v.issuer.id, 'idp');
        assert.equal(v.claims.sub, 'alice');
        assert.equal(v.kid, signer.kid);
        assert.equal(v.expiresAt, (s.clock.seconds + 3600) * 1000);
      }
      assert.equal(s.idp.hits('/.well-known/openid-configuration'), 1);
      assert.equal(s.idp.hits('/jwks'), 1);
      assert.ok(s.keys.knows('idp', 'es-1'));
    });

    it('a token with client_id and no sub, typ JWT or application/at+JWT, or no typ', async () => {
      const s = await setup(null);
      await s.verify(await s.mint(rs, { sub: undefined, client_id: 'svc' }));
      await s.verify(await s.mint(rs, {}, { typ: 'JWT' }));
      await s.verify(await s.mint(rs, {}, { typ: 'application/at+JWT' }));
      await s.verify(await s.mint(rs, {}, { typ: undefined }));
    });

    it('a token without kid when the JWKS has exactly one key of its algorithm', async () => {
      const s = await setup([rs.jwk, es.jwk]);
      const v = await s.verify(await s.mint(rs, {}, { kid: undefined }));
      assert.equal(v.kid, undefined);
    });
  });

  describe('refuses by shape, before any request', () => {
    it('an unsecured token (alg none)', async () => {
      const s = await setup(null);
      const t = s.clock.seconds;
      const token = new UnsecuredJWT({ iss: s.issuer.issuer, aud: AUDIENCE, sub: 'alice', exp: t + 60 }).encode();
      await refused(s.verify(token), 'token signature algorithm "none" is not accepted');
      assert.equal(s.idp.hits(), 0);
    });

    it("an HS256 token keyed with the issuer's public key (key confusion)", async () => {
      const s = await setup(null);
      const { publicKey } = await generateKeyPair('RS256', { extractable: true });
      for (const secret of [new TextEncoder().encode(await exportSPKI(publicKey)), await generateSecret('HS256')]) {
        const t = s.clock.seconds;
        const token = await new SignJWT({ iss: s.issuer.issuer, aud: AUDIENCE, sub: 'alice', exp: t + 60 })
          .setProtectedHeader({ alg: 'HS256', kid: rs.kid })
          .sign(secret);
        await refused(s.verify(token), 'token signature algorithm "HS256" is not accepted');
      }
      assert.equal(s.idp.hits(), 0);
    });

    it('an algorithm the issuer does not list', async () => {
      const s = await setup(null, { issuer: { algorithms: ['RS256'] } });
      await refused(s.verify(await s.mint(es)), 'token signature algorithm "ES256" is not accepted for this issuer');
      assert.equal(s.idp.hits(), 0);
    });

    it('an issuer not trusted, without a request', async () => {
      const s = await setup(null);
      await refused(s.verify(await s.mint(rs, { iss: 'https://evil.example' })), 'token issuer is not trusted');
      await refused(s.verify(await s.mint(rs, { iss: `${s.issuer.issuer}/` })), 'token issuer is not trusted');
      await refused(s.verify(await s.mint(rs, { iss: undefined })), 'token has no issuer (iss)');
      assert.equal(s.idp.hits(), 0);
    });

    it('a 100 KB token', async () => {
      const s = await setup(null);
      const token = await s.mint(rs, { pad: 'x'.repeat(100_000) });
      await refused(s.verify(token), 'token is too long');
      assert.equal(s.idp.hits(), 0);
    });

    it('an encrypted token (JWE, five parts) and a nested one', async () => {
      const s = await setup(null);
      const { publicKey } = await generateKeyPair('RSA-OAEP-256');
      const jwe = await new EncryptJWT({ iss: s.issuer.issuer, sub: 'alice' })
        .setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM' })
        .encrypt(publicKey);
      assert.equal(jwe.split('.').length, 5);
      await refused(s.verify(jwe), 'encrypted tokens are not accepted');
      await refused(s.verify(await s.mint(rs, {}, { cty: 'JWT' })), 'nested tokens are not accepted');
      assert.equal(s.idp.hits(), 0);
    });

    it('a critical header extension', async () => {
      const s = await setup(null);
      const t = s.clock.seconds;
      const token = await new SignJWT({ iss: s.issuer.issuer, aud: AUDIENCE, sub: 'alice', exp: t + 60 })
        .setProtectedHeader({ alg: 'RS256', kid: rs.kid, crit: ['urn:example:x'], 'urn:example:x': 1 })
        .sign(rs.privateKey, { crit: { 'urn:example:x': true } });
      await refused(s.verify(token), 'token header has critical extensions (crit), not accepted');
    });

    it('another token type, not a JWT, a bad header', async () => {
      const s = await setup(null);
      await refused(s.verify(await s.mint(rs, {}, { typ: 'dpop+jwt' })), 'token type "dpop+jwt" is not accepted');
      await refused(s.verify('abc'), 'token is not a JWT');
      await refused(s.verify('a.b.c.d'), 'token is not a JWT');
      await refused(s.verify('a+b.c.d'), 'token is not a JWT');
      await refused(s.verify(''), 'token is not a JWT');
      await refused(s.verify('bm90IGpzb24.e30.c2ln'), 'token header is not valid');
      const header = Buffer.from(JSON.stringify({ alg: 'RS256' })).toString('base64url');
      await refused(s.verify(`${header}.bm90IGpzb24.c2ln`), 'token claims are not valid');
      assert.equal(s.idp.hits(), 0);
    });
  });

  describe('refuses by signature and claims', () => {
    it('a tampered signature, a key of the JWKS that did not sign', async () => {
      const s = await setup(null);
      const [head, body] = (await s.mint(rs)).split('.');
      const other = (await s.mint(rs, { sub: 'mallory' })).split('.')[2];
      await refused(s.verify(`${head}.${body}.${other}`), 'token signature is not valid');
      await refused(s.verify(await s.mint({ ...stranger, kid: rs.kid })), 'token signature is not valid');
    });

    it('a wrong audience, or none', async () => {
      const s = await setup(null);
      await refused(s.verify(await s.mint(rs, { aud: 'https://other.test' })), 'token audience does not match');
      await refused(s.verify(await s.mint(rs, { aud: undefined })), 'token has no audience (aud)');
    });

    it('an expired token, or one without exp', async () => {
      const s = await setup(null);
      const t = s.clock.seconds;
      await refused(s.verify(await s.mint(rs, { iat: t - 7200, exp: t - 3600 })), 'token has expired');
      await refused(s.verify(await s.mint(rs, { exp: undefined })), 'token has no expiry (exp)');
      await refused(
        s.verify(await s.mint(rs, { exp: 'tomorrow' as unknown as number })),
        'token claim "exp" is not valid',
      );
    });

    it('a token not yet valid, or issued in the future', async () => {
      const s = await setup(null);
      const t = s.clock.seconds;
      await refused(s.verify(await s.mint(rs, { nbf: t + 3600 })), 'token is not yet valid');
      await refused(s.verify(await s.mint(rs, { iat: t + 3600 })), 'token was issued in the future');
    });

    it('exp and nbf within the clock skew pass, beyond it not', async () => {
      const s = await setup(null); // clockSkewSeconds: 30
      const t = s.clock.seconds;
      await s.verify(await s.mint(rs, { iat: t - 600, exp: t - 20 }));
      await s.verify(await s.mint(rs, { nbf: t + 20, iat: t + 20 }));
      await refused(s.verify(await s.mint(rs, { iat: t - 600, exp: t - 40 })), 'token has expired');
      await refused(s.verify(await s.mint(rs, { nbf: t + 40 })), 'token is not yet valid');
      // The same token, as the clock moves past its expiry and the skew.
      const token = await s.mint(rs, { exp: t + 10 });
      s.clock.t += 35_000;
      await s.verify(token);
      s.clock.t += 10_000;
      await refused(s.verify(token), 'token has expired');
    });

    it('a token with neither sub nor client_id', async () => {
      const s = await setup(null);
      await refused(s.verify(await s.mint(rs, { sub: undefined })), 'token has no subject (sub or client_id)');
    });

    it('a token without kid when the JWKS has several keys of its algorithm', async () => {
      const s = await setup([rs.jwk, rs2.jwk]);
      await refused(
        s.verify(await s.mint(rs, {}, { kid: undefined })),
        'token has no key id (kid) and the issuer has several signing keys',
      );
    });
  });

  describe('the JWKS', () => {
    it('an unknown kid storm makes at most one JWKS request per interval', async () => {
      const s = await setup(null);
      s.issuer = { ...s.issuer, jwksUri: `${s.idp.url}/jwks` };
      const storm = async (): Promise<void> => {
        const tokens = await Promise.all(Array.from({ length: 100 }, () => s.mint({ ...stranger, kid: randomUUID() })));
        await Promise.all(tokens.map((t) => refused(s.verify(t), UNKNOWN_KID)));
      };
      await storm(); // a cold cache: the storm shares the first fetch
      assert.equal(s.idp.hits('/jwks'), 1);
      await storm(); // within the interval: none
      assert.equal(s.idp.hits('/jwks'), 1);
      s.clock.t += REFRESH_MS;
      await storm(); // the next interval: one
      assert.equal(s.idp.hits('/jwks'), 2);
      await s.verify(await s.mint(rs));
      assert.equal(s.idp.hits('/jwks'), 2);
      assert.equal(s.idp.hits('/.well-known/openid-configuration'), 0);
    });

    it('a key added to the JWKS is found on its first token (after the interval)', async () => {
      const s = await setup([rs.jwk]);
      await s.verify(await s.mint(rs));
      s.idp.jwks = { keys: [rs.jwk, rs2.jwk] };
      await refused(s.verify(await s.mint(rs2)), UNKNOWN_KID);
      s.clock.t += REFRESH_MS;
      await s.verify(await s.mint(rs2));
      assert.equal(s.idp.hits('/jwks'), 2);
    });

    it('a key added just after a background refresh is found on its first token (the refresh is no fetch on demand)', async () => {
      const s = await setup([rs.jwk]);
      await s.verify(await s.mint(rs));
      s.clock.t += REFRESH_MS;
      await s.keys.refreshAll();
      s.idp.jwks = { keys: [rs.jwk, rs2.jwk] };
      await s.verify(await s.mint(rs2));
      assert.equal(s.idp.hits('/jwks'), 3);
      await refused(s.verify(await s.mint(stranger)), UNKNOWN_KID); // and the rate holds for the next miss
      assert.equal(s.idp.hits('/jwks'), 3);
    });

    it('a retired key stops verifying after a refresh', async () => {
      const s = await setup([rs.jwk, rs2.jwk]);
      const old = await s.mint(rs);
      await s.verify(old);
      s.idp.jwks = { keys: [rs2.jwk] };
      await s.verify(old); // cached until the refresh
      s.clock.t += REFRESH_MS;
      await s.keys.refreshAll();
      assert.equal(s.keys.knows('idp', 'rs-1'), false);
      assert.equal(s.keys.knows('idp', 'rs-2'), true);
      await refused(s.verify(old), UNKNOWN_KID);
      await s.verify(await s.mint(rs2));
    });

    it('an issuer unreachable with no keys known fails closed', async () => {
      const port = await closedPort();
      const s = await setup(null, { identityAllowlist: `127.0.0.1:${port}` });
      s.issuer = { ...s.issuer, issuer: `http://127.0.0.1:${port}` };
      const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
      assert.match(r.detail ?? '', /ECONNREFUSED/);
      assert.match(s.warnings.join('\n'), /issuer "idp": signing keys not fetched: .*ECONNREFUSED/);
    });

    it('an issuer unreachable at first is asked again sooner while none of its keys is known, never more often', async () => {
      const s = await setup(null);
      s.idp.answer = (_req, res) => res.writeHead(503).end();
      const token = await s.mint(rs);
      await refused(s.verify(token), UNAVAILABLE);
      await refused(s.verify(token), UNAVAILABLE);
      assert.equal(s.idp.hits(), 1, 'one attempt until the retry interval has passed');
      s.idp.answer = null;
      s.clock.t += RETRY_WITHOUT_KEYS_MS;
      await s.verify(token);
      assert.ok(RETRY_WITHOUT_KEYS_MS < REFRESH_MS);
    });

    it('an issuer that goes down or answers garbage keeps its last good keys', async () => {
      const s = await setup(null);
      await s.verify(await s.mint(rs));
      s.idp.answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>');
      s.clock.t += REFRESH_MS;
      await s.keys.refreshAll();
      await s.verify(await s.mint(es));
      assert.match(s.warnings.join('\n'), /JWKS is not JSON; still using the 3 keys fetched before/);
      await s.idp.close();
      s.clock.t += REFRESH_MS;
      await refused(s.verify(await s.mint(stranger)), UNKNOWN_KID);
      await s.verify(await s.mint(ed));
      // Refused: a kept-alive connection the issuer closed as it went down is not what the warning reports.
      assert.match(s.warnings.join('\n'), /ECONNREFUSED; still using the 3 keys/);
      for (const w of s.warnings) assert.doesNotMatch(w, /eyJ/); // no token in the log
    });

    it('a JWKS that never answers is given up after the timeout', async () => {
      const s = await setup(null, { jwksTimeoutMs: 200 });
      s.idp.answer = () => undefined; // holds every request open
      const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
      assert.match(r.detail ?? '', /no answer within/);
    });

    it('an HTML answer, a 5 MB document, a JWKS without keys, a non-200: from discovery or the JWKS', async () => {
      const html = (res: ServerResponse): void => {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      };
      const huge = (res: ServerResponse): void => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(`{"keys":[],"x":"${'x'.repeat(5_000_000)}"}`);
      };
      const cases: [string, (res: ServerResponse) => void][] = [
        ['discovery document is not JSON', html],
        ['discovery document is larger than 256 KiB', huge],
        ['discovery document: HTTP 404', (res) => res.writeHead(404).end()],
        ['JWKS is not JSON', html],
        ['JWKS is larger than 256 KiB', huge],
        ['JWKS is not a JSON object with a keys array', (res) => res.writeHead(200).end('{"keys":{}}')],
        ['JWKS: HTTP 500', (res) => res.writeHead(500).end('{}')],
      ];
      for (const [detail, answer] of cases) {
        const s = await setup(null);
        // The discovery document's cases break it; the JWKS's, with the JWKS URL configured, break the JWKS.
        if (detail.startsWith('JWKS')) s.issuer = { ...s.issuer, jwksUri: `${s.idp.url}/jwks` };
        s.idp.answer = (_req, res) => answer(res);
        const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
        assert.equal(r.detail, detail);
      }
    });

    it('ignores oct keys, encryption keys and private keys', async () => {
      const enc = await signer('RS256', 'enc-1', { use: 'enc' });
      const secret = {
        kty: 'oct',
        k: Buffer.from('a shared secret of 32 bytes, ok!').toString('base64url'),
        kid: 'oct-1',
      };
      const s = await setup([secret, enc.jwk, { ...rs2.jwk, d: 'AAAA' }, rs.jwk]);
      await s.verify(await s.mint(rs));
      assert.equal(s.keys.knows('idp', 'oct-1'), false);
      await refused(s.verify(await s.mint(enc)), UNKNOWN_KID);
      await refused(s.verify(await s.mint(rs2)), UNKNOWN_KID);
      assert.match(s.warnings.join('\n'), /3 of the JWKS's keys are not usable signing keys/);
      const onlyOct = await setup([secret]);
      const r = await refused(onlyOct.verify(await onlyOct.mint(rs)), UNAVAILABLE);
      assert.match(r.detail ?? '', /no usable signing key/);
    });

    it('refuses a discovery document naming another issuer (mix-up)', async () => {
      const s = await setup(null);
      s.idp.discovery = { issuer: 'https://other.example', jwks_uri: `${s.idp.url}/jwks` };
      const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
      assert.match(r.detail ?? '', /names another issuer/);
      assert.equal(s.idp.hits('/jwks'), 0);
    });

    it('refuses a loopback issuer not in the allowlist without a connection', async () => {
      for (const host of ['127.0.0.1', 'localhost']) {
        const s = await setup(null, { identityAllowlist: '' });
        s.issuer = { ...s.issuer, issuer: `https://${host}:${s.idp.port}` };
        const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
        assert.match(r.detail ?? '', /loopback address \(blocked\)/);
        assert.equal(s.idp.connections, 0);
      }
    });

    it('refuses a plain-http issuer or jwks_uri whose host:port is not listed', async () => {
      const s = await setup(null, { identityAllowlist: '127.0.0.1:1' });
      const r = await refused(s.verify(await s.mint(rs)), UNAVAILABLE);
      assert.match(r.detail ?? '', /plain http and its host is not in ARBITER_IDENTITY_ALLOWLIST/);
      assert.equal(s.idp.connections, 0);
      const other = await setup(null);
      other.idp.discovery = { issuer: other.idp.url, jwks_uri: `http://127.0.0.1:${s.idp.port}/jwks` };
      const r2 = await refused(other.verify(await other.mint(rs)), UNAVAILABLE);
      assert.match(r2.detail ?? '', /jwks_uri is plain http/);
      assert.equal(s.idp.connections, 0);
    });

    it('refreshes in the background once started, until stopped', async () => {
      const s = await setup([rs.jwk], { jwksRefreshMs: 10 });
      await s.verify(await s.mint(rs));
      s.idp.jwks = { keys: [rs2.jwk] };
      const stop = s.keys.startRefreshing();
      try {
        await within(
          until(() => !s.keys.knows('idp', 'rs-1')),
          'a background refresh',
        );
      } finally {
        stop();
      }
      assert.ok(s.keys.knows('idp', 'rs-2'));
    });

    it('never lets an error other than a refusal out', async () => {
      const s = await setup(null);
      const token = await s.mint(rs);
      const r = await refused(
        s.verifier.verify(token, () => {
          throw new Error('lookup broke');
        }),
        'token could not be verified',
      );
      assert.match(r.detail ?? '', /lookup broke/);
    });

    it('forgets an issuer, and starts afresh when its configuration changes', async () => {
      const s = await setup(null);
      await s.verify(await s.mint(rs));
      s.keys.forget('idp');
      assert.equal(s.keys.knows('idp', 'rs-1'), false);
      await s.verify(await s.mint(rs));
      assert.equal(s.idp.hits('/jwks'), 2);
      s.issuer = { ...s.issuer, jwksUri: `${s.idp.url}/jwks?v=2` };
      await s.verify(await s.mint(rs));
      assert.equal(s.idp.hits('/jwks'), 3);
    });
  });
});
