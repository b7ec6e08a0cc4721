import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { blockedRange, checkUrl, EgressError, egressRequest } from '../../src/common/net/egress.js';
import { capBytes } from '../../src/common/text.js';
import { frame } from '../../src/orchestrator/turn-loop.js';
import { sanitizePath } from '../../src/orchestrator/tools/files.js';

describe('egress guard', () => {
  it('allows only public unicast addresses', () => {
    for (const [addr, range] of [
      ['127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'linkLocal'],
      ['100.64.0.1', 'carrierGradeNat'],
      ['224.0.0.1', 'multicast'],
      ['0.0.0.0', 'unspecified'],
      ['255.255.255.255', 'broadcast'],
      ['::1', 'loopback'],
      ['fd00:ec2::254', 'uniqueLocal'],
      ['fe80::1', 'linkLocal'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:10.0.0.1', 'private'],
    ] as const) {
      assert.equal(blockedRange(addr), range, addr);
    }
    for (const addr of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) assert.equal(blockedRange(addr), null, addr);
  });

  it('checks URLs before connecting: scheme, credentials, literal addresses', () => {
    const policy = { allowPrivate: false, allowHosts: new Set<string>(['127.0.0.1:9999']) };
    const refused = (url: string, re: RegExp) =>
      assert.throws(
        () => checkUrl(url, policy),
        (e: unknown) => e instanceof EgressError && re.test(e.message),
      );
    refused('ftp://example.com/', /scheme ftp is not allowed/);
    refused('http://user:pw@example.com/', /credentials/);
    refused('http://127.0.0.1:8080/', /loopback/);
    refused('http://[::1]/', /loopback/);
    refused('http://2130706433/', /loopback/); // 127.0.0.1 written as a number
    refused('not a url', /not a valid URL/);
    assert.equal(checkUrl('http://127.0.0.1:9999/x', policy).port, '9999');
    assert.equal(checkUrl('https://example.com/', policy).hostname, 'example.com');
  });
});

describe('egress over real sockets', () => {
  it('never reuses a connection opened under a looser policy (each request is checked again)', async () => {
    const server = createServer((_req, res) => res.end('internal'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://localhost:${(server.address() as AddressInfo).port}/`;
    try {
      const open = await egressRequest(
        url,
        { allowPrivate: true, allowHosts: new Set() },
        { timeoutMs: 2000, maxBytes: 100 },
      );
      assert.equal(open.body.toString(), 'internal');
      await assert.rejects(
        egressRequest(url, { allowPrivate: false, allowHosts: new Set() }, { timeoutMs: 2000, maxBytes: 100 }),
        (e: unknown) => e instanceof EgressError && e.code === 'blocked',
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('drops credentials when a redirect leaves the origin', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const target = createServer((req, res) => {
      seen.push(req.headers);
      res.end('ok');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/landing`;
    const hop = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(302, { location: targetUrl });
      res.end();
    });
    await new Promise<void>((r) => hop.listen(0, '127.0.0.1', r));
    try {
      const res = await egressRequest(
        `http://127.0.0.1:${(hop.address() as AddressInfo).port}/start`,
        { allowPrivate: true, allowHosts: new Set() },
        {
          timeoutMs: 2000,
          maxBytes: 100,
          headers: { authorization: 'Bearer secret', cookie: 'a=b', accept: 'text/plain' },
        },
      );
      assert.equal(res.body.toString(), 'ok');
      assert.equal(seen[0]?.authorization, 'Bearer secret');
      assert.equal(seen[1]?.authorization, undefined);
      assert.equal(seen[1]?.cookie, undefined);
      assert.equal(seen[1]?.accept, 'text/plain');
      await assert.rejects(
        egressRequest(
          'http://127.0.0.1:1/',
          { allowPrivate: true, allowHosts: new Set() },
          { timeoutMs: 2000, maxBytes: 1 },
        ),
        (e: unknown) => e instanceof EgressError && e.code === 'transport',
      );
    } finally {
      for (const s of [hop, target]) {
        s.closeAllConnections();
        s.close();
      }
    }
  });
});

describe('tool results', () => {
  it('frames and caps results on a character boundary', () => {
    assert.equal(frame('mem', 'list', 'x'), '[/mem list]\nx\n[END MEM]');
    const capped = capBytes('é'.repeat(100), 51);
    assert.ok(Buffer.byteLength(capped) <= 51);
    assert.ok(capped.endsWith('\n... [truncated]'));
    assert.ok(!capped.includes('\uFFFD'));
    assert.equal(capBytes('short', 100), 'short');
  });

  it('sanitises /write paths', () => {
    assert.deepEqual(sanitizePath('./notes/a.md'), { path: 'notes/a.md' });
    assert.deepEqual(sanitizePath('/abs/path.txt'), { path: 'abs/path.txt' });
    assert.deepEqual(sanitizePath('dir\\win.txt'), { path: 'dir/win.txt' });
    for (const bad of ['', '../x', 'a/../../b', 'a//b', 'a/./b', 'con:x', 'tab\there', 'x'.repeat(201)]) {
      assert.ok('error' in sanitizePath(bad), bad);
    }
  });
});
