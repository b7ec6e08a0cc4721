import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { tracing as sdkTracing } from '@opentelemetry/sdk-node';
import { startTracing, stopTracing } from '../../src/tracing/sdk.js';

// The SDK and its loader hook first; the application's modules (express, pg …) only after, as with `--import`.
// Traces only: left unset, the SDK also exports metrics over OTLP, and its shutdown waits seconds for a collector
// that is not there.
process.env.OTEL_METRICS_EXPORTER ??= 'none';
const exporter = new sdkTracing.InMemorySpanExporter();
await startTracing({ exporter, serviceName: 'arbiter-test' });
const { startTestServer } = await import('../helpers/server.js');
const { newAgent, newTenant } = await import('../helpers/factories.js');
const { FakeProvider } = await import('../helpers/fake-provider.js');
const { a2a, V1, waitFor } = await import('../helpers/a2a.js');
const { REAL_POSTGRES } = await import('../helpers/database.js');
type TestServer = Awaited<ReturnType<typeof startTestServer>>;
type ReadableSpan = sdkTracing.ReadableSpan;

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('OpenTelemetry: one trace from the caller through a run, its model and tool calls, to another Arbiter', () => {
  let fake: InstanceType<typeof FakeProvider>;
  let a: TestServer;
  let b: TestServer;
  let page: Server;
  let pageUrl: string;
  const QUERY_SECRET = 'query-secret-0123456789';
  const pageHeaders: IncomingHttpHeaders[] = [];

  before(async () => {
    fake = new FakeProvider();
    await fake.start();
    page = createServer((req, res) => {
      pageHeaders.push(req.headers);
      res.setHeader('content-type', 'text/plain');
      res.end('the page');
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    const port = (page.address() as AddressInfo).port;
    pageUrl = `http://127.0.0.1:${port}/page`;
    const env = { OPENAI_BASE_URL: `${fake.url}/v1`, ARBITER_DEFAULT_MODEL: 'openai/none' };
    b = await startTestServer({ env });
    a = await startTestServer({
      env: { ...env, ARBITER_A2A_ALLOW_PRIVATE: 'true', ARBITER_FETCH_ALLOWLIST: `127.0.0.1:${port}` },
    });
  });
  after(async () => {
    await a.close();
    await b.close();
    await new Promise((resolve) => page.close(resolve));
    await fake.stop();
    await stopTracing();
  });

  it('an inbound traceparent is continued across run, model, /a2a (into Arbiter B) and /fetch; the task id is an attribute', async () => {
    const tb = await newTenant(b, 'callee');
    fake.scripts.set('helper-m', (c) => `helper says: ${c.last}`);
    await newAgent(tb, { id: 'helper', model: 'openai/helper-m' });
    const ta = await newTenant(a, 'caller');
    writeFileSync(
      join(a.home, 'a2a_agents.json'),
      JSON.stringify({ agents: { arbiter_b: { url: `${b.url}/v1/a2a/agents/helper`, auth: { token: tb.token } } } }),
    );
    fake.scripts.set('caller-m', (c) =>
      c.call === 1
        ? `Asking B and reading.\n/a2a call arbiter_b summarise the plan\n/fetch ${pageUrl}?access_token=${QUERY_SECRET}`
        : 'all done',
    );
    await newAgent(ta, { id: 'caller', model: 'openai/caller-m' });

    const traced = { ...V1, traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` };
    const body = await a2a(a.url, ta.token, 'caller', traced).send('go');
    const task = body.result?.task;
    assert.ok(task, JSON.stringify(body));
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');

    const inTrace = (): ReadableSpan[] =>
      exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID);
    // B's run ends after it answered A: wait for its span too.
    const runs = await waitFor(async () => {
      const r = inTrace().filter((s) => s.name === 'arbiter.run');
      return r.length >= 2 ? r : undefined;
    });
    const spans = inTrace();
    const byName = (name: string) => spans.filter((s) => s.name === name);

    // A's server span continues the caller's span.
    const serverSpans = spans.filter((s) => s.kind === SpanKind.SERVER);
    const aPort = new URL(a.url).port;
    const bPort = new URL(b.url).port;
    const portOf = (s: ReadableSpan) => String(s.attributes['server.port'] ?? s.attributes['net.host.port'] ?? '');
    const aServer = serverSpans.find((s) => portOf(s) === aPort && s.parentSpanContext?.spanId === CALLER_SPAN);
    assert.ok(aServer, `A's server span is a child of the caller's: ${serverSpans.map((s) => s.name).join(', ')}`);
    assert.equal(aServer.attributes['a2a.task_id'] ?? findAttr(spans, aServer, 'a2a.task_id'), task.id);
    // The A2A HTTP controller names its route as Express's instrumentation names Nest's.
    assert.equal(aServer.attributes['http.route'], '/v1/a2a/agents/:id');
    assert.equal(aServer.name, 'POST /v1/a2a/agents/:id');

    // The run (detached from the request) is in the trace, with the task id.
    const aRun = runs.find((s) => s.attributes['a2a.task_id'] === task.id);
    assert.ok(aRun, 'the run span names the task');
    assert.equal(aRun.attributes['arbiter.agent_id'], 'caller');

    // Model calls and tool calls are children in the same trace.
    const chats = byName('chat caller-m');
    assert.equal(chats.length, 2);
    assert.ok(chats.every((s) => s.kind === SpanKind.CLIENT && s.attributes['gen_ai.request.model'] === 'caller-m'));
    const a2aTool = byName('tool /a2a')[0];
    const fetchTool = byName('tool /fetch')[0];
    assert.ok(a2aTool && fetchTool, spans.map((s) => s.name).join(', '));
    assert.ok(isUnder(spans, a2aTool, aRun) && isUnder(spans, fetchTool, aRun));

    // The outbound A2A call reached B with a traceparent: B's server span and B's run are in the trace.
    const bServer = serverSpans.find((s) => portOf(s) === bPort && s.attributes['http.request.method'] === 'POST');
    assert.ok(bServer, "B's server span is in A's trace");
    assert.ok(isUnder(spans, bServer, a2aTool), "B's request is a child of A's /a2a tool call");
    const bRun = runs.find((s) => s !== aRun);
    assert.ok(bRun && bRun.attributes['arbiter.agent_id'] === 'helper');
    assert.ok(byName('chat helper-m').length >= 1);

    // On PostgreSQL the run's queries are pg spans under it (the embedded database is not instrumented).
    if (REAL_POSTGRES) {
      const db = spans.filter((s) => (s.attributes['db.system.name'] ?? s.attributes['db.system']) === 'postgresql');
      assert.ok(
        db.some((s) => isUnder(spans, s, aRun)),
        `pg spans under the run: ${db.map((s) => s.name).join(', ')}`,
      );
    }

    // /fetch: the loopback page received the W3C header of the same trace.
    const sent = pageHeaders.at(-1)?.traceparent;
    assert.match(String(sent), new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    // Its span names the page's origin and path; no span of Arbiter's holds the query (a secret, perhaps). The
    // page's own server span, of this test's process, records it as a server does.
    assert.ok(spans.some((s) => s.kind === SpanKind.CLIENT && s.attributes['url.full'] === pageUrl));
    const pagePort = Number(new URL(pageUrl).port);
    const ours = exporter
      .getFinishedSpans()
      .filter((s) => !(s.kind === SpanKind.SERVER && s.attributes['server.port'] === pagePort));
    const all = JSON.stringify(ours.map((s) => [s.name, s.attributes]));
    assert.ok(
      !all.includes(QUERY_SECRET),
      `a query string in a span: ${all.slice(Math.max(0, all.indexOf(QUERY_SECRET) - 600), all.indexOf(QUERY_SECRET) + 100)}`,
    );
  });

  it('without an inbound traceparent a request starts its own trace', async () => {
    const res = await fetch(`${a.url}/v1/agents`, { headers: { authorization: `Bearer ${a.adminToken}` } });
    await res.arrayBuffer();
    const server = await waitFor(async () =>
      exporter
        .getFinishedSpans()
        .find((s) => s.kind === SpanKind.SERVER && s.attributes['http.route'] === '/v1/agents'),
    );
    assert.notEqual(server.spanContext().traceId, TRACE_ID);
    assert.equal(server.parentSpanContext, undefined);
  });
});

/** Whether `span` descends from `ancestor` (same trace, through parents). */
function isUnder(spans: ReadableSpan[], span: ReadableSpan, ancestor: ReadableSpan): boolean {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  for (let s: ReadableSpan | undefined = span; s; s = byId.get(s.parentSpanContext?.spanId ?? '')) {
    if (s === ancestor) return true;
  }
  return false;
}

/** An attribute set on one of the server span's children (express's route handler span is the active one). */
function findAttr(spans: ReadableSpan[], root: ReadableSpan, key: string): unknown {
  const id = root.spanContext().spanId;
  return spans.find((s) => s.attributes[key] !== undefined && s.parentSpanContext?.spanId === id)?.attributes[key];
}
