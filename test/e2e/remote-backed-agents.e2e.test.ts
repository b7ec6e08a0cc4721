// Also loaded by the test runner (--import); here too so that running this file alone keeps the tripwire.
import '../helpers/loopback-only.js';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  SubscribeToTaskRequest,
  TaskState,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { GRPC_ON, startTestServer, type TestServer } from '../helpers/server.js';
import {
  a2a,
  followSse,
  grpcClient,
  restClient,
  sendParams,
  textMessage,
  V1,
  v03Client,
  v1Client,
  waitFor,
  type RpcReply,
  type SendOptions,
} from '../helpers/a2a.js';
import { inOneQuotaWindow } from '../helpers/quota-window.js';
import { startUpstream, type Upstream } from '../helpers/upstream-agent.js';
import { FakeProvider } from '../helpers/fake-provider.js';

const state = (t: Task): string => TaskState[t.status?.state ?? 0];
const textOf = (parts: { content?: { $case: string; value?: unknown } }[] | undefined): string =>
  (parts ?? []).map((p) => (p.content?.$case === 'text' ? String(p.content.value) : '')).join('');
const said = (t: Task): string => textOf(t.status?.message?.parts);
const reply = (t: Task): string => textOf(t.history.at(-1)?.parts);
const artifactText = (t: Task, id: string): string => textOf(t.artifacts.find((a) => a.artifactId === id)?.parts);
const upstreamId = (t: Task): unknown => t.metadata?.['x-arbiter.upstream_task_id'];

function asTask(r: unknown): Task {
  assert.ok(r && typeof r === 'object' && 'status' in r, `a Task, got ${JSON.stringify(r)}`);
  return r as Task;
}

describe('remote-backed agents (gateway mode): any A2A agent behind Arbiter, every task in its log', () => {
  let server: TestServer;
  let up: Upstream;
  let a: TestTenant;
  let b: TestTenant;
  let jsonrpc: Client;
  let fake: FakeProvider;

  const get = (c: Client, id: string): Promise<Task> => c.getTask(GetTaskRequest.fromJSON({ id, historyLength: 50 }));
  const settled = (c: Client, id: string): Promise<Task> =>
    waitFor(async () => {
      const t = await get(c, id);
      return ['TASK_STATE_WORKING', 'TASK_STATE_SUBMITTED'].includes(state(t)) ? undefined : t;
    });

  before(async () => {
    up = await startUpstream();
    fake = new FakeProvider();
    await fake.start();
    server = await startTestServer({
      env: {
        ...GRPC_ON,
        OPENAI_BASE_URL: `${fake.url}/v1`,
        OPENAI_API_KEY: 'sk-test-gateway-0001',
        // The upstream is on loopback: the operator's switch lets registry entries reach private addresses.
        ARBITER_A2A_ALLOW_PRIVATE: 'true',
        ARBITER_A2A_CARD_TTL_MS: '0',
        ARBITER_SECRETS_KEY: randomBytes(32).toString('base64'),
        ARBITER_MAX_TASK_OUTPUT_BYTES: String(1024 * 1024),
      },
    });
    a = await newTenant(server, 'gw-a');
    b = await newTenant(server, 'gw-b');
    for (const [name, path] of [
      ['vendor', 'rpc'],
      ['vendor-poll', 'poll'],
      ['vendor-foreign', 'foreign'],
      ['vendor-garbage', 'garbage'],
      ['vendor-deep', 'deep'],
      ['vendor-deep-lines', 'deep-lines'],
      ['vendor-huge', 'huge'],
      ['vendor-dirty', 'dirty'],
      ['vendor-badlink', 'badlink'],
      ['vendor-dirty-id', 'dirty-id'],
      ['vendor-flood', 'flood'],
    ]) {
      const res = await a.client.post('/v1/remote-agents', { name, url: `${up.url}/${path}` });
      assert.equal(res.status, 201, res.text);
    }
    await newAgent(a, { id: 'gw', backend: { remote: 'vendor' } });
    await newAgent(a, { id: 'gw-poll', backend: { remote: 'vendor-poll', registry: 'tenant' } });
    await newAgent(a, { id: 'gw-foreign', backend: { remote: 'vendor-foreign' } });
    await newAgent(a, { id: 'gw-garbage', backend: { remote: 'vendor-garbage' } });
    await newAgent(a, { id: 'gw-deep', backend: { remote: 'vendor-deep' } });
    await newAgent(a, { id: 'gw-deep-lines', backend: { remote: 'vendor-deep-lines' } });
    await newAgent(a, { id: 'gw-huge', backend: { remote: 'vendor-huge' } });
    await newAgent(a, { id: 'gw-dirty', backend: { remote: 'vendor-dirty' } });
    await newAgent(a, { id: 'gw-badlink', backend: { remote: 'vendor-badlink' } });
    await newAgent(a, { id: 'gw-dirty-id', backend: { remote: 'vendor-dirty-id' } });
    await newAgent(a, { id: 'gw-flood', backend: { remote: 'vendor-flood' } });
    await newAgent(a, { id: 'gw-quiet', backend: { remote: 'vendor', timeouts: { idle_ms: 300 } } });
    jsonrpc = await v1Client(server.url, a.token, 'gw');
  });
  after(async () => {
    await server.close();
    await up.close();
    await fake.stop();
  });

  it('is created with a backend naming a registry entry; an unknown entry, a model beside it or bad timeouts are 400s naming the field', async () => {
    const created = await a.client.get('/v1/agents/gw');
    assert.equal(created.status, 200);
    assert.deepEqual(created.body.agent_def.backend, {
      remote: 'vendor',
      timeouts: { first_event_ms: 30000, idle_ms: 120000, total_ms: 900000 },
    });
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await a.client.post('/v1/agents', { id: 'nope', ...body });
      assert.equal(res.status, 400, res.text);
      assert.ok(
        res.body.details.some((d: { field: string }) => d.field === field),
        `${field} in ${res.text}`,
      );
    };
    await bad({ backend: { remote: 'missing' } }, 'backend.remote');
    await bad({ backend: { remote: 'vendor', registry: 'shared' } }, 'backend.remote');
    await bad({ backend: { remote: 'vendor' }, model: 'echo' }, 'model');
    await bad({ backend: { remote: 'vendor', timeouts: { idle_ms: 5 } } }, 'backend.timeouts.idle_ms');
    await bad({ backend: { remote: 'vendor', extra: 1 } }, 'backend.extra');
    // Lists are no objects (class-validator would check each element, and an empty one not at all).
    await bad({ backend: { remote: 'vendor', timeouts: [] } }, 'backend.timeouts');
    await bad({ backend: { remote: 'vendor', timeouts: [5000] } }, 'backend.timeouts');
    await bad({ backend: [{ remote: 'vendor' }] }, 'backend');
    // Another tenant has no entry of that name.
    const other = await b.client.post('/v1/agents', { id: 'gw', backend: { remote: 'vendor' } });
    assert.equal(other.status, 400, other.text);
    // PATCH is checked the same way.
    const patched = await a.client.patch('/v1/agents/gw-poll', { backend: { remote: 'missing' } });
    assert.equal(patched.status, 400, patched.text);
  });

  it("serves a card derived from the upstream's, with Arbiter's interfaces, security and capabilities", async () => {
    const res = await a.client.get('/v1/a2a/agents/gw/agent-card.json', { 'a2a-version': '1.0' });
    assert.equal(res.status, 200, res.text);
    const card = res.body;
    assert.equal(card.name, 'Vendor Upstream');
    assert.equal(card.description, 'A vendor agent built on the A2A SDK');
    assert.deepEqual(
      card.skills.map((s: { id: string }) => s.id),
      ['vendor-skill'],
    );
    assert.deepEqual(card.defaultOutputModes, ['text/plain', 'application/json']);
    assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: true });
    assert.ok(card.supportedInterfaces.every((i: { url: string }) => !i.url.includes(up.url)));
    assert.ok(card.securitySchemes.bearer);
  });

  it('answers over JSON-RPC, HTTP+JSON and gRPC (v1.0) and JSON-RPC v0.3: an Arbiter task bound to the upstream task', async () => {
    const v03 = await v03Client(server.url, a.token, 'gw');
    const clients: [string, Client][] = [
      ['jsonrpc', jsonrpc],
      ['rest', await restClient(server.url, a.token, 'gw')],
      ['grpc', await grpcClient(server.url, a.token, 'gw')],
      ['v03', v03],
    ];
    for (const [name, c] of clients) {
      const t = asTask(await c.sendMessage(textMessage(`hello ${name}`)));
      assert.equal(state(t), 'TASK_STATE_COMPLETED', name);
      const got = await get(jsonrpc, t.id);
      // v1.0 carries a completed task's answer in its history (§3.7), v0.3 in its status message too.
      assert.equal(said(await get(v03, t.id)), `upstream heard: hello ${name}`, name);
      assert.equal(typeof upstreamId(got), 'string', name);
      assert.notEqual(upstreamId(got), t.id, 'the task id is Arbiter’s own');
      assert.deepEqual(
        got.history.map((m) => textOf(m.parts)),
        [`hello ${name}`, `upstream heard: hello ${name}`],
      );
    }
  });

  it('sends one message after another over connections it keeps: the upstream sees fewer connections than requests', async () => {
    const before = up.traffic();
    for (let i = 0; i < 3; i++) {
      assert.equal(state(asTask(await jsonrpc.sendMessage(textMessage(`again ${i}`)))), 'TASK_STATE_COMPLETED');
    }
    const after = up.traffic();
    const requests = after.requests - before.requests;
    const connections = after.connections - before.connections;
    assert.ok(requests >= 3, `three sends reach the upstream (${requests} requests)`);
    // Each send's stream is read to its end, so its connection is free for the next request.
    assert.ok(connections < requests, `${connections} connections for ${requests} requests`);
  });

  it('answers from an upstream that keeps its stream open after the task completed, then cuts that stream in the background', async () => {
    const reg = await a.client.post('/v1/remote-agents', { name: 'vendor-linger', url: `${up.url}/linger` });
    assert.equal(reg.status, 201, reg.text);
    await newAgent(a, { id: 'gw-linger', backend: { remote: 'vendor-linger' } });
    const c = await v1Client(server.url, a.token, 'gw-linger');
    // The upstream's card says it streams: Arbiter sends SendStreamingMessage and reads the SSE response.
    const card = (await (await fetch(`${up.url}/linger/agent-card.json`)).json()) as { capabilities?: object };
    assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: false });
    for (const text of ['first', 'second']) {
      const seen: string[] = [];
      const record = (what: string) => () => seen.push(what);
      up.lingering.on('held', record('held')).on('closed', record('closed'));
      // Listening before the send: the cut may come at any time after the task settled.
      const closed = once(up.lingering, 'closed', { signal: AbortSignal.timeout(20_000) });
      closed.catch(() => undefined); // awaited below; not an unhandled rejection should the send fail first
      try {
        // The blocking send returns once the task settled: nothing waits on the stream that stays open.
        const t = asTask(await c.sendMessage(textMessage(text)));
        assert.equal(state(t), 'TASK_STATE_COMPLETED', text);
        assert.equal(reply(await get(c, t.id)), 'lingering answer', text);
        // Arbiter drains the rest of that stream, then cuts it: the upstream sees its held response closed.
        await closed.catch(() => assert.fail(`${text}: the upstream's stream left open was never closed (20 s)`));
        assert.deepEqual(seen, ['held', 'closed'], text);
      } finally {
        up.lingering.removeAllListeners();
      }
    }
  });

  it('mirrors a streamed artifact chunk by chunk, and follows an upstream that does not stream by GetTask', async () => {
    const kinds: string[] = [];
    let taskId = '';
    for await (const e of jsonrpc.sendMessageStream(textMessage('chunks one two three'))) {
      kinds.push(e.payload?.$case ?? 'none');
      if (e.payload?.$case === 'task') taskId = e.payload.value.id;
    }
    assert.equal(kinds[0], 'task');
    assert.ok(kinds.filter((k) => k === 'artifactUpdate').length >= 1);
    assert.equal(kinds.at(-1), 'statusUpdate');
    const t = await get(jsonrpc, taskId);
    assert.equal(state(t), 'TASK_STATE_COMPLETED');
    assert.equal(artifactText(t, 'answer'), 'one two three');
    assert.equal(reply(t), 'done: 3 words');

    const polled = await v1Client(server.url, a.token, 'gw-poll');
    const p = asTask(await polled.sendMessage(textMessage('chunks four five')));
    assert.equal(state(p), 'TASK_STATE_COMPLETED');
    assert.equal(artifactText(await get(polled, p.id), 'answer'), 'four five');
  });

  it('forwards a continuation to the same upstream task, and keeps the task readable after the upstream lost it', async () => {
    const asked = asTask(await jsonrpc.sendMessage(textMessage('ask')));
    assert.equal(state(asked), 'TASK_STATE_INPUT_REQUIRED');
    assert.equal(said(asked), 'which colour?');
    const first = upstreamId(await get(jsonrpc, asked.id));
    const done = asTask(
      await jsonrpc.sendMessage(textMessage('blue', { taskId: asked.id, contextId: asked.contextId })),
    );
    assert.equal(state(done), 'TASK_STATE_COMPLETED');
    assert.equal(reply(await get(jsonrpc, done.id)), 'colour: blue');
    const t = await get(jsonrpc, asked.id);
    assert.equal(upstreamId(t), first, 'the same upstream task');
    assert.deepEqual(
      t.history.map((m) => textOf(m.parts)),
      ['ask', 'which colour?', 'blue', 'colour: blue'],
    );

    // The upstream restarts with an empty store: Arbiter still has the task, its history and its place in lists.
    const waiting = asTask(await jsonrpc.sendMessage(textMessage('ask')));
    await up.restart();
    const again = await get(jsonrpc, asked.id);
    assert.equal(reply(again), 'colour: blue');
    const list = await jsonrpc.listTasks(ListTasksRequest.fromJSON({ contextId: asked.contextId }));
    assert.deepEqual(
      list.tasks.map((x) => x.id),
      [asked.id],
    );
    // A continuation the upstream cannot place ends the task failed, saying why.
    const lost = asTask(
      await jsonrpc.sendMessage(textMessage('red', { taskId: waiting.id, contextId: waiting.contextId })),
    );
    assert.equal(state(lost), 'TASK_STATE_FAILED');
    assert.match(said(lost), /upstream_task_lost: the upstream agent no longer knows task/);
  });

  it('replays a running task to a new subscriber and forwards a cancel to the upstream task', async () => {
    const started = asTask(await jsonrpc.sendMessage(textMessage('hold', { returnImmediately: true })));
    const bound = await waitFor(async () => {
      const t = await get(jsonrpc, started.id);
      return typeof upstreamId(t) === 'string' && said(t) === 'holding' ? t : undefined;
    });
    const seen: StreamResponse[] = [];
    const sub = (async () => {
      for await (const e of jsonrpc.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }))) seen.push(e);
    })();
    await waitFor(async () => (seen.length > 0 ? true : undefined));
    const first = seen[0]?.payload;
    assert.ok(first?.$case === 'task', `the task first, got ${first?.$case}`);
    assert.equal(said(first.value), 'holding');
    const canceled = await jsonrpc.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }));
    assert.equal(state(canceled), 'TASK_STATE_CANCELED');
    await sub;
    const last = seen.at(-1)?.payload;
    assert.equal(
      last?.$case === 'statusUpdate' ? TaskState[last.value.status?.state ?? 0] : last?.$case,
      'TASK_STATE_CANCELED',
    );
    await waitFor(async () => (up.canceled.has(String(upstreamId(bound))) ? true : undefined));
  });

  it('forwards the cancel of a task that waits for input', async () => {
    const asked = asTask(await jsonrpc.sendMessage(textMessage('ask')));
    const id = String(upstreamId(await get(jsonrpc, asked.id)));
    const canceled = await jsonrpc.cancelTask(CancelTaskRequest.fromJSON({ id: asked.id }));
    assert.equal(state(canceled), 'TASK_STATE_CANCELED');
    assert.ok(up.canceled.has(id) || (await upstreamState(id)) === 'TASK_STATE_CANCELED');
  });

  const upstreamState = async (id: string): Promise<string> => {
    const res = await fetch(`${up.url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } }),
    });
    const body = (await res.json()) as { result?: { status?: { state?: string } } };
    return body.result?.status?.state ?? '';
  };

  it('ends the task failed with a reason for an upstream that speaks of another task, sends garbage, too deep or too much, or goes silent', async () => {
    for (const [agent, reason] of [
      ['gw-foreign', /upstream_protocol: the upstream sent an event of another task/],
      ['gw-garbage', /upstream_protocol|upstream_error/],
      ['gw-deep', /an event of the stream is nested deeper than 64 levels/],
      ['gw-deep-lines', /an event of the stream is nested deeper than 64 levels/],
      ['gw-huge', /an event of the stream is larger than 4 MiB/],
      ['gw-quiet', /upstream_timeout: the upstream was silent for 300 ms/],
      // A link a client could be made to open as script: refused as a caller's would be.
      ['gw-badlink', /upstream_protocol: the upstream sent a file part whose url is not an absolute http\(s\) URL/],
      ['gw-dirty-id', /upstream_protocol: the upstream sent an event whose task id or context id is not text/],
      // 1.6 MiB of artifact in 400 KiB chunks, past the 1 MiB this server keeps of a task's output.
      ['gw-flood', /output_too_large: the task's output passed 1048576 bytes/],
    ] as const) {
      const c = await v1Client(server.url, a.token, agent);
      const text = agent === 'gw-quiet' ? 'silent' : 'hi';
      const events: StreamResponse[] = [];
      for await (const e of c.sendMessageStream(textMessage(text))) events.push(e);
      const last = events.at(-1)?.payload;
      assert.equal(last?.$case, 'statusUpdate', agent);
      const t = await settled(c, events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '');
      assert.equal(state(t), 'TASK_STATE_FAILED', agent);
      assert.match(said(t), reason, agent);
    }
  });

  it("an upstream's NUL characters and lone surrogates are replaced wherever they are, as in its text", async () => {
    const c = await v1Client(server.url, a.token, 'gw-dirty');
    const events: StreamResponse[] = [];
    for await (const e of c.sendMessageStream(textMessage('hi'))) events.push(e);
    const t = await settled(c, events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '');
    assert.equal(state(t), 'TASK_STATE_COMPLETED', said(t));
    // Read back as stored, over JSON-RPC: every string and key well-formed, the link percent-encoded.
    const res = await fetch(`${server.url}/v1/a2a/agents/gw-dirty`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: t.id } }),
    });
    const text = await res.text();
    const artifact = (JSON.parse(text) as { result: { artifacts: Record<string, any>[] } }).result.artifacts[0];
    const clean = 'a\uFFFDb\uFFFDc';
    assert.equal(artifact.name, clean);
    assert.deepEqual(artifact.parts[0], {
      url: 'https://files.example/x?q=%00z',
      filename: clean,
      mediaType: clean,
    });
    const data = artifact.parts[1].data as Record<string, unknown>;
    assert.deepEqual(Object.keys(data), [clean]);
    assert.equal((data[clean] as unknown[])[0], clean);
    assert.ok(Object.hasOwn((data[clean] as object[])[1], '__proto__'), 'a __proto__ key stays a key');
    assert.deepEqual(artifact.parts[1].metadata, { [clean]: 1 });
    assert.ok(!text.includes('\\u0000') && !/\\ud800/i.test(text), text);
  });

  it('another agent delegates to it like to any sub-agent; the upstream gets the task alone', async () => {
    // A hosted agent whose model delegates to the remote-backed one, then reports what came back.
    fake.scripts.set('delegator', (c) => (c.call === 1 ? '/agent gw summarise the quarter' : `Relayed. ${c.last}`));
    await newAgent(a, { id: 'front', model: 'openai/delegator' });
    const front = await v1Client(server.url, a.token, 'front');
    const t = asTask(await front.sendMessage(textMessage('ask the vendor')));
    assert.equal(state(t), 'TASK_STATE_COMPLETED', said(t));
    const answer = reply(await get(front, t.id));
    assert.match(answer, /^Relayed\./);
    // The upstream heard the task, not the prelude Arbiter writes for its own models.
    assert.match(answer, /upstream heard: summarise the quarter/);
    assert.doesNotMatch(answer, /Delegated by/);
  });

  it('a request budget applies to a remote-backed agent: two messages taken, the third refused with BUDGET_EXHAUSTED', async () => {
    await newAgent(a, { id: 'gw-budget', backend: { remote: 'vendor' } });
    const set = await a.client.put('/v1/agents/gw-budget/budget', { requests_per_day: 2 });
    assert.equal(set.status, 200, set.text);
    const c = await v1Client(server.url, a.token, 'gw-budget');
    // One new task and one message that continues it: two messages taken.
    const asked = asTask(await c.sendMessage(textMessage('ask')));
    assert.equal(state(asked), 'TASK_STATE_INPUT_REQUIRED');
    const answered = asTask(await c.sendMessage(textMessage('blue', { taskId: asked.id, contextId: asked.contextId })));
    assert.equal(state(answered), 'TASK_STATE_COMPLETED');
    const refused = await a2a(server.url, a.token, 'gw-budget', V1).send('third');
    assert.equal(refused.error?.code, -32000, JSON.stringify(refused));
    assert.equal(refused.error?.message, 'budget exhausted for agent gw-budget (requests today: 2 of 2)');
    const info = (refused.error?.data as Record<string, any>[]).find((d) => d.reason === 'BUDGET_EXHAUSTED');
    assert.equal(info?.metadata.budget, 'requests_per_day');
    assert.ok(Date.parse(info?.metadata.resets_at as string) > Date.now());
    // What was used, for the tenant and the operator; the threshold crossed, in the audit log.
    const mine = (await a.client.get('/v1/budgets')).body.agents.find((x: any) => x.agent === 'gw-budget');
    assert.deepEqual([mine?.limits.requests_per_day, mine?.used.day.requests, mine?.used.month.requests], [2, 2, 2]);
    const admin = await server.admin.get(`/v1/admin/budgets?tenant=${a.id}`);
    assert.ok(admin.body.tenant.used.day.requests >= 2, admin.text);
    const crossed = await waitFor(async () => {
      const audit = await server.admin.get(`/v1/admin/audit?tenant_id=${a.id}&limit=100`);
      return audit.body.items.find((e: any) => e.action === 'budget.threshold' && e.detail.agent_id === 'gw-budget');
    });
    assert.equal(crossed.detail.budget, 'requests_per_day');
    // The tenant's own request budget may not be set below what its agents were already sent today.
    const low = await server.admin.patch(`/v1/admin/tenants/${a.id}/limits`, { requests_per_day: 1 });
    assert.equal(low.status, 400, low.text);
    assert.equal(low.body.details[0].field, 'requests_per_day');
    assert.equal((await a.client.delete('/v1/agents/gw-budget/budget')).status, 204);
    assert.equal(state(asTask(await c.sendMessage(textMessage('again')))), 'TASK_STATE_COMPLETED');
  });

  /** A fresh tenant with `limits`, its agent `gw` backed by the upstream's `/rpc`, and JSON-RPC calls on it. */
  const quotaTenant = async (name: string, limits: Record<string, number>) => {
    const t = await newTenant(server, name);
    const set = await server.admin.patch(`/v1/admin/tenants/${t.id}/limits`, limits);
    assert.equal(set.status, 200, set.text);
    assert.equal((await t.client.post('/v1/remote-agents', { name: 'vendor', url: `${up.url}/rpc` })).status, 201);
    await newAgent(t, { id: 'gw', backend: { remote: 'vendor' } });
    const gw = a2a(server.url, t.token, 'gw', V1);
    /** The call's reply, asserted a rate-limited refusal (§3.3.2 ErrorInfo, retryable; `Retry-After` on HTTP). */
    const refused = async (method: string, params: unknown, message: RegExp): Promise<void> => {
      const res = await gw.post(method, params);
      const body = (await res.json()) as RpcReply;
      assert.equal(body.error?.code, -32000, JSON.stringify(body));
      assert.match(body.error.message, message);
      const info = (body.error.data as Record<string, any>[]).find((d) => d['@type']?.endsWith('ErrorInfo'));
      assert.equal(info?.reason, 'RESOURCE_EXHAUSTED');
      assert.equal(info?.metadata.retryable, 'true');
      assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After');
    };
    const taskIds = async (): Promise<string[]> =>
      ((await gw.list({ pageSize: 50 })).result.tasks as { id: string }[]).map((x) => x.id).sort();
    /** A SendStreamingMessage or SubscribeToTask the caller may close; `refusal` when it was answered with an error. */
    const open = async (method: string, params: unknown) => {
      const ctl = new AbortController();
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
      const res = await fetch(`${server.url}/v1/a2a/agents/gw`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', ...V1 },
        body,
        signal: ctl.signal,
      });
      if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
        return { refusal: ((await res.json()) as RpcReply).error?.message ?? 'no error' };
      }
      const sse = followSse(res);
      sse.ended.catch(() => undefined); // a stream the test closes ends with an abort
      await sse.opened;
      return { stream: { close: () => ctl.abort(), ended: sse.ended } };
    };
    return { t, gw, refused, taskIds, open };
  };
  const stateOfReply = (r: RpcReply): string => r.result?.task?.status?.state ?? r.result?.status?.state ?? '';

  it('running-task cap 1: a task following its upstream is running; a new task or a resumption is refused, unstored and unsent, until it ends', async () => {
    const { gw, refused, taskIds } = await quotaTenant('gw-q-running', { max_running_tasks: 1 });
    // A task waiting for input is not running: its upstream turn is over, and the cap has room for another.
    const asked = await gw.send('ask');
    assert.equal(stateOfReply(asked), 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked));
    const askedTask = asked.result.task as { id: string; contextId: string };
    const held = await gw.send('hold', { returnImmediately: true });
    const heldId = String(held.result?.task?.id);
    // Running: Arbiter follows the upstream task, which said "holding" and stays working.
    await waitFor(async () => {
      const t = (await gw.get(heldId)).result;
      return typeof t?.metadata?.['x-arbiter.upstream_task_id'] === 'string' &&
        t.status?.message?.parts?.[0]?.text === 'holding'
        ? t
        : undefined;
    });
    const seen = up.messages().length;
    const tasks = await taskIds();
    const historyOf = async (id: string): Promise<number> => ((await gw.get(id)).result.history as unknown[]).length;
    const askedHistory = await historyOf(askedTask.id);
    const cap = /running-task cap reached: this tenant may run 1 tasks at once/;
    await refused('SendMessage', sendParams('over the running cap'), cap);
    await refused('SendStreamingMessage', sendParams('over the running cap, streamed'), cap);
    await refused('SendMessage', sendParams('green', { taskId: askedTask.id, contextId: askedTask.contextId }), cap);
    // Nothing stored: no new task, the waiting task's history and state as they were.
    assert.deepEqual(await taskIds(), tasks);
    assert.equal(await historyOf(askedTask.id), askedHistory);
    assert.equal(stateOfReply(await gw.get(askedTask.id)), 'TASK_STATE_INPUT_REQUIRED');

    // The running task ends: a message is taken again, the resumption first, then a new task.
    assert.equal(stateOfReply(await gw.cancel(heldId)), 'TASK_STATE_CANCELED');
    const taken = (text: string, opts: SendOptions = {}) =>
      waitFor(async () => {
        const r = await gw.send(text, opts);
        if (r.result) return r;
        assert.match(r.error?.message ?? '', cap, JSON.stringify(r)); // refused only while the run winds down
        return undefined;
      });
    const resumed = await taken('green', { taskId: askedTask.id, contextId: askedTask.contextId });
    assert.equal(stateOfReply(resumed), 'TASK_STATE_COMPLETED', JSON.stringify(resumed));
    const fresh = await taken('under the running cap');
    assert.equal(stateOfReply(fresh), 'TASK_STATE_COMPLETED', JSON.stringify(fresh));
    // The upstream heard the messages taken, and none of those refused.
    assert.deepEqual(up.messages().slice(seen), ['green', 'under the running cap']);
  });

  it('open-stream cap 1: a stream of a remote-backed task is open; a second is refused, unstored and unsent, until the first closes', async () => {
    const { gw, refused, taskIds, open } = await quotaTenant('gw-q-streams', { max_open_streams: 1 });
    // A streaming send held open: its first event comes once the upstream has answered.
    const { stream: first, refusal } = await open('SendStreamingMessage', sendParams('hold'));
    assert.ok(first, `the first stream opens, got ${refusal}`);
    const seen = up.messages().length;
    const [heldId] = await taskIds();
    assert.ok(heldId);
    const cap = /open-stream cap reached: this tenant may hold 1 streams open at once/;
    await refused('SendStreamingMessage', sendParams('a second stream'), cap);
    await refused('SubscribeToTask', { id: heldId }, cap);
    assert.deepEqual(await taskIds(), [heldId], 'the refused stream created no task');

    // The client closes the first stream (the task goes on): a subscription to the task is a stream of it.
    first.close();
    const opened = async (method: string, params: unknown) =>
      waitFor(async () => {
        const s = await open(method, params);
        if (s.stream) return s.stream;
        assert.match(s.refusal ?? '', cap); // refused only until the closed stream is let go
        return undefined;
      });
    const sub = await opened('SubscribeToTask', { id: heldId });
    await refused('SendStreamingMessage', sendParams('a stream beside the subscription'), cap);
    // The task ends: its subscription closes, and a new stream is taken and answered to its end.
    assert.equal(stateOfReply(await gw.cancel(heldId)), 'TASK_STATE_CANCELED');
    const last = (await sub.ended).events.at(-1)?.data.result;
    assert.equal(last?.statusUpdate?.status?.state, 'TASK_STATE_CANCELED');
    const next = await opened('SendStreamingMessage', sendParams('streamed under the cap'));
    const events = (await next.ended).events.map((e) => e.data.result);
    assert.equal(events.at(-1)?.statusUpdate?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(events));
    assert.equal((await taskIds()).length, 2);
    assert.deepEqual(up.messages().slice(seen), ['streamed under the cap']);
  });

  it('sends per minute: its messages count, and the one over the limit is refused, unstored and unsent', async () => {
    await inOneQuotaWindow(async () => {
      const { gw, refused, taskIds } = await quotaTenant('gw-q-sends', { sends_per_minute: 2 });
      const seen = up.messages().length;
      // A new task and the message that continues it: two sends.
      const asked = await gw.send('ask');
      assert.equal(stateOfReply(asked), 'TASK_STATE_INPUT_REQUIRED', JSON.stringify(asked));
      const { id, contextId } = asked.result.task as { id: string; contextId: string };
      assert.equal(stateOfReply(await gw.send('yellow', { taskId: id, contextId })), 'TASK_STATE_COMPLETED');
      const quota = /send quota reached: 2 messages per minute for this tenant/;
      await refused('SendMessage', sendParams('over the send quota'), quota);
      await refused('SendStreamingMessage', sendParams('over the send quota, streamed'), quota);
      assert.deepEqual(await taskIds(), [id]);
      assert.deepEqual(up.messages().slice(seen), ['ask', 'yellow']);
    });
  });

  it('a message sent again (the same messageId) gets the task it created, and the upstream hears it once', async () => {
    const gw = a2a(server.url, a.token, 'gw', V1);
    const seen = up.messages().length;
    const messageId = randomUUID();
    const first = await gw.send('once, however often sent', { messageId });
    assert.equal(stateOfReply(first), 'TASK_STATE_COMPLETED', JSON.stringify(first));
    for (let i = 0; i < 3; i++) {
      const again = await gw.send('once, however often sent', { messageId });
      assert.equal(again.result?.task?.id, first.result.task.id, JSON.stringify(again));
    }
    // A resend's run is abandoned before it acts (its creation failed); a later message marks the upstream's reading.
    assert.equal(stateOfReply(await gw.send('after the resends')), 'TASK_STATE_COMPLETED');
    assert.deepEqual(up.messages().slice(seen), ['once, however often sent', 'after the resends']);
  });

  it('scopes and the audit log apply to a remote-backed agent as to a hosted one', async () => {
    const readOnly = await server.admin.post(`/v1/admin/tenants/${a.id}/tokens`, { scopes: ['tasks:read'] });
    assert.equal(readOnly.status, 201, readOnly.text);
    const denied = await a2a(server.url, readOnly.body.token as string, 'gw', V1).send('hi');
    assert.equal(denied.error?.code, -32000, JSON.stringify(denied));
    const info = (denied.error?.data as Record<string, any>[]).find((d) => d.reason === 'PERMISSION_DENIED');
    assert.match(String(info?.metadata.required_scopes), /a2a:invoke/);
    const audit = await server.admin.get(`/v1/admin/audit?tenant_id=${a.id}&limit=100`);
    const created = audit.body.items.find((e: any) => e.action === 'agent.create' && e.detail.agent_id === 'gw');
    assert.deepEqual(created?.detail.backend, { remote: 'vendor' });
  });

  it('another tenant sees neither the agent nor its tasks', async () => {
    const t = asTask(await jsonrpc.sendMessage(textMessage('private')));
    const card = await b.client.get('/v1/a2a/agents/gw/agent-card.json');
    assert.equal(card.status, 404);
    const own = await newAgent(b, { id: 'b-echo', model: 'echo' });
    assert.ok(own);
    const stranger = await v1Client(server.url, b.token, 'b-echo');
    await assert.rejects(stranger.getTask(GetTaskRequest.fromJSON({ id: t.id })), /not found/i);
  });
});
