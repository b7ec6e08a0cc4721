// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeProvider, type ScriptCall, type ScriptReply } from '../helpers/fake-provider.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { readSse, waitFor, type SseEvent } from '../helpers/a2a.js';
import { metric } from '../helpers/metrics.js';
import { startGeminiLike, startVoltLike, type PeerAgent } from '../helpers/peer-agents.js';
import { startReferenceAgent, type ReferenceAgent } from '../helpers/reference-agents.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The credential of the remote whose errors repeat it. */
const RPC_ERROR_KEY = `rpc-error-key-${randomBytes(8).toString('hex')}`;

describe('A2A outbound: /a2a through the SDK client to Arbiter and SDK reference servers', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let a: TestTenant;
  let b: TestTenant;
  let v1: ReferenceAgent;
  let v03: ReferenceAgent;
  let gemini: PeerAgent;
  let volt: PeerAgent;
  let registryFile: string;

  const script = (model: string, fn: (c: ScriptCall) => ScriptReply): string => {
    fake.scripts.set(model, fn);
    return `openai/${model}`;
  };
  const requestsFor = (model: string) => fake.requests.filter((r) => r.body.model === model);
  const lastMessage = (r: { body: any }): string => r.body.messages[r.body.messages.length - 1].content;
  const done = (events: SseEvent[]) => events[events.length - 1].data;

  const writeRegistry = (agents: Record<string, unknown>, file = registryFile): void => {
    writeFileSync(file, JSON.stringify({ agents }, null, 2));
  };

  /** Runs `commands` as one scripted response of a fresh agent of tenant `a`; returns what the model got back. */
  let n = 0;
  const runCommands = async (commands: string, on: TestServer = server, tenant: TestTenant = a) => {
    const model = script(`cmd-${++n}`, (c) => (c.call === 1 ? commands : 'done'));
    const id = `cmd-${n}`;
    await newAgent(tenant, { id, model });
    const res = await fetch(`${on.url}/v1/agents/${id}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'go' }),
    });
    const { events } = await readSse(res);
    const fed = requestsFor(`cmd-${n}`).length > 1 ? lastMessage(requestsFor(`cmd-${n}`).at(-1)!) : '';
    return { events, fed };
  };

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    v1 = await startReferenceAgent('v1', { redirectTo: 'http://169.254.169.254/latest/meta-data/' });
    v03 = await startReferenceAgent('v03');
    gemini = await startGeminiLike();
    volt = await startVoltLike('support');
    const env = {
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ARBITER_DEFAULT_MODEL: 'openai/master',
    };
    // Loopback peers need the operator's allow-private switch (a2a-ssrf.e2e runs without it).
    server = await startTestServer({
      env: { ...env, ARBITER_A2A_ALLOW_PRIVATE: 'true', ARBITER_A2A_CARD_TTL_MS: '0' },
    });
    registryFile = join(server.home, 'a2a_agents.json');
    a = await newTenant(server, 'caller');
    b = await newTenant(server, 'callee');
    await newAgent(b, {
      id: 'helper',
      model: script('helper-m', (c) => `helper says: ${c.last}`),
      role: 'planning helper',
      goal: 'summarises plans',
    });
    await newAgent(b, { id: 'holder', model: 'echo' });
    await newAgent(b, {
      id: 'tooluser',
      model: script('tooluser-m', (c) =>
        c.call === 1 ? 'Let me look.\n/mem list\n/agent helper what is known' : 'tooluser found nothing',
      ),
    });
    process.env.ARBITER_TEST_B_TOKEN = b.token;
    writeRegistry({
      arbiter_b: {
        url: `${server.url}/v1/a2a/agents/helper`,
        auth: { type: 'bearer', token_env: 'ARBITER_TEST_B_TOKEN' },
      },
      holder: { url: `${server.url}/v1/a2a/agents/holder`, auth: { token: b.token } },
      arbiter_tools: { url: `${server.url}/v1/a2a/agents/tooluser`, auth: { token: b.token } },
      ref_v1: { url: `${v1.url}/rpc` },
      ref_v03: { url: `${v03.url}/rpc` },
      nocard: { url: `${v1.url}/nothing` },
      notacard: { url: `${v1.url}/notacard` },
      broken: { url: `${v1.url}/broken` },
      rpc_error: { url: `${v1.url}/rpc-error`, auth: { token: RPC_ERROR_KEY } },
      rpc_mirror: { url: `${v1.url}/rpc-mirror`, auth: { token: RPC_ERROR_KEY } },
      garbage: { url: `${v1.url}/garbage` },
      wrong_token: { url: `${server.url}/v1/a2a/agents/helper`, auth: { token: 'atr_not-a-valid-token' } },
      no_token: { url: `${server.url}/v1/a2a/agents/helper`, auth: { token_env: 'ARBITER_TEST_UNSET_VAR' } },
      hop: { url: `${v1.url}/hop` },
      gemini: { url: gemini.url },
      volt: { url: `${volt.url}/a2a/support`, card_url: `${volt.url}/.well-known/support/agent-card.json` },
      volt_default: { url: `${volt.url}/a2a/support` },
      // Keys in the query (as some hosts give them): the calling agent is shown neither.
      volt_keyed: {
        url: `${volt.url}/a2a/support?code=url-key-1`,
        card_url: `${volt.url}/.well-known/support/agent-card.json?code=card-key-2`,
      },
      volt_guarded: {
        url: `${volt.url}/a2a/support`,
        card_url: 'http://169.254.169.254/.well-known/support/agent-card.json',
      },
    });
  });
  after(async () => {
    await server.close();
    await v1.close();
    await v03.close();
    await gemini.close();
    await volt.close();
    await fake.stop();
  });

  it('Arbiter calls Arbiter: A delegates to B over real HTTP; B sees only the message; A gets the reply', async () => {
    const model = script('caller-m', (c) =>
      c.call === 1 ? 'Asking B.\n/a2a call arbiter_b summarise the plan' : `Final: ${c.last.split('\n')[1]}`,
    );
    await newAgent(a, { id: 'caller', model });
    const res = await fetch(`${server.url}/v1/agents/caller/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'plan?' }),
    });
    const { events } = await readSse(res);
    assert.equal(done(events).content, 'Final: helper says: summarise the plan');
    assert.match(
      lastMessage(requestsFor('caller-m').at(-1)!),
      /^\[\/a2a call arbiter_b summarise the plan\]\nhelper says: summarise the plan\n\[END A2A\]$/,
    );
    const call = events.find((e) => e.event === 'tool_call')!.data;
    assert.equal(call.tool, '/a2a');
    assert.equal(call.ok, true);
    // B's task list shows the task, and it holds only the message text.
    const theirs = await b.client.get('/v1/requests?agent_id=helper');
    const task = theirs.body.items.find((t: any) => t.id === call.remote_task_id);
    assert.ok(task, 'the remote task id is recorded on the tool_call event');
    assert.equal(task.state, 'completed');
    assert.equal(task.history[0].parts[0].text, 'summarise the plan');
    assert.equal((await a.client.get(`/v1/requests/${call.remote_task_id}`)).status, 404, 'another tenant');
    const seen = JSON.stringify(requestsFor('helper-m').at(-1)!.body);
    assert.ok(!seen.includes(a.token) && !seen.includes('caller'), 'nothing of A beyond the message');
  });

  it("Arbiter calls Arbiter: the remote's tool-call and sub-agent records stay out of the reply (and in its log)", async () => {
    const { fed, events } = await runCommands('/a2a call arbiter_tools look around');
    assert.match(
      fed,
      /^\[\/a2a call arbiter_tools look around\]\nLet me look\.\n+tooluser found nothing\n\[END A2A\]$/,
    );
    assert.ok(!fed.includes('/mem') && !fed.includes('helper says'), fed);
    // Ours records the /a2a call; theirs keeps its own /mem call.
    const call = events.find((e) => e.event === 'tool_call')!.data;
    assert.equal(call.tool, '/a2a');
    assert.equal(call.ok, true);
    const log = await fetch(`${server.url}/v1/requests/${call.remote_task_id}/events`, {
      headers: { authorization: `Bearer ${b.token}` },
    });
    const theirs = (await readSse(log)).events;
    assert.deepEqual(
      theirs.filter((e) => e.event === 'tool_call').map((e) => [e.data.tool, e.data.args]),
      [
        ['/mem', 'list'],
        ['/agent', 'helper what is known'],
      ],
    );
    assert.match(theirs.find((e) => e.event === 'sub_agent_response')?.data.content, /^helper says: .*what is known$/s);
  });

  it('reaches an SDK server speaking v1.0 and one speaking only v0.3 (card from /.well-known)', async () => {
    const { fed } = await runCommands('/a2a call ref_v1 hello one\n/a2a call ref_v03 hello three');
    assert.match(fed, /\[\/a2a call ref_v1 hello one\]\nref-v1 heard: hello one\n\[END A2A\]/);
    assert.match(fed, /\[\/a2a call ref_v03 hello three\]\nref-v03 heard: hello three\n\[END A2A\]/);
  });

  it('card caching: revalidated with its ETag when stale (TTL 0 here), reused while Cache-Control max-age holds', async () => {
    await runCommands('/a2a call ref_v1 warm\n/a2a call ref_v03 warm');
    const v1Before = { ...v1.cardFetches };
    const v03Before = v03.cardFetches.count;
    const { fed } = await runCommands('/a2a call ref_v1 first\n/a2a call ref_v03 second');
    assert.match(fed, /ref-v1 heard: first/);
    assert.match(fed, /ref-v03 heard: second/);
    // ref_v1 sends an ETag and no Cache-Control: with a TTL of 0 every use asks again, and gets a 304.
    assert.equal(v1.cardFetches.count - v1Before.count, 1);
    assert.equal(v1.cardFetches.notModified - v1Before.notModified, 1);
    // The SDK's v0.3 card router sends Cache-Control: max-age=3600: no request at all.
    assert.equal(v03.cardFetches.count - v03Before, 0);
  });

  it('artifact-only replies are read (text, and data as JSON)', async () => {
    const { fed } = await runCommands('/a2a call ref_v1 artifacts-only the report');
    assert.match(fed, /\nartifact text for the report\n\{"score":7\}\n\[END A2A\]/);
  });

  it('a remote that answers only in its task history (like gemini-cli-a2a-server): the reply, and its question', async () => {
    const { fed, events } = await runCommands('/a2a call gemini fix the bug\n/a2a call gemini finish the job');
    const results = fed.split(/\n(?=\[\/a2a )/);
    // input-required, no artifacts, no status message: the agent's messages after ours, and that it waits for input.
    assert.equal(
      results[0],
      '[/a2a call gemini fix the bug]\n(the remote agent needs more input)\n' +
        'Looking into "fix the bug".\n\nWhich file should I open: a.ts or b.ts?\n[END A2A]',
    );
    // The same remote ending completed without a status message.
    assert.equal(
      results[1],
      '[/a2a call gemini finish the job]\nLooking into "finish the job".\n\nAll done: nothing needed changing.\n[END A2A]',
    );
    assert.ok(!fed.includes('list_directory'), 'its tool-call updates (data parts in history) are progress, not reply');
    const calls = events.filter((e) => e.event === 'tool_call').map((e) => e.data);
    assert.deepEqual(
      calls.map((c) => [c.ok, typeof c.remote_task_id]),
      [
        [true, 'string'],
        [true, 'string'],
      ],
    );
  });

  it('a card at another path (like VoltAgent): card_url, through the same guard and cache; without it, the usual lookup', async () => {
    const cardGets = () => volt.requests.filter((r) => r.startsWith('GET '));
    const { fed } = await runCommands('/a2a call volt hello\n/a2a call volt again\n/a2a card volt');
    const results = fed.split(/\n(?=\[\/a2a )/);
    assert.equal(results[0], '[/a2a call volt hello]\nsupport heard: hello\n[END A2A]');
    assert.equal(results[1], '[/a2a call volt again]\nsupport heard: again\n[END A2A]');
    assert.match(results[2], /\nname: support\n/);
    assert.match(results[2], /\ncard: http:\/\/127\.0\.0\.1:\d+\/\.well-known\/support\/agent-card\.json\n/);
    // Asked for as v1.0 first (this v0.3 server does not answer that), then without a version; then cached
    // (the SDK's card router sends max-age=3600). Nothing else was asked for a card.
    assert.deepEqual(cardGets(), [
      'GET /.well-known/support/agent-card.json',
      'GET /.well-known/support/agent-card.json',
    ]);
    volt.requests.length = 0;
    const other = await runCommands('/a2a call volt_default hi\n/a2a call volt_guarded hi');
    const [plain, guarded] = other.fed.split(/\n(?=\[\/a2a )/);
    assert.match(plain, /\nERR: card fetch failed: HTTP 404: not found\n/);
    assert.deepEqual(cardGets(), [
      'GET /a2a/support/agent-card.json',
      'GET /a2a/support/agent-card.json',
      'GET /.well-known/agent-card.json',
      'GET /.well-known/agent-card.json',
    ]);
    assert.match(guarded, /\nERR: card fetch failed: 169\.254\.169\.254 is a linkLocal address \(blocked\)\n/);
    const keyed = (await runCommands('/a2a card volt_keyed')).fed;
    assert.match(keyed, /\nurl: http:\/\/127\.0\.0\.1:\d+\/a2a\/support\?…\n/);
    assert.match(keyed, /\ncard: http:\/\/127\.0\.0\.1:\d+\/\.well-known\/support\/agent-card\.json\?…\n/);
    assert.ok(!keyed.includes('url-key-1') && !keyed.includes('card-key-2'), keyed);
  });

  it('list, card and the roster of the master agent', async () => {
    const { fed } = await runCommands('/a2a list\n/a2a card ref_v03');
    assert.match(fed, /\[\/a2a list\]\n(.*\n)*arbiter_b — planning helper — summarises plans \(skills: chat\)\n/);
    assert.match(fed, /\nnocard — \(card unavailable\)\n/);
    assert.match(fed, /ref_v1 — SDK reference agent speaking A2A 1\.0 \(skills: listen\)/);
    assert.match(
      fed,
      /\[\/a2a card ref_v03\]\nname: ref-v03\n(.*\n)*interface: JSONRPC 0\.3 http:\/\/127\.0\.0\.1:\d+\/rpc\n(.*\n)* {2}- listen: repeats what it heard/,
    );
    script('master', () => 'hi');
    await fetch(`${server.url}/v1/orchestrate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'who is there?' }),
    }).then((r) => r.text());
    const system: string = requestsFor('master').at(-1)!.body.messages[0].content;
    assert.match(
      system,
      /REMOTE A2A AGENTS — delegate with \/a2a call <name> <message> \(distinct trust boundary; no shared memory\):\n(.*\n)* {2}ref_v03 — SDK reference agent speaking A2A 0\.3/,
    );
  });

  it('each failure mode has its own ERR line', async () => {
    const { fed, events } = await runCommands(
      [
        '/a2a call ghost hi',
        '/a2a call nocard hi',
        '/a2a call notacard hi',
        '/a2a call broken hi',
        '/a2a call wrong_token hi',
        '/a2a call no_token hi',
        '/a2a call rpc_error hi',
        '/a2a call garbage hi',
        '/a2a call ref_v1',
        '/a2a frobnicate',
      ].join('\n'),
    );
    const results = fed.split(/\n(?=\[\/a2a )/);
    assert.equal(results.length, 10, fed);
    assert.match(results[0], /\nERR: no remote agent named 'ghost'\n/);
    assert.match(results[1], /\nERR: card fetch failed: HTTP 404: not found\n/);
    assert.match(results[2], /\nERR: card fetch failed: the body is not a valid AgentCard\n/);
    assert.match(results[3], /\nERR: transport: ECONNREFUSED\n/);
    assert.match(results[4], /\nERR: (card fetch failed: )?HTTP 401: unauthorized/);
    assert.match(results[5], /\nERR: HTTP 401: no token \(environment variable ARBITER_TEST_UNSET_VAR is not set\)\n/);
    // The remote's error repeats the key it was sent: the caller's agent (and its task) sees it redacted.
    assert.match(
      results[6],
      /\nERR: JSON-RPC -32603: .*remote exploded \(the key \[redacted\], sent as "Bearer \[redacted\]"\)\n/,
    );
    assert.ok(!JSON.stringify(events).includes(RPC_ERROR_KEY), 'the remote credential reaches no event');
    assert.match(results[7], /\nERR: malformed response: /);
    assert.match(results[8], /\nERR: usage: \/a2a list \| \/a2a card <name> \| \/a2a call <name> <message>\n/);
    assert.match(results[9], /\nERR: usage: /);
    assert.ok(events.filter((e) => e.event === 'tool_call').every((e) => e.data.ok === false));
    assert.ok(!fed.includes(b.token) && !fed.includes(RPC_ERROR_KEY), 'tokens never reach the model');
  });

  it('a reply that quotes the credential it was sent reaches the calling agent without it', async () => {
    const { fed, events } = await runCommands('/a2a call rpc_mirror hello');
    assert.match(fed, /\[\/a2a call rpc_mirror hello\]\nyou sent Bearer \[redacted\]\n/);
    assert.ok(!fed.includes(RPC_ERROR_KEY) && !JSON.stringify(events).includes(RPC_ERROR_KEY));
  });

  it("canceling the caller cancels the remote task (Arbiter's and an SDK server's)", async () => {
    const GET_TASKS = { binding: 'jsonrpc', method: 'GetTask', dialect: '1.0', error: '' };
    for (const [remote, check] of [
      ['holder', async (id: string) => (await b.client.get(`/v1/requests/${id}`)).body.state === 'canceled'],
      ['ref_v1', (id: string) => Promise.resolve(v1.canceled.has(id))],
    ] as const) {
      const model = script(`holdcaller-${remote}`, (c) => (c.call === 1 ? `/a2a call ${remote} hold` : 'never'));
      await newAgent(a, { id: `holdcaller-${remote}`, model });
      const getTasksBefore = await metric(server.admin, 'arbiter_a2a_requests_total', GET_TASKS);
      const refGetTasksBefore = v1.getTasks.count;
      const res = await fetch(`${server.url}/v1/agents/holdcaller-${remote}/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'go' }),
      });
      const id = res.headers.get('arbiter-request-id')!;
      const reading = readSse(res);
      // Wait until the remote task exists and the caller knows it: the caller polls it with GetTask.
      let remoteId = '';
      if (remote === 'holder') {
        remoteId = await waitFor(async () => {
          const items = (await b.client.get('/v1/requests?agent_id=holder&state=working')).body.items;
          return items[0]?.id as string | undefined;
        });
        await waitFor(async () =>
          (await metric(server.admin, 'arbiter_a2a_requests_total', GET_TASKS)) > getTasksBefore ? true : undefined,
        );
      } else {
        await waitFor(() => Promise.resolve(v1.getTasks.count > refGetTasksBefore ? true : undefined));
      }
      assert.equal((await a.client.post(`/v1/requests/${id}/cancel`)).body.state, 'canceled');
      const { events } = await reading;
      assert.equal(done(events).error_code, 'cancelled');
      if (remote === 'holder') {
        await waitFor(async () => ((await check(remoteId)) ? true : undefined));
      } else {
        await waitFor(() => Promise.resolve(v1.canceled.size > 0 ? true : undefined));
      }
    }
  });

  it('SSRF: a redirect from a trusted remote into the metadata range is refused even with allow-private on', async () => {
    const { fed } = await runCommands('/a2a call hop hi');
    assert.match(fed, /ERR: card fetch failed: 169\.254\.169\.254 is a linkLocal address \(blocked\)/);
  });
});
