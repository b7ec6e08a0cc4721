// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TaskState, type Task } from '@a2a-js/sdk';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { textMessage, v1Client } from '../helpers/a2a.js';
import { startGrpcUpstream, type TranslationUpstream } from '../helpers/translation-upstreams.js';

/**
 * A gRPC-only upstream goes through the egress guard as an HTTP one does (docs/gateway.md, "gRPC upstreams"). Its
 * card is fetched over HTTP first, through the same guard, so with allow-private off (the default) a loopback
 * upstream is refused at its card, before its gRPC interface is known; the gRPC address check itself is reached end
 * to end with allow-private on, by cards that name the upstream's gRPC port at addresses no setting opens.
 * The resolution of names (every answer checked) is covered in test/unit/egress-grpc.test.ts.
 */

/** Serves the upstream's card at `/<variant>/agent-card.json`, its gRPC interface at the variant's address. */
async function startCardServer(card: Record<string, any>, interfaces: Record<string, string>): Promise<Server> {
  const server = createServer((req, res) => {
    const variant = /^\/([^/]+)\/agent-card\.json$/.exec(req.url ?? '')?.[1];
    const url = variant ? interfaces[variant] : undefined;
    if (!url) return void res.writeHead(404).end();
    const iface = { ...card.supportedInterfaces[0], url };
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ...card, supportedInterfaces: [iface] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

const registry = (home: string, agents: Record<string, string>): void =>
  writeFileSync(
    join(home, 'a2a_agents.json'),
    JSON.stringify({ agents: Object.fromEntries(Object.entries(agents).map(([n, url]) => [n, { url }])) }),
  );

describe('gRPC upstreams through the egress guard', () => {
  let upstream: TranslationUpstream;
  let grpcPort = '';
  let cards: Server;
  let cardsUrl = '';

  /** Every gRPC call the upstream saw (its user builder runs once per call), and every message it ran. */
  const seen = () => ({ calls: upstream.authorizations.length, messages: upstream.received.length });

  before(async () => {
    upstream = await startGrpcUpstream();
    const card = (await (await fetch(`${upstream.url}/agent-card.json`)).json()) as Record<string, any>;
    grpcPort = String(/:(\d+)$/.exec(card.supportedInterfaces[0].url as string)?.[1]);
    cards = await startCardServer(card, {
      control: `127.0.0.1:${grpcPort}`,
      // Connecting to 0.0.0.0 reaches this machine's own listeners: never reachable, whatever the setting.
      unspecified: `0.0.0.0:${grpcPort}`,
      metadata: `169.254.169.254:${grpcPort}`,
      'mapped-metadata': `grpc://[::ffff:169.254.169.254]:${grpcPort}`,
    });
    cardsUrl = `http://127.0.0.1:${(cards.address() as AddressInfo).port}`;
  });
  after(async () => {
    await upstream?.close();
    cards?.closeAllConnections();
    await new Promise<void>((r) => (cards ? cards.close(() => r()) : r()));
  });

  const send = async (server: TestServer, t: TestTenant, agent: string, text: string): Promise<Task> =>
    (await (await v1Client(server.url, t.token, agent)).sendMessage(textMessage(text))) as Task;

  describe('with allow-private off (the default)', () => {
    let server: TestServer;
    let t: TestTenant;

    before(async () => {
      server = await startTestServer({
        prepareHome: (home) =>
          registry(home, {
            'grpc-only': upstream.url,
            'grpc-only-named': `http://localhost:${new URL(upstream.url).port}`,
          }),
      });
      t = await newTenant(server, 'grpc-strict');
      await newAgent(t, { id: 'grpc-only', backend: { remote: 'grpc-only', registry: 'shared' } });
      await newAgent(t, { id: 'grpc-only-named', backend: { remote: 'grpc-only-named', registry: 'shared' } });
    });
    after(async () => {
      await server?.close();
    });

    it('a remote-backed agent on a gRPC-only upstream on loopback is refused by the egress guard, and the upstream sees no gRPC call', async () => {
      const was = seen();
      // Its card is on loopback too: the guard refuses it there, before the gRPC interface is known.
      await assert.rejects(
        send(server, t, 'grpc-only', 'hello'),
        /upstream: card fetch failed: 127\.0\.0\.1 is a loopback address \(blocked\)/,
      );
      await assert.rejects(
        send(server, t, 'grpc-only-named', 'hello'),
        /upstream: card fetch failed: localhost resolves to a loopback address \(blocked\)/,
      );
      assert.deepEqual(seen(), was, 'no gRPC call reached the upstream');
    });
  });

  describe('with allow-private on', () => {
    let server: TestServer;
    let t: TestTenant;

    before(async () => {
      server = await startTestServer({
        env: { ARBITER_A2A_ALLOW_PRIVATE: 'true' },
        prepareHome: (home) =>
          registry(home, {
            control: `${cardsUrl}/control`,
            unspecified: `${cardsUrl}/unspecified`,
            metadata: `${cardsUrl}/metadata`,
            'mapped-metadata': `${cardsUrl}/mapped-metadata`,
          }),
      });
      t = await newTenant(server, 'grpc-open');
      for (const name of ['control', 'unspecified', 'metadata', 'mapped-metadata']) {
        await newAgent(t, { id: name, backend: { remote: name, registry: 'shared' } });
      }
    });
    after(async () => {
      await server?.close();
    });

    it('the card on loopback is had, and its gRPC interface at a never-open address is refused: the upstream sees no gRPC call', async () => {
      // The control: the same card server, the gRPC interface at the upstream's loopback address, is reached.
      let was = seen();
      const done = await send(server, t, 'control', 'hello');
      assert.equal(TaskState[done.status!.state], 'TASK_STATE_COMPLETED');
      assert.ok(seen().calls > was.calls && seen().messages === was.messages + 1, 'the control reached the upstream');
      was = seen();
      // The card was had; the address of its interface is what is refused, before the client exists.
      for (const [agent, refused] of [
        ['unspecified', '0.0.0.0 is a unspecified address (blocked)'],
        ['metadata', '169.254.169.254 is a linkLocal address (blocked)'],
        ['mapped-metadata', '::ffff:a9fe:a9fe is a linkLocal address (blocked)'],
      ] as const) {
        await assert.rejects(send(server, t, agent, 'hello'), (err: Error) => {
          assert.equal(err.message, `upstream: card fetch failed: no usable interface in the card (${refused})`, agent);
          return true;
        });
      }
      assert.deepEqual(seen(), was, 'no gRPC call reached the upstream');
    });
  });
});
