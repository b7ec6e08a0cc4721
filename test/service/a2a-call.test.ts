import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TenantPrincipal } from '../../src/common/auth.decorators.js';
import { DomainError } from '../../src/common/errors.js';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import type { Operation } from '../../src/a2a-wire/dialects/dialect.js';
import { V03, V1 } from '../../src/a2a-wire/dialects/dialects.js';
import type { Json } from '../../src/a2a-wire/dialects/params.js';
import { A2aCall, type A2aCallRequest } from '../../src/a2a-inbound/handler/a2a-call.js';
import type { A2aOutcome, A2aStreamOutcome, StreamFrame } from '../../src/a2a-inbound/handler/a2a-invoker.js';
import { checkGrpcVersion, requestedDialect } from '../../src/a2a-inbound/version.js';
import { AgentCatalog } from '../../src/registry/services/agent-catalog.service.js';
import { REAL_POSTGRES } from '../helpers/database.js';
import { startEngine, type TestEngine, tenantPrincipal } from '../helpers/engine.js';

const PLAIN_LIMIT = 4096;

const message = (text: string, extra: Json = {}): Json => ({
  message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra },
});

/** A stream's frames, as a binding writes them (the items its dialect does not show left out). */
async function collect(stream: A2aStreamOutcome): Promise<StreamFrame[]> {
  const out: StreamFrame[] = [];
  for await (const item of stream.items) {
    const frame = stream.frame(item);
    if (frame) out.push(frame);
  }
  return out;
}

/** The outcome of a call that answers once (not a stream). */
function reply(o: A2aOutcome): Exclude<A2aOutcome, { kind: 'stream' }> {
  if (o.kind === 'stream') {
    o.release();
    assert.fail('expected a single answer, got a stream');
  }
  return o;
}

/** Rejects with what `fn` throws, for assertions on the error itself. */
async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to be refused');
}

/**
 * The A2A call — everything between a binding's envelope and its reply —
 * against the real engine, with no HTTP server: version negotiation, the
 * agent resolved for the caller's tenant only, the body limit besides file
 * bytes, the typed outcome of each kind, and what it puts on the request's
 * record.
 */
describe(`A2A call (${REAL_POSTGRES ? 'PostgreSQL server' : 'embedded PGlite'})`, () => {
  let engine: TestEngine;
  let a2a: A2aCall;
  let mine: TenantPrincipal;
  let theirs: TenantPrincipal;
  const request = (
    over: Omit<Partial<A2aCallRequest>, 'params'> & { op: Operation; params?: Json },
  ): A2aCallRequest => {
    const params = over.params ?? {};
    return {
      principal: mine,
      agentId: 'index',
      dialect: V1,
      method: over.op,
      size: { bytes: 100, files: 'base64' },
      abort: new AbortController(),
      ...over,
      params: () => params,
    };
  };
  before(async () => {
    engine = await startEngine({ ARBITER_ECHO_DELAY_MS: '1', ARBITER_MAX_BODY_BYTES: String(PLAIN_LIMIT) });
    a2a = engine.app.get(A2aCall);
    const [t1, t2] = [await engine.newTenant(), await engine.newTenant()];
    mine = tenantPrincipal(t1, 't1', 'x');
    theirs = tenantPrincipal(t2, 't2', 'y');
    await engine.app.get(AgentCatalog).create(t2, { id: 'their-agent', role: 'r', model: 'openai/m' });
  });
  after(() => engine.close());

  describe('§3.6 version negotiation', () => {
    it('HTTP serves 1.0 and 0.3 (absent is 0.3); anything else is VersionNotSupported naming it', () => {
      assert.equal(requestedDialect('1.0', undefined), V1);
      assert.equal(requestedDialect(undefined, '1.0.2'), V1);
      assert.equal(requestedDialect(undefined, undefined), V03);
      assert.equal(requestedDialect(' 0.3 ', undefined), V03);
      assert.throws(
        () => requestedDialect('2.0', undefined),
        (err: unknown) =>
          err instanceof A2aError &&
          err.reason === 'version_not_supported' &&
          err.metadata?.requestedVersion === '2.0' &&
          err.metadata.supportedVersions === '1.0,0.3',
      );
    });

    it('gRPC serves 1.0 only: no version (0.3) is refused too', () => {
      checkGrpcVersion(['1.0']);
      for (const values of [[], ['0.3'], ['9']]) {
        assert.throws(
          () => checkGrpcVersion(values),
          (err: unknown) =>
            err instanceof A2aError &&
            err.reason === 'version_not_supported' &&
            err.metadata?.supportedVersions === '1.0',
        );
      }
    });
  });

  describe('the agent', () => {
    it("another tenant's agent is refused exactly like one that does not exist", async () => {
      const other = await thrown(() => a2a.run(request({ op: 'list', agentId: 'their-agent' })));
      const missing = await thrown(() => a2a.run(request({ op: 'list', agentId: 'no-such-agent' })));
      assert.ok(other instanceof DomainError && missing instanceof DomainError);
      assert.equal(other.code, 'not_found');
      assert.equal(other.message.replace('their-agent', 'X'), missing.message.replace('no-such-agent', 'X'));
      // Its owner reaches it.
      const own = await a2a.run(request({ op: 'list', agentId: 'their-agent', principal: theirs }));
      assert.equal(own.kind, 'tasks');
    });

    it('an id no agent can have is not found, before any lookup', async () => {
      const err = await thrown(() => a2a.run(request({ op: 'list', agentId: 'Not An Id!' })));
      assert.ok(err instanceof DomainError && err.code === 'not_found');
    });
  });

  describe('params and size', () => {
    it('params with a NUL character are InvalidParams naming the path', async () => {
      const err = await thrown(() => a2a.run(request({ op: 'get', params: { id: 'a\u0000b' } })));
      assert.ok(err instanceof A2aError && err.reason === 'invalid_params');
      assert.equal(err.field, 'params.id');
    });

    it('a body past the plain limit is refused unless the excess is file bytes', async () => {
      const big = request({ op: 'send', params: message('hi'), size: { bytes: PLAIN_LIMIT + 1, files: 'base64' } });
      const err = await thrown(() => a2a.run(big));
      assert.ok(err instanceof DomainError && err.code === 'payload_too_large');
      // The same size, made up of a file's base64: within the limit besides its file bytes.
      const raw = Buffer.alloc(3000, 7).toString('base64');
      const withFile = message('hi');
      (withFile.message as { parts: Json[] }).parts.push({ raw, mediaType: 'application/octet-stream' });
      const ok = await a2a.run(
        request({ op: 'send', params: withFile, size: { bytes: PLAIN_LIMIT + 1, files: 'base64' } }),
      );
      assert.equal(ok.kind, 'task');
    });
  });

  describe('outcomes', () => {
    it('send is a task with its id, on the record; get names the same task in either dialect', async () => {
      const log: Record<string, unknown> = {};
      const sent = reply(await a2a.run(request({ op: 'send', method: 'SendMessage', params: message('hello'), log })));
      assert.equal(sent.kind, 'task');
      const taskId = sent.taskId;
      assert.equal((sent.result as { task: { id: string } }).task.id, taskId);
      assert.deepEqual(log, {
        tenant_id: mine.tenantId,
        agent_id: 'index',
        a2a_method: 'SendMessage',
        dialect: '1.0',
        actor: 'token:atr_x',
        task_id: taskId,
      });
      const got = await a2a.run(request({ op: 'get', params: { id: taskId } }));
      assert.deepEqual([got.kind, got.taskId], ['task', taskId]);
      // v0.3 renders the task bare; the outcome still names it.
      const bare = reply(await a2a.run(request({ op: 'get', dialect: V03, params: { id: taskId } })));
      assert.deepEqual([bare.kind, bare.taskId, (bare.result as { id: string }).id], ['task', taskId, taskId]);
    });

    it('a stream is its task id and frames in log order, ending at the settled status', async () => {
      const out = await a2a.run(request({ op: 'stream', params: message('one two') }));
      assert.equal(out.kind, 'stream');
      if (out.kind !== 'stream') return;
      try {
        const frames = await collect(out);
        assert.ok('task' in (frames[0].result as object), 'the task first');
        const seqs = frames.map((f) => f.seq);
        assert.deepEqual(
          seqs,
          [...seqs].sort((a, b) => a - b),
        );
        const last = frames.at(-1)!.result as { statusUpdate?: { taskId: string; status: { state: string } } };
        assert.equal(last.statusUpdate?.taskId, out.taskId);
        assert.equal(last.statusUpdate?.status.state, 'TASK_STATE_COMPLETED');
      } finally {
        out.release();
      }
    });

    it('list, push configs, a deleted config and the card are about no one task', async () => {
      const sent = await a2a.run(request({ op: 'send', params: message('for a webhook') }));
      const taskId = sent.taskId!;
      const list = await a2a.run(request({ op: 'list' }));
      assert.deepEqual([list.kind, list.taskId], ['tasks', undefined]);
      const card = await a2a.run(request({ op: 'extended_card' }));
      assert.deepEqual([card.kind, card.taskId], ['card', undefined]);
      const configs = reply(await a2a.run(request({ op: 'push_list', params: { taskId } })));
      assert.deepEqual(
        [configs.kind, configs.taskId, configs.result],
        ['push_configs', undefined, { configs: [], nextPageToken: '' }],
      );
      const deleted = reply(await a2a.run(request({ op: 'push_delete', params: { taskId, id: 'none' } })));
      assert.deepEqual([deleted.kind, deleted.result], ['deleted', {}]);
      const missing = await thrown(() => a2a.run(request({ op: 'push_get', params: { taskId, id: 'none' } })));
      assert.ok(missing instanceof Error);
    });
  });
});
