// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { AgentCard, GetTaskRequest } from '@a2a-js/sdk';
import { EgressError, type EgressPolicy } from '../../src/common/net/egress.js';
import { credentialFor, EgressGrpcTransportFactory, type ResolveAll } from '../../src/a2a-outbound/egress-grpc.js';
import type { Credential } from '../../src/outbound-auth/credentials.js';

/**
 * The gRPC transport of a gRPC-only remote goes through the same egress guard as HTTP (docs/gateway.md,
 * "gRPC upstreams"): every address its host resolves to is checked against the same ranges, and nothing is
 * connected to when one is refused. Public addresses appear here only as resolver answers: none is ever
 * connected to (asserted below, and the loopback-only tripwire fails the run on any connection off loopback).
 */

const closed: EgressPolicy = { allowPrivate: false, allowHosts: new Set() };
const open: EgressPolicy = { allowPrivate: true, allowHosts: new Set() };

const cardFor = (url: string): AgentCard =>
  AgentCard.fromJSON({
    name: 'grpc-only',
    description: 'reached over gRPC only',
    supportedInterfaces: [{ url, protocolBinding: 'GRPC', protocolVersion: '1.0' }],
    version: '1',
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });

/** A resolver answering from a table, recording the names it was asked for. */
function resolver(answers: Record<string, string[]>): ResolveAll & { asked: string[] } {
  const asked: string[] = [];
  const resolve = (host: string) => {
    asked.push(host);
    const list = answers[host];
    if (!list) return Promise.reject(Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
    return Promise.resolve(list.map((address) => ({ address, family: net.isIP(address) })));
  };
  return Object.assign(resolve, { asked });
}

/** Every TCP connection this process attempts (`host:port`), at the socket layer grpc-js connects through. */
const attempted: string[] = [];
// Kept unbound on purpose: it is called with each socket as `this` below.
// eslint-disable-next-line @typescript-eslint/unbound-method
const connect = net.Socket.prototype.connect;

const refusedBlocked = (re: RegExp) => (e: unknown) =>
  e instanceof EgressError && e.code === 'blocked' && re.test(e.message);

describe('gRPC egress guard: the address of a gRPC-only upstream', () => {
  /** A loopback listener standing in for an upstream: it counts connections and drops them. */
  let upstream: net.Server;
  let port = 0;
  let connections = 0;

  before(async () => {
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
      const first = (Array.isArray(args[0]) ? args[0][0] : args[0]) as
        { host?: string; port?: number | string; path?: string } | undefined;
      if (first && typeof first === 'object' && typeof first.path !== 'string') {
        attempted.push(`${first.host ?? 'localhost'}:${String(first.port)}`);
      }
      return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
    };
    upstream = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as AddressInfo).port;
  });
  after(async () => {
    net.Socket.prototype.connect = connect;
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it('refuses loopback, private, metadata, IPv6 loopback and IPv4-mapped loopback literals, connecting to nothing', async () => {
    const resolve = resolver({});
    const factory = new EgressGrpcTransportFactory(closed, undefined, 5_000, resolve);
    const from = attempted.length;
    for (const [endpoint, re] of [
      [`127.0.0.1:${port}`, /^127\.0\.0\.1 is a loopback address \(blocked\)$/],
      [`grpc://127.0.0.1:${port}`, /^127\.0\.0\.1 is a loopback address \(blocked\)$/],
      [`10.0.0.1:${port}`, /^10\.0\.0\.1 is a private address \(blocked\)$/],
      [`grpcs://10.0.0.1:${port}`, /^10\.0\.0\.1 is a private address \(blocked\)$/],
      [`169.254.169.254:${port}`, /^169\.254\.169\.254 is a linkLocal address \(blocked\)$/],
      [`[::1]:${port}`, /^::1 is a loopback address \(blocked\)$/],
      // IPv4-mapped loopback, however it is written (the URL parser writes it in hex).
      [`[::ffff:127.0.0.1]:${port}`, /^::ffff:7f00:1 is a loopback address \(blocked\)$/],
      [`[::ffff:7f00:1]:${port}`, /^::ffff:7f00:1 is a loopback address \(blocked\)$/],
      // 127.0.0.1 written as a number.
      [`2130706433:${port}`, /^127\.0\.0\.1 is a loopback address \(blocked\)$/],
    ] as const) {
      await assert.rejects(factory.create(endpoint, cardFor(endpoint)), refusedBlocked(re), endpoint);
    }
    // The metadata address stays closed with allow-private on.
    const lenient = new EgressGrpcTransportFactory(open, undefined, 5_000, resolve);
    const metadata = `169.254.169.254:${port}`;
    await assert.rejects(lenient.create(metadata, cardFor(metadata)), refusedBlocked(/linkLocal address/));
    assert.deepEqual(resolve.asked, [], 'a literal address is not resolved');
    assert.deepEqual(attempted.slice(from), [], 'no connection was attempted');
    assert.equal(connections, 0, 'the loopback upstream saw no connection');
  });

  it('refuses a name resolving to one blocked address among public ones, whichever place it has', async () => {
    const resolve = resolver({
      'private.example': ['8.8.8.8', '10.0.0.1', '1.1.1.1'],
      'metadata.example': ['2606:4700:4700::1111', '8.8.8.8', '169.254.169.254'],
      'loopback.example': ['127.0.0.1', '1.1.1.1'],
      'v6-loopback.example': ['2606:4700:4700::1111', '::1'],
      'mapped.example': ['1.1.1.1', '::ffff:127.0.0.1'],
    });
    const factory = new EgressGrpcTransportFactory(closed, undefined, 5_000, resolve);
    const from = attempted.length;
    for (const [host, range] of [
      ['private.example', 'private'],
      ['metadata.example', 'linkLocal'],
      ['loopback.example', 'loopback'],
      ['v6-loopback.example', 'loopback'],
      ['mapped.example', 'loopback'],
    ] as const) {
      for (const endpoint of [`${host}:${port}`, `grpcs://${host}`, `https://${host}:8443`]) {
        await assert.rejects(
          factory.create(endpoint, cardFor(endpoint)),
          refusedBlocked(new RegExp(`^${host.replace(/\./g, '\\.')} resolves to a ${range} address \\(blocked\\)$`)),
          endpoint,
        );
      }
    }
    assert.equal(resolve.asked.length, 15, 'each endpoint was resolved');
    // The metadata address among public ones is refused with allow-private on too.
    const lenient = new EgressGrpcTransportFactory(open, undefined, 5_000, resolve);
    const endpoint = `metadata.example:${port}`;
    await assert.rejects(lenient.create(endpoint, cardFor(endpoint)), refusedBlocked(/linkLocal address/));
    // A name that does not resolve is not reached either.
    const unknown = `nowhere.example:${port}`;
    await assert.rejects(
      factory.create(unknown, cardFor(unknown)),
      (e: unknown) => e instanceof EgressError && e.code === 'dns',
    );
    assert.deepEqual(attempted.slice(from), [], 'no connection was attempted, to a public answer or any other');
    assert.equal(connections, 0, 'the loopback upstream saw no connection');
  });

  it('connects to the address it checked, resolving again for each transport (no answer kept)', async () => {
    const answers: Record<string, string[]> = { 'upstream.example': ['127.0.0.1'] };
    const resolve: ResolveAll = (host) => resolver(answers)(host);
    // Allow-private on opens loopback: the control that shows a connection is seen when one is made.
    const factory = new EgressGrpcTransportFactory(open, undefined, 5_000, resolve);
    const endpoint = `upstream.example:${port}`;
    const transport = await factory.create(endpoint, cardFor(endpoint));
    const from = attempted.length;
    await assert.rejects(transport.getTask(GetTaskRequest.fromJSON({ id: 'any' })));
    const made = attempted.slice(from);
    assert.ok(made.length > 0 && made.every((a) => a === `127.0.0.1:${port}`), made.join(', '));
    assert.ok(connections > 0, 'the loopback upstream was reached');
    // The name now also resolves to the metadata address: the next transport is refused, nothing connects.
    answers['upstream.example'] = ['127.0.0.1', '169.254.169.254'];
    const seen = connections;
    const later = attempted.length;
    await assert.rejects(factory.create(endpoint, cardFor(endpoint)), refusedBlocked(/linkLocal address/));
    assert.deepEqual(attempted.slice(later), []);
    assert.equal(connections, seen);
  });
});

describe("gRPC: the remote's credential goes to its own host only", () => {
  it('an interface on the host of its url, on any port, gets it; one on another host a card names does not', () => {
    const credential = { tls: undefined } as unknown as Credential;
    const owner = { credential, host: 'agent.example' };
    assert.equal(credentialFor('agent.example', owner), credential);
    assert.equal(credentialFor('AGENT.example', owner), credential);
    assert.equal(credentialFor('cards.attacker.example', owner), undefined);
    assert.equal(credentialFor('agent.example.attacker.example', owner), undefined);
    assert.equal(credentialFor('agent.example', undefined), undefined);
    const v6 = { credential, host: '[::1]' };
    assert.equal(credentialFor('::1', v6), credential);
    assert.equal(credentialFor('127.0.0.1', v6), undefined);
  });
});
