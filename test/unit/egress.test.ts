// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { blockedRange } from '../../src/common/net/address-ranges.js';
import { checkUrl, EgressError, egressOpen, egressRequest } from '../../src/common/net/egress.js';
import { capBytes } from '../../src/common/text.js';
import { frame } from '../../src/orchestrator/command-step.js';
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
      ['192.0.2.1', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['240.0.0.1', 'reserved'],
      ['192.88.99.1', 'reserved'],
      ['100::1', 'discard'],
      ['ff02::1', 'multicast'],
      ['fec0::1', 'deprecatedSiteLocal'],
      ['2001:db8::1', 'reserved'],
      ['2001:2::1', 'benchmarking'],
      ['3fff::1', 'reserved'],
    ] as const) {
      assert.equal(blockedRange(addr), range, addr);
    }
    for (const addr of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) assert.equal(blockedRange(addr), null, addr);
  });

  it('classes IPv6 forms that embed an IPv4 address by that IPv4 address', () => {
    for (const [addr, range] of [
      // IPv4-compatible ::a.b.c.d (RFC 4291 §2.5.5.1, deprecated), dotted and hex
      ['::169.254.169.254', 'linkLocal'],
      ['::a9fe:a9fe', 'linkLocal'],
      ['0:0:0:0:0:0:a9fe:a9fe', 'linkLocal'],
      ['::127.0.0.1', 'loopback'],
      ['::7f00:1', 'loopback'],
      ['::10.0.0.1', 'private'],
      ['::a00:1', 'private'],
      ['::100.64.0.1', 'carrierGradeNat'],
      ['::224.0.0.1', 'multicast'],
      ['::255.255.255.255', 'broadcast'],
      ['::0.0.0.2', 'unspecified'],
      ['::2', 'unspecified'],
      ['::240.0.0.1', 'reserved'],
      // ::/128 and ::1/128 stay what they are
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      // IPv4-mapped ::ffff:a.b.c.d (RFC 4291 §2.5.5.2), dotted and hex
      ['::ffff:169.254.169.254', 'linkLocal'],
      ['::ffff:a9fe:a9fe', 'linkLocal'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:0.0.0.0', 'unspecified'],
      // IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 7915)
      ['::ffff:0:169.254.169.254', 'linkLocal'],
      ['::ffff:0:a00:1', 'private'],
      // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052): the translator reaches the embedded address
      ['64:ff9b::169.254.169.254', 'linkLocal'],
      ['64:ff9b::a9fe:a9fe', 'linkLocal'],
      ['64:ff9b::7f00:1', 'loopback'],
      ['64:ff9b::c0a8:101', 'private'],
      // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215): the IPv4 address's place is the operator's choice
      ['64:ff9b:1::808:808', 'nat64LocalUse'],
      ['64:ff9b:1:a9fe:a9fe::', 'nat64LocalUse'],
      // the rest of ::/8 and anything else outside 2000::/3 is not global unicast space
      ['64:ff9b:0:0:1::1', 'reserved'],
      ['::1:0:0:1', 'reserved'],
      ['1::1', 'reserved'],
      ['4000::1', 'reserved'],
      // 6to4 2002:WWXX:YYZZ::/48 (RFC 3056): the embedded address is the tunnel's IPv4 end
      ['2002:a9fe:a9fe::1', 'linkLocal'],
      ['2002:7f00:1::1', 'loopback'],
      ['2002:a00:1:1::1', 'private'],
      ['2002:c000:201::1', 'reserved'],
      // Teredo 2001:0:SSSS:SSSS:flags:port:~CCCC:~CCCC (RFC 4380): server and (obfuscated) client
      ['2001:0:a9fe:a9fe::', 'linkLocal'],
      ['2001:0:4136:e378:8000:63bf:5601:5645', 'linkLocal'], // client ~0x5601:5645 = 169.254.169.186
      ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'], // client 10.0.0.1
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // the usual example: client 192.0.2.45 (TEST-NET-1)
      ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'private'], // server 10.0.0.1, client 8.8.8.8
      // ISATAP interface ids ::0:5efe:a.b.c.d and ::200:5efe:a.b.c.d (RFC 5214)
      ['2001:db8:1:2:0:5efe:a9fe:a9fe', 'reserved'],
      ['2a00:1450:1:2:0:5efe:a9fe:a9fe', 'linkLocal'],
      ['2a00:1450:1:2:200:5efe:7f00:1', 'loopback'],
      ['fd00:1:2:3:0:5efe:a9fe:a9fe', 'linkLocal'],
      ['fd00:1:2:3:0:5efe:a00:1', 'uniqueLocal'],
      // a zone id does not change the class
      ['fe80::1%eth0', 'linkLocal'],
      ['not-an-address', 'invalid address'],
      ['127.1', 'invalid address'],
    ] as const) {
      assert.equal(blockedRange(addr), range, addr);
    }
    for (const addr of [
      '::8.8.8.8',
      '::808:808',
      '::ffff:8.8.8.8',
      '::ffff:0:808:808',
      '64:ff9b::8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo: server 65.54.227.120, client 8.8.8.8
      '2a00:1450:1:2:200:5efe:808:808',
      '2a00:1450:4001:80b::200e',
    ]) {
      assert.equal(blockedRange(addr), null, addr);
    }
  });

  it('opens only the operator-openable classes, however the address is written', () => {
    const open = { allowPrivate: true, allowHosts: new Set<string>() };
    const closed = { allowPrivate: false, allowHosts: new Set<string>() };
    const refusedUrl = (url: string, policy: typeof open, re: RegExp) =>
      assert.throws(
        () => checkUrl(url, policy),
        (e: unknown) => e instanceof EgressError && e.code === 'blocked' && re.test(e.message),
        url,
      );
    // The URL parser writes ::169.254.169.254 as ::a9fe:a9fe: both are the metadata address, never reachable.
    for (const url of [
      'http://[::169.254.169.254]/latest/meta-data/',
      'http://[::a9fe:a9fe]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:0:169.254.169.254]/',
      'http://[64:ff9b::169.254.169.254]/',
      'http://[2002:a9fe:a9fe::1]/',
      'http://[64:ff9b:1::a9fe:a9fe]/',
    ]) {
      refusedUrl(url, open, /is a (linkLocal|nat64LocalUse) address \(blocked\)/);
    }
    refusedUrl('http://[::127.0.0.1]:8080/', closed, /::7f00:1 is a loopback address \(blocked\)/);
    refusedUrl('http://[64:ff9b::10.0.0.1]/', closed, /is a private address \(blocked\)/);
    // Private and loopback classes open with the operator's switch, as their IPv4 forms do.
    assert.equal(checkUrl('http://[::127.0.0.1]:8080/', open).port, '8080');
    assert.equal(checkUrl('http://[64:ff9b::10.0.0.1]/', open).hostname, '[64:ff9b::a00:1]');
    assert.equal(checkUrl('http://[64:ff9b::8.8.8.8]/', closed).hostname, '[64:ff9b::808:808]');
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

  it('reuses a connection for the next request under an equal policy, checked once when it was made', async () => {
    let connections = 0;
    const server = createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://localhost:${(server.address() as AddressInfo).port}/`;
    const policy = () => ({ allowPrivate: true, allowHosts: new Set(['example.test']) });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await egressRequest(url, policy(), { timeoutMs: 2000, maxBytes: 100 });
        assert.equal(res.body.toString(), 'ok');
      }
      assert.equal(connections, 1, 'three requests, one connection');
      const other = { allowPrivate: true, allowHosts: new Set<string>() };
      await egressRequest(url, other, { timeoutMs: 2000, maxBytes: 100 });
      assert.equal(connections, 2, 'another policy: a connection of its own');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("a streamed request: no head in time is a timeout, the caller's abort a cancel before the head and the end of the body after it", async () => {
    // `/silent` never answers; `/stream` sends its head and a first event, then stays open.
    const server = createServer((req, res) => {
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: 1\n\n');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const policy = { allowPrivate: true, allowHosts: new Set<string>() };
    try {
      await assert.rejects(
        egressOpen(`${base}/silent`, policy, { timeoutMs: 200 }),
        (err: unknown) => err instanceof EgressError && err.code === 'timeout',
      );
      const cancel = new AbortController();
      const waiting = egressOpen(`${base}/silent`, policy, { timeoutMs: 60_000, signal: cancel.signal });
      cancel.abort();
      await assert.rejects(waiting, (err: unknown) => err instanceof EgressError && err.code === 'cancelled');
      // The head's timeout bounds the head only: the body is the caller's to end.
      const caller = new AbortController();
      const open = await egressOpen(`${base}/stream`, policy, { timeoutMs: 200, signal: caller.signal });
      assert.equal(open.status, 200);
      const first = (await once(open.body, 'data')) as [Buffer];
      assert.equal(first[0].toString(), 'data: 1\n\n');
      // Twice the head's timeout later, the body is still open (a timer kept past the head would have cut it).
      await sleep(400);
      assert.equal(open.body.destroyed, false);
      const ended = once(open.body, 'error');
      caller.abort();
      const [why] = (await ended) as [Error];
      assert.match(why.message, /aborted/);
      assert.equal(open.body.readableEnded, false, 'ended by the caller, not by the server');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('sends a GET again when its pooled connection was closed by the server, never a POST', async () => {
    let connections = 0;
    const server = createServer((req, res) => res.end(req.method));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const policy = { allowPrivate: true, allowHosts: new Set<string>() };
    const get = () => egressRequest(url, policy, { timeoutMs: 2000, maxBytes: 100 });
    const post = () => egressRequest(url, policy, { method: 'POST', body: '{}', timeoutMs: 2000, maxBytes: 100 });
    try {
      assert.equal((await get()).body.toString(), 'GET');
      // The server drops its idle connections; the request goes out before this side has read the close.
      server.closeAllConnections();
      assert.equal((await get()).body.toString(), 'GET', 'sent again on a new connection');
      assert.equal(connections, 2);
      // A POST may have reached the server before the reset: it is not sent twice, the caller is told.
      server.closeAllConnections();
      await assert.rejects(
        post(),
        (err: EgressError) => err.code === 'transport' && /ECONNRESET|EPIPE/.test(err.message),
      );
      assert.equal(connections, 2);
      assert.equal((await post()).body.toString(), 'POST');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('drops credentials, and every header but the plain ones, when a redirect leaves the origin', async () => {
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
          headers: {
            authorization: 'Bearer secret',
            cookie: 'a=b',
            accept: 'text/plain',
            'A2A-Version': '1.0',
            // A credential of the `header` type, an MCP server's own header: meant for the first origin only.
            'X-Api-Key': 'key-secret',
            // Issued by the server the request is moved to: it goes on.
            'mcp-session-id': 's1',
          },
        },
      );
      assert.equal(res.body.toString(), 'ok');
      assert.equal(seen[0]?.authorization, 'Bearer secret');
      assert.equal(seen[0]?.['x-api-key'], 'key-secret');
      assert.equal(seen[1]?.authorization, undefined);
      assert.equal(seen[1]?.cookie, undefined);
      assert.equal(seen[1]?.['x-api-key'], undefined);
      assert.equal(seen[1]?.['mcp-session-id'], 's1');
      assert.equal(seen[1]?.accept, 'text/plain');
      assert.equal(seen[1]?.['a2a-version'], '1.0');
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
