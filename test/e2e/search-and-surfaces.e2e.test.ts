import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { StreamResponse } from '@a2a-js/sdk';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { FakeSearch } from '../helpers/fake-search.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse, restClient, textMessage, v1Client, type SseEvent } from '../helpers/a2a.js';
import { referenceServerEntry } from '../helpers/mcp-servers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { loadConfig } from '../../src/config/app-config.js';
import { searchAsText, searchProvider } from '../../src/orchestrator/tools/search.tool.js';

const KEY = 'fake-search-key-0001';

describe('/search through SearXNG, Brave and Tavily wire formats; /mcp and /search on every surface', () => {
  let fake: FakeProvider;
  let search: FakeSearch;
  const servers: Record<'searxng' | 'brave' | 'tavily' | 'strict', TestServer> = {} as never;
  const tenants: Record<string, TestTenant> = {};

  const script = (model: string, fn: (c: ScriptCall) => ScriptReply): string => {
    fake.scripts.set(model, fn);
    return `openai/${model}`;
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const lastMessage = (r: { body: any }): string => r.body.messages[r.body.messages.length - 1].content;
  const toolCalls = (events: SseEvent[]) =>
    events.filter((e) => e.event === 'tool_call').map((e) => [e.data.tool, e.data.args, e.data.ok]);

  let n = 0;
  const runCommands = async (on: keyof typeof servers, commands: string, agent: Record<string, unknown> = {}) => {
    const id = `s-${++n}`;
    await newAgent(tenants[on], { id, model: script(id, (c) => (c.call === 1 ? commands : 'done')), ...agent });
    const res = await fetch(`${servers[on].url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenants[on].token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    const { events } = await readSse(res);
    const reqs = requestsFor(id);
    return { events, fed: reqs.length > 1 ? lastMessage(reqs.at(-1)!) : '' };
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    search = new FakeSearch(KEY);
    await search.start();
    const base = {
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ARBITER_DEFAULT_MODEL: 'openai/master',
    };
    // Brave and Tavily apps: the provider picked from each app's own environment, keys never in the model's view.
    // `strict` only answers the search that never ends: its short timeout applies to nothing else.
    [servers.searxng, servers.brave, servers.tavily, servers.strict] = await Promise.all([
      startTestServer({
        env: { ...base, ARBITER_SEARXNG_URL: search.url, ARBITER_SEARCH_RESULTS: '2' },
        prepareHome: (home) =>
          writeFileSync(
            join(home, 'mcp_servers.json'),
            JSON.stringify({
              mcpServers: {
                everything: {
                  command: process.execPath,
                  args: [referenceServerEntry('@modelcontextprotocol/server-everything'), 'stdio'],
                },
              },
            }),
          ),
      }),
      startTestServer({ env: { ...base, BRAVE_SEARCH_API_KEY: KEY, BRAVE_SEARCH_BASE_URL: search.url } }),
      startTestServer({
        env: {
          ...base,
          ARBITER_SEARCH_PROVIDER: 'tavily',
          ARBITER_SEARXNG_URL: search.url,
          TAVILY_API_KEY: KEY,
          TAVILY_BASE_URL: search.url,
        },
      }),
      startTestServer({ env: { ...base, ARBITER_SEARXNG_URL: search.url, ARBITER_SEARCH_TIMEOUT_MS: '1000' } }),
    ]);
    for (const [on, name] of [
      ['searxng', 'search'],
      ['brave', 'brave'],
      ['tavily', 'tavily'],
      ['strict', 'strict'],
    ] as const)
      tenants[on] = await newTenant(servers[on], name);
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
    await search.stop();
    await fake.stop();
  });

  it('SearXNG: GET /search?q=…&format=json; top results (ARBITER_SEARCH_RESULTS) framed like /fetch', async () => {
    const { fed, events } = await runCommands('searxng', '/search arbiter gateway');
    assert.equal(
      fed,
      [
        '[/search arbiter gateway]',
        '2 results from searxng for "arbiter gateway":',
        '',
        '1. Result 1 for arbiter gateway',
        `   ${search.url}/never/1`,
        '   Snippet 1 about arbiter gateway',
        '',
        '2. Result 2 for arbiter gateway',
        `   ${search.url}/never/2`,
        '   Snippet 2 about arbiter gateway',
        '[END SEARCH]',
      ].join('\n'),
    );
    const req = search.requests.at(-1)!;
    assert.equal(req.method, 'GET');
    assert.equal(req.query.get('q'), 'arbiter gateway');
    assert.equal(req.query.get('format'), 'json');
    assert.deepEqual(toolCalls(events), [['/search', 'arbiter gateway', true]]);
    assert.equal(search.neverFetched, 0, 'result URLs are never fetched');
  });

  /** The provider as the app builds it from this environment, against the fake over loopback. */
  const direct = (env: Record<string, string>, query: string) =>
    searchAsText(query, searchProvider(loadConfig(env)), 5, new AbortController().signal);

  it('Brave (a running app): GET /res/v1/web/search, the key in X-Subscription-Token, HTML stripped', async () => {
    const { fed, events } = await runCommands('brave', '/search brave things\n/search nothing');
    assert.match(
      fed,
      /^\[\/search brave things\]\n3 results from brave for "brave things":\n\n1\. Result 1 for brave things\n {3}http:\/\/127\.0\.0\.1:\d+\/never\/1\n {3}Snippet 1 about brave things\n/,
    );
    assert.match(fed, /\n\[\/search nothing\]\nno results for "nothing" \(brave\)\n\[END SEARCH\]/);
    assert.ok(!fed.includes('<'), 'HTML tags stripped from snippets');
    const req = search.requests.find((r) => r.query.get('q') === 'brave things')!;
    assert.equal(req.path, '/res/v1/web/search');
    assert.equal(req.headers['x-subscription-token'], KEY);
    assert.equal(req.query.get('count'), '5');
    assert.ok(!fed.includes(KEY) && !JSON.stringify(events).includes(KEY), 'the key never reaches the model or events');
    assert.deepEqual(toolCalls(events), [
      ['/search', 'brave things', true],
      ['/search', 'nothing', true],
    ]);
    const wrong = await direct({ BRAVE_SEARCH_API_KEY: 'wrong-key-SECRET-42', BRAVE_SEARCH_BASE_URL: search.url }, 'x');
    assert.equal(wrong, 'ERR: search failed: brave rejected the credentials (HTTP 401)');
  });

  it('Tavily (a running app, picked by ARBITER_SEARCH_PROVIDER): POST /search with the bearer key and max_results', async () => {
    const { fed, events } = await runCommands('tavily', '/search tavily things');
    assert.match(fed, /^\[\/search tavily things\]\n3 results from tavily for "tavily things":\n/);
    const req = search.requests.find((r) => r.body?.query === 'tavily things')!;
    assert.equal(req.method, 'POST');
    assert.equal(req.headers.authorization, `Bearer ${KEY}`);
    assert.equal(req.body.max_results, 5);
    assert.ok(!fed.includes(KEY) && !JSON.stringify(events).includes(KEY));
    // A provider that quotes the key back in its results: taken out.
    const mirrored = await runCommands('tavily', '/search mirror');
    assert.match(mirrored.fed, /you sent Bearer \[redacted\]/);
    assert.ok(!mirrored.fed.includes(KEY) && !JSON.stringify(mirrored.events).includes(KEY));
    const wrong = await direct({ TAVILY_API_KEY: 'tvly-SECRET-43', TAVILY_BASE_URL: search.url }, 'x');
    assert.equal(wrong, 'ERR: search failed: tavily rejected the credentials (HTTP 401)');
  });

  it('no provider: ERR: no search provider configured; naming an unconfigured one is refused at start', async () => {
    assert.equal(await direct({}, 'anything'), 'ERR: no search provider configured');
    assert.throws(
      () => loadConfig({ ARBITER_SEARCH_PROVIDER: 'brave' }),
      /ARBITER_SEARCH_PROVIDER is brave, which needs BRAVE_SEARCH_API_KEY/,
    );
  });

  it('provider failures map to stable ERR strings; bad queries are refused before any request', async () => {
    const before = search.requests.length;
    const { fed, events } = await runCommands('searxng', ['/search', `/search ${'x'.repeat(401)}`].join('\n'));
    assert.match(fed, /^\[\/search\]\nERR: usage: \/search <query>\n\[END SEARCH\]/);
    assert.match(fed, /\nERR: a query may be at most 400 characters\n/);
    assert.equal(search.requests.length, before);
    assert.ok(toolCalls(events).every(([, , ok]) => ok === false));
    const failing = await runCommands('searxng', '/search boom\n/search garbage');
    assert.match(failing.fed, /\[\/search boom\]\nERR: search failed: searxng answered HTTP 500\n/);
    assert.match(
      failing.fed,
      /\[\/search garbage\]\nERR: search failed: searxng sent a malformed response \(not JSON\)\n/,
    );
    const slow = await runCommands('strict', '/search slow');
    assert.match(slow.fed, /\[\/search slow\]\nERR: search failed: searxng did not answer within 1 s\n/);
  });

  it('agent cards list mcp and web-search when the agent may use them', async () => {
    const t = tenants.searxng;
    await newAgent(t, { id: 'all-tools' });
    await newAgent(t, { id: 'mcp-only', capabilities: ['/mcp:everything'] });
    await newAgent(t, { id: 'fetch-only', capabilities: ['/fetch'] });
    const skills = async (id: string) =>
      ((await t.client.get(`/v1/a2a/agents/${id}/agent-card.json`)).body.skills as any[]).map((s) => [
        s.id,
        s.description,
      ]);
    assert.deepEqual(
      (await skills('all-tools')).slice(1).map(([id]) => id),
      ['mcp', 'web-search'],
    );
    assert.deepEqual((await skills('mcp-only')).slice(1), [['mcp', 'Can use tools of MCP servers (/mcp): everything']]);
    assert.deepEqual(
      (await skills('fetch-only')).slice(1).map(([id]) => id),
      ['fetch-url'],
    );
  });

  describe('every surface runs both tools and records them as tool_call', () => {
    const COMMANDS = '/mcp call everything echo {"message":"surface"}\n/search surfaces';
    const expectFed = (model: string): void => {
      const fed = lastMessage(requestsFor(model).at(-1)!);
      assert.match(fed, /^\[\/mcp call everything echo \{"message":"surface"\}\]\nEcho: surface\n\[END MCP\]\n/);
      assert.match(fed, /\n\[\/search surfaces\]\n2 results from searxng for "surfaces":/);
    };
    const both = [
      ['/mcp', 'call everything echo {"message":"surface"}', true],
      ['/search', 'surfaces', true],
    ];

    for (const [binding, connect] of [
      ['JSON-RPC', v1Client],
      ['HTTP+JSON/REST', restClient],
    ] as const) {
      it(`A2A ${binding} (official SDK client, streaming): tool_call artifacts in the stream`, async () => {
        const t = tenants.searxng;
        const id = `a2a-tools-${binding === 'JSON-RPC' ? 'rpc' : 'rest'}`;
        await newAgent(t, { id, model: script(id, (c) => (c.call === 1 ? COMMANDS : 'done')) });
        const client = await connect(servers.searxng.url, t.token, id);
        assert.equal(client.transport.protocolName, binding === 'JSON-RPC' ? 'JSONRPC' : 'HTTP+JSON');
        const events: StreamResponse[] = [];
        for await (const e of client.sendMessageStream(textMessage('go'))) events.push(e);
        const calls = events
          .filter((e) => e.payload?.$case === 'artifactUpdate')
          .map((e) => (e.payload?.$case === 'artifactUpdate' ? e.payload.value.artifact : undefined))
          .filter((a) => a?.name === 'tool_call')
          .map((a) => {
            const data = a!.parts[0]?.content?.$case === 'data' ? a!.parts[0].content.value : {};
            return [data.tool, data.args, data.ok];
          });
        assert.deepEqual(calls, both);
        expectFed(id);
      });
    }

    it('/v1/orchestrate', async () => {
      const t = tenants.searxng;
      await newAgent(t, { id: 'orch-tools', model: script('orch-tools', (c) => (c.call === 1 ? COMMANDS : 'done')) });
      const res = await fetch(`${servers.searxng.url}/v1/orchestrate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'orch-tools', message: 'go' }),
      });
      assert.deepEqual(toolCalls((await readSse(res)).events), both);
      expectFed('orch-tools');
    });

    it('chat', async () => {
      const { events } = await runCommands('searxng', COMMANDS);
      assert.deepEqual(toolCalls(events), both);
      expectFed(`s-${n}`);
    });

    it('conversations', async () => {
      const t = tenants.searxng;
      await newAgent(t, { id: 'conv-tools', model: script('conv-tools', (c) => (c.call === 1 ? COMMANDS : 'done')) });
      const created = await t.client.post('/v1/conversations', { agent: 'conv-tools' });
      const res = await fetch(`${servers.searxng.url}/v1/conversations/${created.body.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'go' }),
      });
      assert.deepEqual(toolCalls((await readSse(res)).events), both);
      expectFed('conv-tools');
    });
  });
});
