// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { a2a, readSse, rpc, waitFor, type SseEvent, answerOf } from '../helpers/a2a.js';
import { Barrier, PATIENCE_MS, stall } from '../helpers/patience.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** A loopback web server for /fetch: a page, a slow page, a redirect into a blocked address. */
async function startPages(
  blockedPort: () => number,
): Promise<{ server: Server; url: string; slowStarted: () => number; slowClosed: () => number }> {
  let closed = 0;
  let slowStarted = 0;
  const server = createServer((req, res) => {
    if (req.url === '/page') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<html><head><title>t</title><script>var x=1</script></head><body><h1>Opening hours</h1><p>Open <b>9 to 5</b>, Monday to Friday.</p></body></html>',
      );
    } else if (req.url === '/slow') {
      slowStarted++;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('starting');
      // Never finishes while a test runs (only the cancel ends it); the timer just keeps a stray request finite.
      const timer = setTimeout(() => res.end(' finished'), PATIENCE_MS);
      res.on('close', () => {
        clearTimeout(timer);
        if (!res.writableFinished) closed++;
      });
    } else if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.1:${blockedPort()}/page` });
      res.end();
    } else if (req.url === '/image') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.alloc(10));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    slowStarted: () => slowStarted,
    slowClosed: () => closed,
  };
}

describe('orchestrator: turn loop, tools and delegation (scripted models over real HTTP)', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let t: TestTenant;
  let other: TestTenant;
  let pages: Awaited<ReturnType<typeof startPages>>;
  let blocked: Server;

  const script = (model: string, fn: (c: ScriptCall) => ScriptReply): string => {
    fake.scripts.set(model, fn);
    return `openai/${model}`;
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const lastMessage = (r: { body: any }): string => r.body.messages[r.body.messages.length - 1].content;

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    blocked = createServer((_req, res) => res.end('you should not see this'));
    await new Promise<void>((r) => blocked.listen(0, '127.0.0.1', r));
    pages = await startPages(() => (blocked.address() as AddressInfo).port);
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-orchestrator-0001',
        ARBITER_DEFAULT_MODEL: 'openai/master',
        // Test-only: this one loopback page server may be fetched; everything else private stays blocked.
        ARBITER_FETCH_ALLOWLIST: new URL(pages.url).host,
        ARBITER_FETCH_TIMEOUT_MS: '20000',
      },
    });
    t = await newTenant(server, 'orchestrator');
    other = await newTenant(server, 'orchestrator-other');
  });
  after(async () => {
    await server.close();
    await fake.stop();
    pages.server.closeAllConnections();
    pages.server.close();
    blocked.close();
  });

  const orchestrate = async (
    body: Record<string, unknown>,
    tenant = t,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; events: SseEvent[]; headers: Headers; raw?: any }> => {
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
      return { status: res.status, events: [], headers: res.headers, raw: await res.json() };
    }
    return { status: res.status, events: (await readSse(res)).events, headers: res.headers };
  };
  const done = (events: SseEvent[]) => events[events.length - 1];
  const named = (events: SseEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);

  it('streams text before the run ends, and ends with stream_end and done', async () => {
    // The model sends its first words, then the rest only once the client has seen text and the run's state.
    const seen = new Barrier(1);
    const model = script('slow-talker', () => ({
      text: 'one two three four five six seven eight nine ten',
      continueWhen: seen.reached,
    }));
    await newAgent(t, { id: 'talker', model });
    const res = await fetch(`${server.url}/v1/agents/talker/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'talk' }),
    });
    assert.equal(res.status, 200);
    const requestId = res.headers.get('arbiter-request-id');
    assert.ok(requestId);
    const reader = res.body!.getReader();
    let buffered = '';
    let stateAtFirstText: string | undefined;
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buffered += new TextDecoder().decode(value);
      if (stateAtFirstText === undefined && buffered.includes('event: text')) {
        stateAtFirstText = (await t.client.get(`/v1/requests/${requestId}`)).body.state;
        void seen.arrive();
      }
    }
    assert.equal(stateAtFirstText, 'working', 'text reached the client while the run was still working');
    const events = buffered
      .split('\n\n')
      .filter((b) => b.includes('event: '))
      .map((b) => /event: (\w+)/.exec(b)![1]);
    assert.deepEqual(events.slice(0, 2), ['request_received', 'stream_start']);
    assert.deepEqual(events.slice(-2), ['stream_end', 'done']);
    // The first words went out alone (the rest waited for the client to see them); how the rest is cut depends on
    // how fast the machine is, since text that arrives while a write is in flight goes out in one event.
    assert.ok(events.filter((e) => e === 'text').length >= 2, 'the first words, then the rest');
    const text = buffered
      .split('\n\n')
      .filter((b) => b.includes('event: text'))
      .map((b) => (JSON.parse(/data: (.*)/.exec(b)![1]) as { content: string }).content)
      .join('');
    assert.equal(text, 'one two three four five six seven eight nine ten');
  });

  it('the master delegates to a sub-agent: live sub-agent text, its reply fed back, a final answer', async () => {
    script('researcher', () => 'Paris is the capital of France.');
    await newAgent(t, { id: 'researcher', model: 'openai/researcher', role: 'finds facts' });
    script('master', (c) => {
      if (c.last.includes('[/agent researcher')) return 'The answer: Paris.';
      if (c.last.startsWith('capital?')) return 'Let me ask.\n/agent researcher What is the capital of France?\n';
      return 'ok';
    });
    const r = await orchestrate({ message: 'capital?' });
    assert.equal(r.status, 200);
    const texts = named(r.events, 'text');
    assert.ok(
      texts.some((e) => e.depth === 1 && e.agent === 'researcher'),
      'sub-agent text is streamed live',
    );
    const visible = texts
      .filter((e) => e.depth === 0)
      .map((e) => e.content)
      .join('');
    assert.equal(visible, 'Let me ask.\n\nThe answer: Paris.', 'the command line is held back');
    assert.deepEqual(named(r.events, 'sub_agent_response')[0], {
      seq: named(r.events, 'sub_agent_response')[0].seq,
      request_id: done(r.events).data.request_id,
      created_at: named(r.events, 'sub_agent_response')[0].created_at,
      agent: 'researcher',
      depth: 1,
      content: 'Paris is the capital of France.',
    });
    assert.deepEqual(
      named(r.events, 'tool_call').map((e) => [e.tool, e.ok]),
      [['/agent', true]],
    );
    assert.equal(done(r.events).event, 'done');
    assert.equal(done(r.events).data.ok, true);
    assert.equal(done(r.events).data.content, 'The answer: Paris.');
    assert.ok(done(r.events).data.output_tokens > 0);
    // What the models saw.
    const sub = requestsFor('researcher').at(-1)!;
    assert.match(lastMessage(sub), /^\[Delegated by agent 'index' \(delegation depth 1 of at most 2\)/);
    assert.match(lastMessage(sub), /What is the capital of France\?$/);
    const second = requestsFor('master').at(-1)!;
    assert.equal(
      lastMessage(second),
      '[/agent researcher What is the capital of France?]\nParis is the capital of France.\n[END AGENT]',
    );
    const system: string = second.body.messages[0].content;
    assert.match(system, /AGENTS — delegate with \/agent <id> <task>:\n(.*\n)*\s+researcher \[finds facts\]/);
    assert.match(system, /TOOLS — /);
  });

  it('the same run through A2A: the sub-agent reply is a data artifact, the answer on the response artifact', async () => {
    const task = (await a2a(server.url, t.token).send('capital? (a2a)')).result.task;
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    // The response artifact holds everything the agent showed; the answer is its last paragraph.
    assert.equal(answerOf(task), 'Let me ask.\n\nThe answer: Paris.');
    const sub = task.artifacts.find((a: any) => a.name === 'sub_agent_response');
    assert.deepEqual(sub.parts[0].data, { agent: 'researcher', depth: 1, content: 'Paris is the capital of France.' });
    const tool = task.artifacts.find((a: any) => a.name === 'tool_call');
    assert.deepEqual(tool.parts[0].data, {
      tool: '/agent',
      ok: true,
      args: 'researcher What is the capital of France?',
    });
    assert.equal(tool.metadata['x-arbiter.tool_call'], true);
    const response = task.artifacts.find((a: any) => a.name === 'response');
    assert.equal(response.parts[0].text, 'Let me ask.\n\nThe answer: Paris.');
  });

  it('/parallel runs its commands concurrently and frames each result in order', async () => {
    // Each sub-agent's model answers only once all three calls have arrived: run one after another, the first
    // would wait in vain (until the barrier gives up) and `met` stays false. Overlap, not milliseconds.
    const allCalled = new Barrier(3);
    for (const id of ['par-a', 'par-b', 'par-c']) {
      script(id, () => ({ text: `reply from ${id} with several words to stream`, startWhen: allCalled.arrive() }));
      await newAgent(t, { id, model: `openai/${id}` });
    }
    const model = script('fanout', (c) =>
      c.call === 1
        ? '/parallel\n/agent par-a one\n/agent par-b two\n/agent par-c three\n/endparallel'
        : 'all three answered',
    );
    await newAgent(t, { id: 'fanout', model });
    const r = await orchestrate({ agent: 'fanout', message: 'go' });
    assert.equal(done(r.events).data.content, 'all three answered');
    assert.ok(allCalled.met, 'all three sub-agents were called before any of them answered');
    const fed = lastMessage(requestsFor('fanout').at(-1)!);
    assert.match(
      fed,
      /^\[\/parallel\]\n\[\/agent par-a one\]\nreply from par-a .*\n\[END AGENT\]\n\[\/agent par-b two\]\nreply from par-b .*\n\[END AGENT\]\n\[\/agent par-c three\]\nreply from par-c .*\n\[END AGENT\]\n\[END PARALLEL\]$/,
    );
    assert.deepEqual(
      named(r.events, 'sub_agent_response')
        .map((e) => e.agent)
        .sort(),
      ['par-a', 'par-b', 'par-c'],
    );
  });

  it('/write gives the client a file (native file event, A2A file artifact); bad paths are refused', async () => {
    const model = script('writer', (c) =>
      c.call % 2 === 1
        ? 'Here you go.\n/write reports/summary.md\n# Summary\n\n```\n/not-a-command\n```\n/endwrite\n/write ../../etc/passwd\nx\n/endwrite'
        : 'Written.',
    );
    await newAgent(t, { id: 'writer', model });
    const r = await orchestrate({ agent: 'writer', message: 'write it' });
    const files = named(r.events, 'file');
    assert.equal(files.length, 1);
    assert.equal(files[0].path, 'reports/summary.md');
    assert.equal(files[0].media_type, 'text/markdown');
    assert.equal(files[0].content, '# Summary\n\n```\n/not-a-command\n```');
    assert.deepEqual(
      named(r.events, 'tool_call').map((e) => [e.tool, e.ok]),
      [
        ['/write', true],
        ['/write', false],
      ],
    );
    assert.match(
      lastMessage(requestsFor('writer').at(-1)!),
      /\[\/write \.\.\/\.\.\/etc\/passwd\]\nERR: the path must be relative/,
    );
    // v0.3 dialect: the file arrives as a file part with base64 bytes.
    const res = await rpc(server.url, t.token, 'writer', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: crypto.randomUUID(),
          role: 'user',
          parts: [{ kind: 'text', text: 'again' }],
        },
      },
    });
    const task = ((await res.json()) as any).result;
    const file = task.artifacts.find((a: any) => a.name === 'reports/summary.md');
    assert.equal(file.parts[0].kind, 'file');
    assert.equal(Buffer.from(file.parts[0].file.bytes, 'base64').toString('utf8'), files[0].content);
  });

  it('/mem stores and searches tenant memory (stemmed full-text search); another tenant sees none of it', async () => {
    const model = script('memo', (c) => {
      if (c.last === 'remember')
        return '/mem add Deploys happen on Tuesdays after the standup\n/mem add The staging database is called kestrel';
      if (c.last === 'recall') return '/mem search deploying\n/mem list\n/mem get 999999';
      return 'noted';
    });
    await newAgent(t, { id: 'memo', model });
    await newAgent(other, { id: 'memo', model });
    await orchestrate({ agent: 'memo', message: 'remember' });
    const stored = lastMessage(requestsFor('memo').at(-1)!);
    const ids = [...stored.matchAll(/stored as #(\d+)/g)].map((m) => m[1]);
    assert.equal(ids.length, 2, stored);
    await orchestrate({ agent: 'memo', message: 'recall' });
    const fed = lastMessage(requestsFor('memo').at(-1)!);
    assert.match(
      fed,
      new RegExp(
        `\\[/mem search deploying\\]\\n#${ids[0]} Deploys happen on Tuesdays after the standup\\n\\[END MEM\\]`,
      ),
    );
    assert.match(fed, /\[\/mem list\]\n2 entries:\n/);
    assert.match(fed, /\[\/mem get 999999\]\nERR: no memory entry #999999\n\[END MEM\]/);
    await orchestrate({ agent: 'memo', message: 'recall' }, other);
    const theirs = lastMessage(requestsFor('memo').at(-1)!);
    assert.match(theirs, /\[\/mem search deploying\]\nno memory entries match "deploying"/);
    assert.match(theirs, /\[\/mem list\]\nno memory entries\n/);
  });

  it('/fetch reads an allow-listed loopback page as text and refuses private, loopback and metadata addresses', async () => {
    const blockedPort = (blocked.address() as AddressInfo).port;
    const model = script('fetcher', (c) =>
      c.call === 1
        ? [
            `/fetch ${pages.url}/page`,
            `/fetch http://127.0.0.1:${blockedPort}/`,
            `/fetch http://localhost:${blockedPort}/`,
            '/fetch http://169.254.169.254/latest/meta-data/',
            '/fetch http://10.0.0.1/',
            '/fetch http://[::1]/',
            `/fetch ${pages.url}/redirect`,
            `/fetch ${pages.url}/image`,
            '/fetch file:///etc/passwd',
          ].join('\n')
        : 'fetched',
    );
    await newAgent(t, { id: 'fetcher', model });
    const r = await orchestrate({ agent: 'fetcher', message: 'fetch' });
    assert.equal(done(r.events).data.ok, true);
    const fed = lastMessage(requestsFor('fetcher').at(-1)!);
    const results = fed.split(/\n(?=\[\/fetch )/);
    assert.equal(results.length, 9, fed);
    assert.match(
      results[0],
      /^\[\/fetch .*\/page\]\nHTTP 200 text\/html .*\n\nOPENING HOURS\n\nOpen 9 to 5, Monday to Friday.\n\[END FETCH\]$/,
    );
    assert.ok(!results[0].includes('var x'), 'scripts are dropped');
    assert.match(results[1], /ERR: fetch refused: 127\.0\.0\.1 is a loopback address \(blocked\)/);
    assert.match(results[2], /ERR: fetch refused: localhost resolves to a loopback address \(blocked\)/);
    assert.match(results[3], /ERR: fetch refused: 169\.254\.169\.254 is a linkLocal address \(blocked\)/);
    assert.match(results[4], /ERR: fetch refused: 10\.0\.0\.1 is a private address \(blocked\)/);
    assert.match(results[5], /ERR: fetch refused: ::1 is a loopback address \(blocked\)/);
    assert.match(
      results[6],
      /ERR: fetch refused: 127\.0\.0\.1 is a loopback address \(blocked\)/,
      'redirects are re-checked',
    );
    assert.match(results[7], /ERR: unsupported content type image\/png/);
    assert.match(results[8], /ERR: fetch refused: scheme file is not allowed/);
    assert.ok(!fed.includes('you should not see this'));
    assert.deepEqual(
      named(r.events, 'tool_call').map((e) => e.ok),
      [true, false, false, false, false, false, false, false, false],
    );
  });

  it('capabilities are an allowlist of tools: a refused tool answers "capability not granted"', async () => {
    const model = script('limited', (c) =>
      c.call === 1 ? '/fetch https://example.com/\n/mem list\n/frobnicate now\n/agent\n/a2a list' : 'ok',
    );
    await newAgent(t, { id: 'limited', model, capabilities: ['/mem', '/a2a', 'summarising'] });
    await orchestrate({ agent: 'limited', message: 'try' });
    const fed = lastMessage(requestsFor('limited').at(-1)!);
    assert.match(
      fed,
      /\[\/fetch https:\/\/example.com\/\]\nERR: capability not granted: \/fetch \(this agent may use \/mem, \/a2a\)/,
    );
    assert.match(fed, /\[\/mem list\]\n(no memory entries|\d+ entries)/);
    assert.match(fed, /\[\/frobnicate now\]\nERR: unknown command \/frobnicate; known commands: \/agent, /);
    assert.match(fed, /\[\/agent\]\nERR: capability not granted: \/agent/);
    const system: string = requestsFor('limited').at(-1)!.body.messages[0].content;
    assert.match(system, /\/mem add <text>/);
    assert.ok(!system.includes('/fetch <url>'), 'the prompt lists only granted tools');
  });

  it('turn limit: at most 6 model calls; commands in the last response get "ERR: turn limit reached"', async () => {
    const model = script('looper', () => 'again\n/mem list');
    await newAgent(t, { id: 'looper', model });
    const before = requestsFor('looper').length;
    const r = await orchestrate({ agent: 'looper', message: 'loop' });
    assert.equal(requestsFor('looper').length - before, 6);
    const d = done(r.events).data;
    assert.equal(d.ok, true);
    assert.match(d.content, /\[\/mem list\]\nERR: turn limit reached\n\[END MEM\]$/);
    const calls = named(r.events, 'tool_call');
    assert.equal(calls.length, 6);
    assert.equal(calls.at(-1).ok, false);
  });

  it('a response of hundreds of commands runs the first 32; the rest are answered in one line and one event', async () => {
    const model = script('flooder', (c) =>
      c.call === 1 ? { text: 'flooding\n' + '/mem list\n'.repeat(400), delayMs: 0 } : 'all done',
    );
    await newAgent(t, { id: 'flooder', model });
    const before = requestsFor('flooder').length;
    const r = await orchestrate({ agent: 'flooder', message: 'go' });
    assert.equal(done(r.events).data.ok, true, JSON.stringify(done(r.events).data));
    const calls = named(r.events, 'tool_call');
    assert.equal(calls.length, 33, 'the 32 that ran, and one for the rest');
    assert.ok(
      calls.slice(0, 32).every((c: any) => c.tool === '/mem' && c.ok === true),
      JSON.stringify(calls.slice(0, 2)),
    );
    assert.equal(calls[32].ok, false);
    assert.match(calls[32].args, /and 367 more: not run/);
    // The model got the 32 results and one line for the rest.
    const fed = lastMessage(requestsFor('flooder')[before + 1]);
    assert.equal(fed.match(/\[END MEM\]/g)?.length, 32);
    assert.match(fed, /ERR: 368 more commands not run: at most 32 run per response$/);

    // In the last allowed response the same: 32 answered "turn limit reached", one line for the rest.
    const last = script('flood-end', () => ({ text: 'again\n' + '/mem list\n'.repeat(40), delayMs: 0 }));
    await newAgent(t, { id: 'flood-end', model: last });
    const e = await orchestrate({ agent: 'flood-end', message: 'go' });
    const content: string = done(e.events).data.content;
    assert.equal(content.match(/ERR: turn limit reached/g)?.length, 32);
    assert.match(content, /ERR: 8 more commands not run: at most 32 run per response$/);
  });

  it('delegation depth is limited; no self-delegation; index cannot be delegated to; unknown agents are named', async () => {
    script('depth-a', (c) =>
      c.last.startsWith('[/agent')
        ? 'a done'
        : '/agent depth-b go deeper\n/agent depth-a me\n/agent index x\n/agent ghost y',
    );
    script('depth-b', (c) => (c.last.startsWith('[/agent') ? 'b done' : '/agent depth-c go deeper'));
    script('depth-c', (c) => (c.last.startsWith('[/agent') ? 'c done' : '/agent depth-a too deep'));
    for (const id of ['depth-a', 'depth-b', 'depth-c']) await newAgent(t, { id, model: `openai/${id}` });
    const r = await orchestrate({ agent: 'depth-a', message: 'start' });
    assert.equal(done(r.events).data.content, 'a done');
    assert.match(
      lastMessage(requestsFor('depth-c').at(-1)!),
      /\[\/agent depth-a too deep\]\nERR: delegation depth limit reached \(at most 2 levels\)/,
    );
    const fedA = lastMessage(requestsFor('depth-a').at(-1)!);
    assert.match(fedA, /\[\/agent depth-b go deeper\]\nb done\n\[END AGENT\]/);
    assert.match(fedA, /\[\/agent depth-a me\]\nERR: an agent cannot delegate to itself/);
    assert.match(fedA, /\[\/agent index x\]\nERR: index is the master agent and cannot be delegated to/);
    assert.match(fedA, /\[\/agent ghost y\]\nERR: no agent named 'ghost'/);
    assert.deepEqual(
      named(r.events, 'sub_agent_response').map((e) => [e.agent, e.depth]),
      [
        ['depth-c', 2],
        ['depth-b', 1],
      ],
    );
    // depth-c sits at the limit: its prompt does not offer /agent.
    assert.ok(!requestsFor('depth-c').at(-1)!.body.messages[0].content.includes('/agent <id>'));
  });

  it('cancel during a model call aborts the provider request; the run ends canceled with done', async () => {
    // One piece of text, then the stream stays open until the cancel closes it.
    const model = script('slowpoke', () => ({ text: 'word '.repeat(400), continueWhen: stall() }));
    await newAgent(t, { id: 'slowpoke', model });
    const closedBefore = fake.closedEarly;
    const res = await fetch(`${server.url}/v1/agents/slowpoke/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'talk forever' }),
    });
    const id = res.headers.get('arbiter-request-id')!;
    const reading = readSse(res);
    await waitFor(async () =>
      (await t.client.get(`/v1/requests/${id}`)).body.artifacts.length > 0 ? true : undefined,
    );
    const c = await t.client.post(`/v1/requests/${id}/cancel`);
    assert.equal(c.status, 200);
    assert.equal(c.body.state, 'canceled');
    const { events } = await reading;
    assert.deepEqual(done(events).data, { ...done(events).data, ok: false, error_code: 'cancelled' });
    await waitFor(() => Promise.resolve(fake.closedEarly > closedBefore ? true : undefined));
  });

  it('cancel during a tool (a slow /fetch) stops the tool and ends the run canceled', async () => {
    const model = script('slowfetch', (c) => (c.call === 1 ? `/fetch ${pages.url}/slow` : 'never'));
    await newAgent(t, { id: 'slowfetch', model });
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'slowfetch', message: 'fetch slowly' }),
    });
    const id = res.headers.get('arbiter-request-id')!;
    const reading = readSse(res);
    const closedBefore = pages.slowClosed();
    const startedBefore = pages.slowStarted();
    // The fetch is under way: the page server has its request.
    await waitFor(() => Promise.resolve(pages.slowStarted() > startedBefore ? true : undefined));
    assert.equal((await t.client.post(`/v1/requests/${id}/cancel`)).body.state, 'canceled');
    const { events } = await reading;
    assert.equal(done(events).data.error_code, 'cancelled');
    await waitFor(() => Promise.resolve(pages.slowClosed() > closedBefore ? true : undefined));
    assert.equal(requestsFor('slowfetch').length, 1, 'no model call after the cancel');
  });

  it('a provider 429 is retried before any text; a failure mid-stream fails the run with provider_error', async () => {
    const flaky = script('flaky-model', (c) => (c.call === 1 ? { text: '', status: 429 } : 'recovered'));
    await newAgent(t, { id: 'flaky', model: flaky });
    const ok = await orchestrate({ agent: 'flaky', message: 'hi' });
    assert.equal(done(ok.events).data.content, 'recovered');
    const broken = script('broken-model', () => ({ text: 'partial answer that', failAfter: true }));
    await newAgent(t, { id: 'broken', model: broken });
    const r = await orchestrate({ agent: 'broken', message: 'hi' });
    assert.deepEqual(
      r.events.slice(-3).map((e) => e.event),
      ['error', 'stream_end', 'done'],
    );
    assert.equal(done(r.events).data.ok, false);
    assert.equal(done(r.events).data.error_code, 'provider_error');
    const task = (await t.client.get(`/v1/requests/${done(r.events).data.request_id}`)).body;
    assert.equal(task.state, 'failed');
    assert.match(task.error, /^provider_error: /);
    // A sub-agent's failure is a tool result for its caller, not the end of the run.
    const model = script('delegator', (c) => (c.call === 1 ? '/agent broken help' : 'handled it'));
    await newAgent(t, { id: 'delegator', model });
    const d = await orchestrate({ agent: 'delegator', message: 'go' });
    assert.equal(done(d.events).data.content, 'handled it');
    assert.match(
      lastMessage(requestsFor('delegator').at(-1)!),
      /\[\/agent broken help\]\nERR: agent 'broken' failed: provider_error/,
    );
  });

  it('Idempotency-Key: a retry replays the first run instead of running again; another body with the key is a 422', async () => {
    const model = script('once', () => 'ran once');
    await newAgent(t, { id: 'once', model });
    const key = `key-${crypto.randomUUID()}`;
    const first = await orchestrate({ agent: 'once', message: 'do it' }, t, { 'idempotency-key': key });
    const again = await orchestrate({ agent: 'once', message: 'do it' }, t, { 'idempotency-key': key });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.events, first.events);
    assert.equal(requestsFor('once').length, 1);
    const clash = await orchestrate({ agent: 'once', message: 'something else' }, t, { 'idempotency-key': key });
    assert.equal(clash.status, 422);
    assert.equal(clash.raw.code, 'unprocessable');
    assert.match(clash.raw.error, /Idempotency-Key was already used for a different request/);
    const bad = await orchestrate({ agent: 'once', message: 'x' }, t, { 'idempotency-key': 'has space' });
    assert.equal(bad.status, 400);
    // Keys are per tenant.
    await newAgent(other, { id: 'once', model });
    const theirs = await orchestrate({ agent: 'once', message: 'do it' }, other, { 'idempotency-key': key });
    assert.equal(theirs.headers.get('idempotent-replayed'), null);
    assert.equal(requestsFor('once').length, 2);
  });

  it('bad input: unknown fields, agent and agent_def together, a bad agent_def, unknown agents', async () => {
    assert.equal((await orchestrate({ message: 'x', extra: 1 })).status, 400);
    assert.equal((await orchestrate({ message: '' })).status, 400);
    assert.equal((await orchestrate({ message: 'x', agent: 'talker', agent_def: {} })).status, 400);
    const badDef = await orchestrate({ message: 'x', agent_def: { temperature: 9 } });
    assert.equal(badDef.status, 400);
    assert.equal(badDef.raw.details[0].field, 'agent_def.temperature');
    assert.equal((await orchestrate({ message: 'x', agent: 'ghost' })).status, 404);
    assert.equal((await orchestrate({ message: 'x', agent: 'talker' }, other)).status, 404, 'another tenant’s agent');
    const inline = await orchestrate({
      message: 'hello inline',
      agent_def: { name: 'poet', model: script('inline-m', () => 'a poem') },
    });
    assert.equal(done(inline.events).data.content, 'a poem');
    assert.match(requestsFor('inline-m').at(-1)!.body.messages[0].content, /^You are poet\./);
  });

  it('conversations: the thread is replayed to the model; the reply is stored when the run succeeds', async () => {
    const model = script('chatty', (c) => `reply #${c.messages.filter((m) => m.role === 'user').length}`);
    await newAgent(t, { id: 'chatty', model });
    const created = await t.client.post('/v1/conversations', { agent: 'chatty', title: 'planning' });
    assert.equal(created.status, 201);
    const id = created.body.id as string;
    const post = async (message: string) => {
      const res = await fetch(`${server.url}/v1/conversations/${id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message }),
      });
      return (await readSse(res)).events;
    };
    assert.equal(done(await post('first')).data.content, 'reply #1');
    assert.equal(done(await post('second')).data.content, 'reply #2');
    assert.deepEqual(
      requestsFor('chatty')
        .at(-1)!
        .body.messages.slice(1)
        .map((m: any) => [m.role, m.content]),
      [
        ['user', 'first'],
        ['assistant', 'reply #1'],
        ['user', 'second'],
      ],
    );
    const msgs = await t.client.get(`/v1/conversations/${id}/messages`);
    assert.deepEqual(
      msgs.body.items.map((m: any) => [m.role, m.content]),
      [
        ['user', 'first'],
        ['assistant', 'reply #1'],
        ['user', 'second'],
        ['assistant', 'reply #2'],
      ],
    );
    assert.equal((await t.client.patch(`/v1/conversations/${id}`, { title: 'renamed' })).body.title, 'renamed');
    const list = await t.client.get('/v1/conversations?limit=1');
    assert.equal(list.body.items[0].id, id);
    assert.equal((await other.client.get(`/v1/conversations/${id}`)).status, 404);
    assert.equal((await other.client.get(`/v1/conversations/${id}/messages`)).status, 404);
    assert.equal((await t.client.post('/v1/conversations', { agent: 'ghost' })).status, 404);
    // An A2A client sending the conversation's id as contextId continues the same thread.
    const third = await a2a(server.url, t.token, 'chatty').send('third', { contextId: id });
    assert.equal(answerOf(third.result.task), 'reply #3');
    assert.equal((await t.client.get(`/v1/conversations/${id}/messages`)).body.items.length, 6);
    assert.equal((await t.client.delete(`/v1/conversations/${id}`)).status, 204);
    assert.equal((await t.client.get(`/v1/conversations/${id}`)).status, 404);
    assert.equal((await t.client.get(`/v1/requests?context_id=${id}`)).body.items.length, 0);
  });
});
