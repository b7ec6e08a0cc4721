import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import { V03Dialect } from '../../src/a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../src/a2a-wire/dialects/v1.dialect.js';
import { EnvelopeError, parseEnvelope } from '../../src/a2a-inbound/jsonrpc/envelope.js';
import { toJsonRpcError } from '../../src/a2a-inbound/jsonrpc/jsonrpc-errors.js';
import { TaskError } from '../../src/tasks/task.errors.js';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot.js';
import type { StoredTaskEvent } from '../../src/tasks/task-events.js';

const refused = (body: string): EnvelopeError => {
  try {
    parseEnvelope(body);
  } catch (err) {
    assert.ok(err instanceof EnvelopeError);
    return err;
  }
  assert.fail(`accepted ${body}`);
};

describe('JSON-RPC envelope (JSON-RPC 2.0 §4, spec §9)', () => {
  it('reads id, method and params', () => {
    assert.deepEqual(parseEnvelope('{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}'), {
      id: 'a',
      method: 'GetTask',
      params: { id: 't' },
    });
    assert.deepEqual(parseEnvelope('{"jsonrpc":"2.0","id":null,"method":"m"}').params, {});
  });

  it('refuses what is not a request, keeping the id where it could be read', () => {
    assert.equal(refused('{nope').error.reason, 'parse_error');
    assert.equal(refused('[]').error.reason, 'invalid_request');
    assert.equal(refused('"x"').error.reason, 'invalid_request');
    const noVersion = refused('{"id":7,"method":"m"}');
    assert.deepEqual([noVersion.id, noVersion.error.reason], [7, 'invalid_request']);
    assert.equal(refused('{"jsonrpc":"2.0","id":{"a":1},"method":"m"}').id, null);
    assert.equal(refused('{"jsonrpc":"2.0","id":1,"method":""}').error.reason, 'invalid_request');
    assert.equal(refused('{"jsonrpc":"2.0","id":1,"method":"m","extra":1}').error.reason, 'invalid_request');
    assert.equal(refused('{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}').error.reason, 'invalid_params');
  });
});

describe('JSON-RPC errors (spec §5.4, §9.5)', () => {
  it('maps engine and protocol errors to their codes, with google.rpc details in v1.0 and plain data in v0.3', () => {
    const notFound = toJsonRpcError(TaskError.notFound('t'), '1.0');
    assert.equal(notFound.code, -32001);
    assert.deepEqual((notFound.data as any[])[0].reason, 'TASK_NOT_FOUND');
    assert.equal(toJsonRpcError(TaskError.notCancelable('t', 'done'), '0.3').code, -32002);
    const bad = toJsonRpcError(A2aError.invalidParams('params.id', 'is required'), '1.0');
    assert.equal(bad.code, -32602);
    assert.equal((bad.data as any[])[0]['@type'], 'type.googleapis.com/google.rpc.BadRequest');
    assert.deepEqual(toJsonRpcError(A2aError.invalidParams('params.id', 'is required'), '0.3').data, {
      field: 'params.id',
    });
    const overflow = toJsonRpcError(TaskError.overflow(12), '0.3');
    assert.deepEqual([overflow.code, overflow.data], [-32603, { retryable: 'true', resume_after_seq: '12' }]);
  });

  it('an unexpected error is -32603 "internal error", its text kept from the client and handed to the log', () => {
    const seen: unknown[] = [];
    const out = toJsonRpcError(new Error('secret detail'), '1.0', (e) => seen.push(e));
    assert.equal(out.code, -32603);
    assert.equal(out.message, 'internal error');
    assert.equal(seen.length, 1);
  });
});

describe('wire dialects', () => {
  const task: TaskSnapshot = {
    id: 't',
    contextId: 'c',
    agentId: 'index',
    state: 'TASK_STATE_INPUT_REQUIRED',
    statusMessage: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: 'why?' }] },
    timestamp: '2026-01-01T00:00:00.000Z',
    errorMessage: '',
    history: [
      { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'a' }] },
      { messageId: 'm2', role: 'ROLE_USER', parts: [{ data: { k: 1 } }] },
    ],
    artifacts: [],
    metadata: {},
    inputTokens: 1,
    outputTokens: 2,
    createdAt: '2026-01-01T00:00:00.000Z',
    lastSeq: 4,
  };

  it('v1.0 reads ProtoJSON (role names, returnImmediately) and renders tasks through the SDK codec', () => {
    const v1 = new V1Dialect();
    const call = v1.parse('send', {
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      configuration: { returnImmediately: true, historyLength: 1 },
    });
    assert.equal(call.op, 'send');
    assert.equal(call.op === 'send' && call.params.returnImmediately, true);
    const out = v1.task(task, { historyLength: 1 }) as any;
    assert.equal(out.status.state, 'TASK_STATE_INPUT_REQUIRED');
    assert.deepEqual(
      out.history.map((m: any) => m.messageId),
      ['m2'],
    );
    assert.throws(
      () => v1.parse('get', { id: 5 }),
      (e) => e instanceof A2aError && e.field === 'params.id',
    );
  });

  it('v0.3 reads kind-tagged parts (blocking: false) and marks the last stream event final', () => {
    const v03 = new V03Dialect();
    const call = v03.parse('stream', {
      message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'data', data: { a: 1 } }] },
      configuration: { blocking: false },
    });
    assert.equal(call.op === 'stream' && call.params.returnImmediately, true);
    assert.deepEqual(call.op === 'stream' && call.params.message.parts, [{ data: { a: 1 } }]);
    const out = v03.task(task, {}) as any;
    assert.equal(out.kind, 'task');
    assert.equal(out.status.state, 'input-required');
    assert.equal(out.history[1].parts[0].kind, 'data');
    const event: StoredTaskEvent = {
      taskId: 't',
      seq: 5,
      createdAt: task.timestamp,
      kind: 'status',
      payload: { state: 'TASK_STATE_CANCELED', error: 'canceled by client', timestamp: task.timestamp },
    };
    const frame = v03.streamItem({ type: 'event', event, final: true }, { id: 't', contextId: 'c' }) as any;
    assert.deepEqual([frame.kind, frame.status.state, frame.final], ['status-update', 'canceled', true]);
    assert.equal(
      v03.streamItem(
        {
          type: 'event',
          event: { ...event, kind: 'usage', payload: { inputTokens: 1, outputTokens: 1 } },
          final: false,
        },
        { id: 't', contextId: 'c' },
      ),
      undefined,
    );
  });
});
