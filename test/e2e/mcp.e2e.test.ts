import assert from 'node:assert/strict';
import { CancelTaskRequest, TaskState } from '@a2a-js/sdk';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse, textMessage, v1Client, waitFor, type SseEvent } from '../helpers/a2a.js';

const until = (cond: () => boolean) => waitFor(async () => (cond() ? true : undefined));
import { referenceServerEntry, startEverythingHttp, TEST_SERVER_ENTRY, type HttpMcp } from '../helpers/mcp-servers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const HTTP_TOKEN = 'mcp-http-secret-token-0001';

describe('/mcp: MCP servers (reference servers over stdio and streamable HTTP) driven by a scripted model', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let t: TestTenant;
  let other: TestTenant;
  let http: HttpMcp;
  let dir: string;
  let registryFile: string;
  const markFile = (): string => join(dir, 'marks.log');
  const marks = (): string[] => (existsSync(markFile()) ? readFileSync(markFile(), 'utf8').trim().split('\n') : []);

  const script = (model: string, fn: (c: ScriptCall) => ScriptReply): string => {
    fake.scripts.set(model, fn);
    return `openai/${model}`;
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const lastMessage = (r: { body: any }): string => r.body.messages[r.body.messages.length - 1].content;

  const servers = (): Record<string, unknown> => ({
    everything: {
      command: process.execPath,
      args: [referenceServerEntry('@modelcontextprotocol/server-everything'), 'stdio'],
      description: 'the MCP reference server',
    },
    everything_http: { type: 'http', url: http.url, auth: { type: 'bearer', token_env: 'ARBITER_TEST_MCP_TOKEN' } },
    memory: {
      command: process.execPath,
      args: [referenceServerEntry('@modelcontextprotocol/server-memory')],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
    },
    testsrv: { command: process.execPath, args: [TEST_SERVER_ENTRY], env: { MCP_MARK_FILE: markFile() } },
    missing_cmd: { command: join(dir, 'no-such-binary') },
    needs_env: { command: process.execPath, args: [TEST_SERVER_ENTRY], env_env: { API_KEY: 'ARBITER_TEST_UNSET_VAR' } },
    wrong_token: { url: http.url, headers: { authorization: 'Bearer not-the-token' } },
    guarded: { url: 'http://127.0.0.2:9/mcp' },
  });
  const writeRegistry = (content: Record<string, unknown> | string): void => {
    writeFileSync(
      registryFile,
      typeof content === 'string' ? content : JSON.stringify({ mcpServers: content }, null, 2),
    );
  };

  /** Runs `commands` as one scripted response of a fresh agent; returns what the model got back and the events. */
  let n = 0;
  const runCommands = async (commands: string, agent: Record<string, unknown> = {}, tenant = t, on = server) => {
    const id = `mcp-${++n}`;
    const model = script(id, (c) => (c.call === 1 ? commands : 'done'));
    await newAgent(tenant, { id, model, ...agent });
    const res = await fetch(`${on.url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    const { events } = await readSse(res);
    const reqs = requestsFor(id);
    const fed = reqs.length > 1 ? lastMessage(reqs.at(-1)!) : '';
    return { events, fed, system: reqs[0]?.body.messages[0].content as string };
  };
  const calls = (events: SseEvent[]) => events.filter((e) => e.event === 'tool_call').map((e) => e.data);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'arbiter-mcp-'));
    fake = new FakeProvider();
    await fake.start();
    http = await startEverythingHttp(HTTP_TOKEN);
    process.env.ARBITER_TEST_MCP_TOKEN = HTTP_TOKEN;
    server = await startTestServer({
      env: {
        OPENAI_BASE_URL: `${fake.url}/v1`,
        ARBITER_DEFAULT_MODEL: 'openai/master',
        // Test-only: this one loopback MCP server may be reached; everything else private stays blocked.
        ARBITER_MCP_ALLOWLIST: new URL(http.url).host,
      },
    });
    registryFile = join(server.home, 'mcp_servers.json');
    t = await newTenant(server, 'mcp');
    other = await newTenant(server, 'mcp-other');
  });
  after(async () => {
    await server.close();
    await http.close();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('no registry file: /mcp list says so; the file is picked up when it appears (hot reload)', async () => {
    const none = await runCommands('/mcp list');
    assert.equal(none.fed, '[/mcp list]\nno mcp servers configured\n[END MCP]');
    assert.ok(!none.system.includes('MCP SERVERS'));
    writeRegistry(servers());
    const some = await runCommands('/mcp call everything echo {"message":"hello"}');
    assert.equal(some.fed, '[/mcp call everything echo {"message":"hello"}]\nEcho: hello\n[END MCP]');
  });

  it('/mcp list: every server with its tools, or why it is unavailable', async () => {
    const { fed, events } = await runCommands('/mcp list');
    assert.match(fed, /^\[\/mcp list\]\neverything \(stdio\) — the MCP reference server: \d+ tools\n/);
    assert.match(fed, /\n {2}echo — Echoes back the input string\n/);
    assert.match(fed, /\neverything_http \(http\): \d+ tools\n(.*\n)* {2}get-sum — Returns the sum of two numbers\n/);
    assert.match(fed, /\nmemory \(stdio\): \d+ tools\n(.*\n)* {2}read_graph — /);
    assert.match(
      fed,
      /\nmissing_cmd \(stdio\): unavailable \(mcp server 'missing_cmd' could not start: command not found\)/,
    );
    assert.match(
      fed,
      /\nneeds_env \(stdio\): unavailable \(mcp server 'needs_env' is not usable: environment variable ARBITER_TEST_UNSET_VAR is not set\)/,
    );
    assert.match(fed, /\nwrong_token \(http\): unavailable \(mcp server 'wrong_token' answered HTTP 401\)\n/);
    assert.match(
      fed,
      /\nguarded \(http\): unavailable \(mcp server 'guarded' refused: 127\.0\.0\.2 is a loopback address \(blocked\)\)\n/,
    );
    assert.deepEqual(
      calls(events).map((c) => [c.tool, c.args, c.ok]),
      [['/mcp', 'list', true]],
    );
  });

  it('/mcp tools <server>: names, descriptions and input schemas', async () => {
    const { fed } = await runCommands('/mcp tools everything');
    assert.match(fed, /^\[\/mcp tools everything\]\n/);
    assert.match(
      fed,
      /\necho — Echoes back the input string\n {2}input: \{"type":"object","properties":\{"message":\{"type":"string","description":"Message to echo"\}\},"required":\["message"\]/,
    );
    assert.match(fed, /\[END MCP\]$/);
  });

  it('/mcp call over streamable HTTP through the egress guard, with the bearer from token_env', async () => {
    const before = http.auth.length;
    const { fed, events } = await runCommands('/mcp call everything_http get-sum {"a": 2, "b": 3}');
    assert.equal(fed, '[/mcp call everything_http get-sum {"a": 2, "b": 3}]\nThe sum of 2 and 3 is 5.\n[END MCP]');
    assert.ok(http.auth.slice(before).every((a) => a === `Bearer ${HTTP_TOKEN}`));
    assert.ok(!JSON.stringify(events).includes(HTTP_TOKEN), 'the token is in no event');
  });

  it('images are described, not inlined; a text resource comes with its URI', async () => {
    const { fed } = await runCommands(
      '/mcp call everything get-tiny-image\n/mcp call everything get-resource-reference {"resourceType":"Text","resourceId":1}',
    );
    assert.match(
      fed,
      /Here's the image you requested:\n\[image: image\/png, \d+ bytes — not shown\]\nThe image above is the MCP logo\./,
    );
    assert.ok(!fed.includes('iVBORw0KGgo'), 'no base64 reaches the model');
    assert.match(
      fed,
      /\[resource demo:\/\/resource\/static\/document\/[^\s]+|\[resource [a-z]+:\/\/\S+ \(text\/plain\)\]\n/,
    );
  });

  it('a stateful reference server (server-memory confined to a temp file) keeps state across calls', async () => {
    const entity = '{"entities":[{"name":"arbiter","entityType":"project","observations":["routes A2A"]}]}';
    const { fed } = await runCommands(`/mcp call memory create_entities ${entity}\n/mcp call memory read_graph`);
    assert.match(fed, /\[\/mcp call memory read_graph\]\n.*"name": ?"arbiter"/s);
    assert.match(readFileSync(join(dir, 'memory.jsonl'), 'utf8'), /"name":"arbiter"/);
  });

  it('schema-invalid, malformed and misdirected calls get stable errors and never reach the server', async () => {
    const { fed, events } = await runCommands(
      [
        '/mcp call everything echo {"message": 5}',
        '/mcp call everything echo {"message": ',
        '/mcp call everything echo ["x"]',
        '/mcp call everything no-such-tool {}',
        '/mcp call nowhere echo {}',
        '/mcp frobnicate',
        '/mcp tools',
      ].join('\n'),
    );
    const results = fed.split(/\n(?=\[\/mcp )/);
    assert.match(results[0], /\nERR: invalid arguments for everything\/echo: data\/message must be string\n/);
    assert.match(
      results[1],
      /\nERR: arguments must be a JSON object \(not valid JSON: value expected at line 1, column 12\)\n/,
    );
    assert.match(results[2], /\nERR: arguments must be a JSON object\n/);
    assert.match(results[3], /\nERR: mcp server 'everything' has no tool 'no-such-tool'\n/);
    assert.match(results[4], /\nERR: no mcp server named 'nowhere'\n/);
    const usage = 'ERR: usage: /mcp list | /mcp tools <server> | /mcp call <server> <tool> <json-args>';
    assert.ok(results[5].includes(usage) && results[6].includes(usage));
    assert.ok(calls(events).every((c) => c.ok === false));
  });

  it('a tool error, a crash (exit code reported, stderr kept from the model) and the restart after it', async () => {
    const { fed } = await runCommands('/mcp call testsrv fail\n/mcp call testsrv noisy\n/mcp call testsrv crash');
    assert.match(fed, /\[\/mcp call testsrv fail\]\nERR: tool testsrv\/fail failed: boom: the widget is broken\n/);
    assert.match(fed, /\[\/mcp call testsrv noisy\]\nquiet result\n/);
    assert.match(fed, /\[\/mcp call testsrv crash\]\nERR: mcp server 'testsrv' exited: code 3\n\[END MCP\]$/);
    assert.ok(!fed.includes('stderr-secret'), 'stderr never reaches the model');
    const again = await runCommands('/mcp call testsrv noisy');
    assert.equal(again.fed, '[/mcp call testsrv noisy]\nquiet result\n[END MCP]');
  });

  it('a server that hangs past ARBITER_MCP_TIMEOUT_MS is stopped and reported; the next call starts it afresh', async () => {
    // A server of its own with a short timeout: the others here keep the default, so no ordinary call on a loaded
    // machine can run into it.
    const strict = await startTestServer({
      env: { OPENAI_BASE_URL: `${fake.url}/v1`, ARBITER_MCP_TIMEOUT_MS: '2000' },
      prepareHome: (home) =>
        writeFileSync(join(home, 'mcp_servers.json'), JSON.stringify({ mcpServers: { testsrv: servers().testsrv } })),
    });
    try {
      const u = await newTenant(strict, 'mcp-timeout');
      const { fed } = await runCommands('/mcp call testsrv hang', {}, u, strict);
      assert.equal(fed, "[/mcp call testsrv hang]\nERR: mcp server 'testsrv' timed out after 2 s (stopped)\n[END MCP]");
      const ups = marks().filter((m) => m.startsWith('up ')).length;
      const again = await runCommands('/mcp call testsrv noisy', {}, u, strict);
      assert.match(again.fed, /quiet result/);
      assert.equal(marks().filter((m) => m.startsWith('up ')).length, ups + 1, 'a new process');
    } finally {
      await strict.close();
    }
  });

  it('cancelling the task cancels the MCP call (notifications/cancelled reaches the server)', async () => {
    const id = 'mcp-cancel';
    await newAgent(t, { id, model: script(id, (c) => (c.call === 1 ? '/mcp call testsrv hang' : 'done')) });
    const before = marks().filter((m) => m.startsWith('cancelled')).length;
    const started = marks().filter((m) => m === 'started').length;
    const res = await fetch(`${server.url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    const requestId = res.headers.get('arbiter-request-id')!;
    await until(() => marks().filter((m) => m === 'started').length > started);
    const cancel = await t.client.post(`/v1/requests/${requestId}/cancel`, {});
    assert.ok(cancel.status < 300, cancel.text);
    await readSse(res);
    await until(() => marks().filter((m) => m.startsWith('cancelled')).length > before);
    assert.equal((await t.client.get(`/v1/requests/${requestId}`)).body.state, 'canceled');
  });

  it('A2A CancelTask (official SDK client) during an MCP call cancels the call; the stream ends canceled', async () => {
    const id = 'mcp-cancel-a2a';
    await newAgent(t, { id, model: script(id, (c) => (c.call === 1 ? '/mcp call testsrv hang' : 'done')) });
    const before = marks().filter((m) => m.startsWith('cancelled')).length;
    const started = marks().filter((m) => m === 'started').length;
    const client = await v1Client(server.url, t.token, id);
    const stream = client.sendMessageStream(textMessage('go'));
    let taskId: string | undefined;
    const states: TaskState[] = [];
    const reading = (async () => {
      for await (const e of stream) {
        if (e.payload?.$case === 'task') taskId = e.payload.value.id;
        if (e.payload?.$case === 'statusUpdate') states.push(e.payload.value.status!.state);
      }
    })();
    await until(() => taskId !== undefined && marks().filter((m) => m === 'started').length > started);
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }));
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    await reading;
    assert.equal(states.at(-1), TaskState.TASK_STATE_CANCELED);
    await until(() => marks().filter((m) => m.startsWith('cancelled')).length > before);
  });

  it('capabilities: /mcp:<server> restricts an agent to those servers; without /mcp the tool is refused', async () => {
    const only = { capabilities: ['/mcp:everything'] };
    const { fed } = await runCommands('/mcp list\n/mcp call testsrv noisy', only);
    assert.match(fed, /^\[\/mcp list\]\neverything \(stdio\)/);
    assert.ok(!fed.includes('testsrv (stdio)'));
    assert.match(
      fed,
      /\[\/mcp call testsrv noisy\]\nERR: capability not granted: \/mcp:testsrv \(this agent may use the mcp servers everything\)/,
    );
    const none = await runCommands('/mcp list', { capabilities: ['/fetch'] });
    assert.match(none.fed, /ERR: capability not granted: \/mcp \(this agent may use \/fetch\)/);
    const bad = await t.client.post('/v1/agents', { id: 'bad-grant', capabilities: ['/mcp:'] });
    assert.equal(bad.status, 400);
  });

  it("the master agent's roster lists MCP SERVERS; each tenant has its own server processes", async () => {
    const model = script('roster-master', (c) => (c.call === 1 ? '/mcp call testsrv noisy' : 'ok'));
    await newAgent(other, { id: 'plain', model });
    const ups = marks().filter((m) => m.startsWith('up ')).length;
    await fetch(`${server.url}/v1/agents/plain/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    }).then(readSse);
    assert.equal(marks().filter((m) => m.startsWith('up ')).length, ups + 1, "the other tenant's own process");
    script('master', () => 'hello');
    const res = await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi' }),
    });
    await readSse(res);
    const system: string = requestsFor('master').at(-1)!.body.messages[0].content;
    assert.match(system, /MCP SERVERS — .*\n {2}everything — the MCP reference server \(stdio; tools: .*echo.*\)\n/);
    assert.match(system, /\n {2}guarded \(http\)/);
    assert.match(system, /\/mcp list \| \/mcp tools <server> \| \/mcp call <server> <tool> <json-args>/);
  });

  it('a malformed registry keeps the last good one in force; a fixed file is picked up', async () => {
    writeRegistry('{"mcpServers": {"x": {"command": 5}}');
    await new Promise((r) => setTimeout(r, 20));
    const kept = await runCommands('/mcp call everything echo {"message":"still here"}');
    assert.match(kept.fed, /Echo: still here/);
    writeRegistry({ only: servers().everything });
    const fixed = await runCommands('/mcp call everything echo {"message":"x"}\n/mcp call only echo {"message":"y"}');
    assert.match(fixed.fed, /ERR: no mcp server named 'everything'/);
    assert.match(fixed.fed, /Echo: y/);
    writeRegistry(servers());
  });
});
