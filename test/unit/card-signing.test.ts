// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import type { JWK } from 'jose';
import { fullCanonical, withoutDefaults } from '../../src/common/card-signing/card-canonical.js';
import { readPublicKeys, readSigningKey, type PublicCardKey } from '../../src/common/card-signing/card-keys.js';
import { signedForms, signPayload, verifyCard } from '../../src/common/card-signing/card-signature.js';
import { parseRegistry } from '../../src/a2a-outbound/remote-registry.service.js';
import { cardEtag, etagMatches } from '../../src/a2a-inbound/services/card-etag.js';
import { headersOf, newKeyPair, verifyIndependently, verifyWithSdk } from '../helpers/card-signatures.js';

type Json = Record<string, unknown>;

const card: Json = {
  name: 'Example Agent',
  description: 'Finds things',
  supportedInterfaces: [{ url: 'https://a.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  version: '1',
  capabilities: { streaming: false, pushNotifications: true, extensions: [] },
  securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
  securityRequirements: [{ schemes: { bearer: {} } }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'find', name: 'find', description: 'finds', tags: ['x'] }],
};

async function signed(c: Json, pem: string): Promise<Json> {
  const key = await readSigningKey(pem);
  return {
    ...c,
    signatures: await Promise.all(signedForms(c).map((f) => signPayload(f, key, 'https://a.example/jwks'))),
  };
}

async function publicOf(pem: string): Promise<{ keys: PublicCardKey[]; jwks: { keys: JWK[] } }> {
  const keys = await readPublicKeys(pem);
  return { keys, jwks: { keys: keys.map((k) => k.jwk) } };
}

const pem = (kind: 'ES256' | 'RS256' | 'EdDSA') =>
  newKeyPair(kind).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

describe('card canonical form (§8.4.1)', () => {
  it('drops defaults and signatures, keeps false, and sorts keys (RFC 8785): the spec example', () => {
    const example = {
      name: 'Example Agent',
      description: '',
      capabilities: { streaming: false, pushNotifications: false, extensions: [] },
      skills: [],
      signatures: [{ protected: 'x', signature: 'y' }],
    };
    // The spec keeps the REQUIRED "" and [] ("include"); like the SDKs, every empty value is dropped here.
    assert.equal(
      fullCanonical(example),
      '{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}',
    );
    assert.deepEqual(withoutDefaults({ a: { b: [{}], c: null }, d: 0 }), { d: 0 });
  });

  it('RFC 8785 numbers and strings', () => {
    assert.equal(
      fullCanonical({ n: 1e21, f: 0.1, s: '€\u0001', b: true }),
      '{"b":true,"f":0.1,"n":1e+21,"s":"€\\u0001"}',
    );
  });

  it('a v1.0 card has one canonical form; a v0.3-shaped one two (the whole card, and its v1.0 fields)', () => {
    assert.equal(signedForms(card).length, 1);
    const compat = { ...card, url: 'https://a.example/rpc', protocolVersion: '0.3.0', preferredTransport: 'JSONRPC' };
    const forms = signedForms(compat);
    assert.equal(forms.length, 2);
    assert.match(forms[0], /"preferredTransport":"JSONRPC"/);
    assert.doesNotMatch(forms[1], /preferredTransport/);
  });
});

describe('card signatures (§8.4.2, §8.4.3)', () => {
  for (const kind of ['ES256', 'RS256', 'EdDSA'] as const) {
    it(`${kind}: signs with alg, typ JOSE, kid (the thumbprint) and jku; verifies three ways`, async () => {
      const key = pem(kind);
      const { keys, jwks } = await publicOf(key);
      const s = await signed(card, key);
      const [h] = headersOf(s);
      assert.deepEqual(h, { alg: kind, typ: 'JOSE', kid: keys[0].kid, jku: 'https://a.example/jwks' });
      assert.equal(await verifyCard(s, keys), keys[0].kid);
      assert.equal(await verifyIndependently(s, jwks), keys[0].kid);
      await verifyWithSdk(s, jwks);
    });
  }

  it('a v0.3-shaped card verifies as a whole and, for the SDK, by its v1.0 fields', async () => {
    const key = pem('ES256');
    const { keys, jwks } = await publicOf(key);
    const s = await signed({ ...card, url: 'https://a.example/rpc', protocolVersion: '0.3.0' }, key);
    await verifyWithSdk(s, jwks);
    await verifyIndependently(s, jwks);
    await verifyCard(s, keys);
    // Its top-level url is what a v0.3 client calls: changing it breaks the whole-card signature, the one we accept.
    await assert.rejects(
      verifyCard({ ...s, url: 'https://evil.example/rpc' }, keys),
      /does not match the card's content/,
    );
  });

  it('refuses: unsigned, tampered, another key, an unknown kid', async () => {
    const key = pem('ES256');
    const { keys } = await publicOf(key);
    const s = await signed(card, key);
    await assert.rejects(verifyCard(card, keys), /the card is not signed/);
    await assert.rejects(verifyCard({ ...s, description: 'changed' }, keys), /does not match the card's content/);
    const other = await publicOf(pem('ES256'));
    await assert.rejects(verifyCard(s, other.keys), /no pinned key has kid/);
    const sameKid = other.keys.map((k) => ({ ...k, kid: keys[0].kid }));
    await assert.rejects(verifyCard(s, sameKid), /does not match the card's content/);
    await assert.rejects(verifyCard({ ...s, signatures: 'x' }, keys), /"signatures" is not a list/);
  });
});

describe('card keys', () => {
  it('reads a private JWK with its kid, and refuses symmetric, public-only, weak and other-curve keys', async () => {
    const { privateKey } = newKeyPair('EdDSA');
    const k = await readSigningKey(JSON.stringify({ ...privateKey.export({ format: 'jwk' }), kid: 'ed-1' }));
    assert.equal(k.kid, 'ed-1');
    assert.equal(k.alg, 'EdDSA');
    assert.equal(k.publicJwk.d, undefined);
    await assert.rejects(readSigningKey('{"kty":"oct","k":"c2VjcmV0"}'), /symmetric keys \(kty "oct"\) are refused/);
    const pub = newKeyPair('ES256').publicKey.export({ format: 'jwk' });
    await assert.rejects(readSigningKey(JSON.stringify(pub)), /signing needs the private key/);
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    await assert.rejects(readSigningKey(weak as string), /2048 bits/);
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    await assert.rejects(readSigningKey(p384 as string), /P-256/);
    await assert.rejects(readSigningKey('not a key'), /PEM private key \(PKCS#8\) or a private JWK/);
  });

  it('previous keys: a JWKS, a JWK or PEM, only public halves kept; a symmetric member refused', async () => {
    const { privateKey } = newKeyPair('ES256');
    const [fromPrivatePem] = await readPublicKeys(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    assert.equal(fromPrivatePem.jwk.d, undefined);
    const [fromJwk] = await readPublicKeys(JSON.stringify({ ...privateKey.export({ format: 'jwk' }), kid: 'p' }));
    assert.equal(fromJwk.kid, 'p');
    assert.equal(fromJwk.jwk.d, undefined);
    await assert.rejects(readPublicKeys('{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}'), /key 1: symmetric keys/);
  });
});

describe('card_signature in a2a_agents.json', () => {
  const entry = (card_signature: unknown) =>
    JSON.stringify({ agents: { r: { url: 'https://r.example/a2a', card_signature } } });
  const jwk = newKeyPair('ES256').publicKey.export({ format: 'jwk' });

  it('reads jwks_url or jwk; required defaults to true', () => {
    const a = parseRegistry(entry({ jwks_url: 'https://r.example/jwks.json' }), {}).agents.get('r');
    assert.deepEqual(a?.cardSignature, { jwksUrl: 'https://r.example/jwks.json', required: true });
    const b = parseRegistry(entry({ jwk, required: false }), {}).agents.get('r');
    assert.deepEqual(b?.cardSignature, { jwk, required: false });
  });

  it('refuses a bad pin, naming the field', () => {
    const bad: [unknown, RegExp][] = [
      [{}, /agents\.r\.card_signature: give jwks_url or jwk \(one of them\)/],
      [{ jwks_url: 'https://x/j', jwk }, /give jwks_url or jwk/],
      [{ jwks_url: 'ftp://x/j' }, /agents\.r\.card_signature\.jwks_url must be an absolute http\(s\) URL/],
      [
        { jwk: { kty: 'oct', k: 'c2VjcmV0' } },
        /agents\.r\.card_signature\.jwk symmetric keys \(kty "oct"\) are refused/,
      ],
      [{ jwk: newKeyPair('ES256').privateKey.export({ format: 'jwk' }) }, /card_signature\.jwk must be a public key/],
      [{ jwk: { ...jwk, alg: 'RS256' } }, /alg must be ES256/],
      [{ jwk, required: 'yes' }, /card_signature\.required must be true or false/],
      [{ jwk, trust: 1 }, /card_signature: unknown field "trust"/],
      ['x', /card_signature must be an object/],
    ];
    for (const [value, problem] of bad) assert.throws(() => parseRegistry(entry(value), {}), problem);
  });
});

describe("a served card's ETag", () => {
  it('is one for one card signed twice with one ES256 key (two replicas), and weak; another card, another ETag', async () => {
    const key = pem('ES256');
    const [a, b] = [await signed(card, key), await signed(card, key)];
    assert.notDeepEqual(a.signatures, b.signatures, 'ES256 signatures are randomised');
    const etag = cardEtag(a, JSON.stringify(a));
    assert.match(etag, /^W\/"[\w-]{27}"$/);
    assert.equal(cardEtag(b, JSON.stringify(b)), etag);
    const renamed = await signed({ ...card, name: 'Another' }, key);
    assert.notEqual(cardEtag(renamed, JSON.stringify(renamed)), etag);
    const otherKey = await signed(card, pem('ES256'));
    assert.notEqual(cardEtag(otherKey, JSON.stringify(otherKey)), etag, 'another key: another protected header');
  });

  it('is strong over the bytes for an unsigned card; If-None-Match compares weakly, lists and * included', () => {
    const etag = cardEtag(card, JSON.stringify(card));
    assert.match(etag, /^"[\w-]{27}"$/);
    assert.notEqual(cardEtag(card, JSON.stringify({ ...card, version: '2' })), etag);
    assert.ok(etagMatches(etag, etag));
    assert.ok(etagMatches(`W/${etag}`, etag));
    assert.ok(etagMatches(`"other", ${etag}`, etag));
    assert.ok(etagMatches('*', etag));
    assert.ok(etagMatches(etag.replace('"', 'W/"'), `W/${etag}`));
    assert.ok(!etagMatches('"other"', etag));
    assert.ok(!etagMatches(undefined, etag));
  });
});
