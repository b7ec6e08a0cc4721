import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AsyncQueue } from '../../src/common/async-queue.js';
import { RunAbort } from '../../src/common/run-abort.js';
import {
  ORCHESTRATOR,
  type Orchestrator,
  type RunContext,
  type RunEvent,
  type RunInput,
} from '../../src/orchestrator/run-event.js';
import { AgentCatalog } from '../../src/registry/services/agent-catalog.service.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine } from '../helpers/engine.js';

/** Sixty-four words: the echo model streams them in as many chunks, one every few milliseconds. */
const LONG = Array.from({ length: 64 }, (_, i) => `w${i}`).join(' ');

/**
 * The orchestrator's side of a run's abort (no HTTP server): the run's own
 * controller is the turn's, so a cancel reaches the turn, and a consumer that
 * stops reading before the turn is over abandons the run and stops the turn.
 */
describe(`orchestrator: a run's abort (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let orchestrator: Orchestrator;
  let ctx: () => RunContext;
  before(async () => {
    engine = await startEngine({ ARBITER_ECHO_CHUNKS: '64', ARBITER_ECHO_DELAY_MS: '5' });
    orchestrator = engine.app.get<Orchestrator>(ORCHESTRATOR);
    const tenantId = await engine.newTenant();
    const agent = await engine.app.get(AgentCatalog).resolve(tenantId, 'index');
    assert.ok(agent);
    ctx = () => ({ tenantId, agent, taskId: randomUUID(), contextId: randomUUID() });
  });
  after(() => engine?.close());

  const inputs = (text: string): AsyncQueue<RunInput> => {
    const q = new AsyncQueue<RunInput>();
    q.push({ text, messageId: randomUUID() });
    return q;
  };

  it('a consumer that reads to the end leaves the run alone: text, usage, then done', async () => {
    const abort = new RunAbort();
    const seen: RunEvent['type'][] = [];
    for await (const ev of orchestrator.run(ctx(), inputs('hello there'), abort)) {
      seen.push(ev.type);
      if (ev.type === 'done') break;
    }
    assert.equal(seen.at(-1), 'done');
    assert.ok(seen.includes('text'));
    assert.equal(abort.signal.aborted, false);
  });

  it('a consumer that stops after the first chunk abandons the run, and its turn stops before it answers', async () => {
    const abort = new RunAbort();
    const seen: RunEvent['type'][] = [];
    // The break returns only once the turn has stopped: had it not, the 64 chunks would still be streaming.
    for await (const ev of orchestrator.run(ctx(), inputs(LONG), abort)) {
      seen.push(ev.type);
      break;
    }
    assert.deepEqual(seen, ['text']);
    assert.equal(abort.signal.aborted, true);
    assert.equal((abort.signal.reason as Error).message, 'run abandoned');
  });

  it("a cancel of the run's controller reaches the turn: reading on fails with the cancel's reason", async () => {
    const abort = new RunAbort();
    const it = orchestrator.run(ctx(), inputs(LONG), abort)[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    abort.abort(new Error('canceled by client'));
    await assert.rejects(async () => {
      for (;;) if ((await it.next()).done) return;
    }, /canceled by client/);
  });

  it('a run with no input ends with no_input', async () => {
    const q = new AsyncQueue<RunInput>();
    q.close();
    const events: RunEvent[] = [];
    for await (const ev of orchestrator.run(ctx(), q, new RunAbort())) events.push(ev);
    assert.deepEqual(
      events.map((e) => e.type),
      ['error'],
    );
    assert.equal((events[0] as Extract<RunEvent, { type: 'error' }>).code, 'no_input');
  });
});
