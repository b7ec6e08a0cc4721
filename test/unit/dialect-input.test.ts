import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import { V03Dialect } from '../../src/a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../src/a2a-wire/dialects/v1.dialect.js';
import protobuf from 'protobufjs';
import { jsonNameOf, readProtoNames, REQUEST_TYPES, spellingsOf } from '../../src/a2a-wire/dialects/proto-names.js';
import { A2A_ROOT } from '../../src/a2a-inbound/grpc/grpc-codec.js';
import type { Json } from '../../src/a2a-wire/dialects/params.js';
import { v1PushConfig } from '../../src/a2a-wire/dialects/push-params.js';

const v1 = new V1Dialect();
const v03 = new V03Dialect();

/** The A2aError a parse throws (the test fails when it accepts). */
function refusal(parse: () => unknown): A2aError {
  try {
    parse();
  } catch (err) {
    assert.ok(err instanceof A2aError, String(err));
    return err;
  }
  assert.fail('accepted');
}

describe('v1.0 reads ProtoJSON field names: the JSON name or the proto name (spec §5.5, ProtoJSON)', () => {
  const camel: Json = {
    message: {
      messageId: 'm1',
      contextId: 'c1',
      taskId: 't1',
      role: 'ROLE_USER',
      referenceTaskIds: ['t0'],
      metadata: { message_id: 'kept', nested_key: { task_id: 1 } },
      parts: [
        { text: 'hi', mediaType: 'text/plain' },
        { raw: 'AAAA', mediaType: 'application/octet-stream', filename: 'a.bin' },
        { data: { snake_key: { context_id: 'x' } }, mediaType: 'application/json' },
      ],
    },
    configuration: {
      acceptedOutputModes: ['text/plain'],
      historyLength: 2,
      returnImmediately: true,
      taskPushNotificationConfig: {
        taskId: 't1',
        url: 'https://example.test/hook',
        token: 'tok',
        authentication: { scheme: 'Bearer', credentials: 'secret' },
      },
    },
    metadata: { return_immediately: 'kept' },
  };
  const snake: Json = {
    message: {
      message_id: 'm1',
      context_id: 'c1',
      task_id: 't1',
      role: 'ROLE_USER',
      reference_task_ids: ['t0'],
      metadata: { message_id: 'kept', nested_key: { task_id: 1 } },
      parts: [
        { text: 'hi', media_type: 'text/plain' },
        { raw: 'AAAA', media_type: 'application/octet-stream', filename: 'a.bin' },
        { data: { snake_key: { context_id: 'x' } }, media_type: 'application/json' },
      ],
    },
    configuration: {
      accepted_output_modes: ['text/plain'],
      history_length: 2,
      return_immediately: true,
      task_push_notification_config: {
        task_id: 't1',
        url: 'https://example.test/hook',
        token: 'tok',
        authentication: { scheme: 'Bearer', credentials: 'secret' },
      },
    },
    metadata: { return_immediately: 'kept' },
  };

  it('SendMessage in proto names reads exactly as in JSON names; Struct keys (metadata, data) are content', () => {
    const want = v1.parse('send', camel);
    assert.deepEqual(v1.parse('send', snake), want);
    assert.deepEqual(v1.parse('stream', snake), v1.parse('stream', camel));
    assert.ok(want.op === 'send');
    assert.deepEqual(want.params.message.metadata, { message_id: 'kept', nested_key: { task_id: 1 } });
    assert.deepEqual(want.params.message.parts[2]?.data, { snake_key: { context_id: 'x' } });
    assert.equal(want.params.message.parts[0]?.mediaType, 'text/plain');
    assert.equal(want.params.historyLength, 2);
    assert.equal(want.params.returnImmediately, true);
    assert.deepEqual(want.params.acceptedOutputModes, ['text/plain']);
    assert.equal(want.params.push?.config.token, 'tok');
  });

  it('every request: ListTasks, GetTask, the push-config methods', () => {
    const list = {
      context_id: 'c',
      status: 'TASK_STATE_WORKING',
      page_size: '5',
      page_token: undefined,
      history_length: 1,
      status_timestamp_after: '2026-01-01T00:00:00Z',
      include_artifacts: true,
    };
    assert.deepEqual(
      v1.parse('list', list),
      v1.parse('list', {
        contextId: 'c',
        status: 'TASK_STATE_WORKING',
        pageSize: '5',
        historyLength: 1,
        statusTimestampAfter: '2026-01-01T00:00:00Z',
        includeArtifacts: true,
      }),
    );
    // ProtoJSON enums by number too (a2a.proto: 2 is TASK_STATE_WORKING; 0, unspecified, filters nothing).
    assert.deepEqual(v1.parse('list', { ...list, status: 2 }), v1.parse('list', list));
    assert.equal((v1.parse('list', { status: 0 }).params as { state?: string }).state, undefined);
    assert.match(refusal(() => v1.parse('list', { status: 99 })).message, /\(got 99\)$/);
    assert.match(refusal(() => v1.parse('list', { status: 2.5 })).message, /must be a string/);
    assert.match(refusal(() => v03.parse('list', { status: 2 })).message, /must be a string/);
    // A push config read back: its fields in a2a.proto's order, as the SDK's codec writes them; no secret.
    const view = { id: 'c', taskId: 't', url: 'https://example.test/h', dialect: '1.0' as const, tokenSet: true };
    const shown = v1PushConfig({ ...view, authentication: { scheme: 'Bearer', credentialsSet: true } });
    assert.deepEqual(Object.keys(shown), ['id', 'taskId', 'url', 'authentication']);
    assert.deepEqual(shown.authentication, { scheme: 'Bearer' });
    assert.deepEqual(v1.parse('get', { id: 't', history_length: 3 }), {
      op: 'get',
      params: { id: 't', historyLength: 3 },
    });
    assert.deepEqual(v1.parse('push_get', { task_id: 't', id: 'c' }).params, { taskId: 't', id: 'c' });
    assert.deepEqual(v1.parse('push_delete', { task_id: 't', id: 'c' }).params, { taskId: 't', id: 'c' });
    assert.deepEqual(v1.parse('push_list', { task_id: 't', page_size: 3 }).params, { taskId: 't' });
    const set = v1.parse('push_set', { task_id: 't', url: 'https://example.test/h', authentication: { scheme: 'B' } });
    assert.deepEqual(set.op === 'push_set' && [set.params.taskId, set.params.config.authentication?.scheme], [
      't',
      'B',
    ]);
  });

  it('a "__proto__" member of a message stays a member (no prototype is set from a request)', () => {
    const read = readProtoNames('Message', JSON.parse('{"message_id":"m","__proto__":{"x":1}}') as Json, 'params');
    assert.equal(Object.getPrototypeOf(read), Object.prototype);
    assert.deepEqual(Object.keys(read), ['messageId', '__proto__']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(read, '__proto__')?.value, { x: 1 });
  });

  it('one field under both names is -32602 naming it (the protobuf conformance suite refuses duplicates)', () => {
    const twice = refusal(() =>
      v1.parse('send', { message: { ...(camel.message as Json), message_id: 'm1' }, configuration: {} }),
    );
    assert.equal(twice.reason, 'invalid_params');
    assert.equal(twice.field, 'params.message.messageId');
    assert.match(twice.message, /given twice, as messageId and as message_id/);
    const page = refusal(() => v1.parse('list', { pageSize: 5, page_size: 5 }));
    assert.equal(page.field, 'params.pageSize');
    // In either order.
    assert.equal(refusal(() => v1.parse('list', { page_size: 5, pageSize: 5 })).field, 'params.pageSize');
    const part = refusal(() =>
      v1.parse('send', {
        message: {
          messageId: 'm',
          role: 'ROLE_USER',
          parts: [{ text: 'a' }, { raw: 'AAAA', mediaType: 'a/b', media_type: 'a/b' }],
        },
      }),
    );
    assert.equal(part.field, 'params.message.parts[1].mediaType');
  });

  it('the names come from a2a.proto: every field of every message, as the gRPC codec (protobufjs) names it', () => {
    const ns = A2A_ROOT.lookup('lf.a2a.v1') as protobuf.Namespace;
    let fields = 0;
    for (const type of ns.nestedArray.filter((t): t is protobuf.Type => t instanceof protobuf.Type)) {
      for (const f of type.fieldsArray) {
        const [json, proto, ...rest] = spellingsOf(type.name, f.name);
        assert.equal(json, f.name, `${type.name}.${f.name}`);
        assert.deepEqual(rest, []);
        if (proto !== undefined) assert.equal(jsonNameOf(proto), f.name);
        fields++;
      }
    }
    assert.ok(fields > 100, `${fields} fields`);
    assert.deepEqual(spellingsOf('Message', 'referenceTaskIds'), ['referenceTaskIds', 'reference_task_ids']);
    assert.deepEqual(spellingsOf('Part', 'text'), ['text']);
    assert.equal(REQUEST_TYPES.SendMessage, 'SendMessageRequest');
    assert.equal(REQUEST_TYPES.CreateTaskPushNotificationConfig, 'TaskPushNotificationConfig');
    assert.equal(jsonNameOf('oauth2_metadata_url'), 'oauth2MetadataUrl');
  });

  it('v0.3 stays JSON Schema camelCase: a proto name is an unknown field there', () => {
    const e = refusal(() =>
      v03.parse('send', {
        message: { kind: 'message', message_id: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] },
      }),
    );
    assert.equal(e.field, 'params.message.messageId');
  });
});

describe('v0.3 messages carry their kind (the v0.3 schema requires it on Message and on every Part)', () => {
  const message = (extra: Json = {}, part: Json = { kind: 'text', text: 'x' }): Json => ({
    message: { kind: 'message', messageId: 'm', role: 'user', parts: [part], ...extra },
  });

  it('what the v0.3 SDK client sends is read', () => {
    for (const op of ['send', 'stream'] as const) {
      const call = v03.parse(op, message());
      assert.ok(call.op === op && call.params.message.parts[0]?.text === 'x');
    }
    const file = v03.parse(
      'send',
      message({}, { kind: 'file', file: { uri: 'https://example.test/a', mimeType: 'a/b' } }),
    );
    assert.ok(file.op === 'send' && file.params.message.parts[0]?.url === 'https://example.test/a');
  });

  it('a message without kind, or with another, is -32602 naming params.message.kind (send and stream)', () => {
    for (const op of ['send', 'stream'] as const) {
      const missing = refusal(() => v03.parse(op, message({ kind: undefined })));
      assert.deepEqual([missing.reason, missing.field], ['invalid_params', 'params.message.kind']);
      assert.match(missing.message, /params\.message\.kind is required: "message"/);
      const task = refusal(() => v03.parse(op, message({ kind: 'task' })));
      assert.equal(task.field, 'params.message.kind');
    }
  });

  it('a part without kind, or with another, is -32602 naming its kind', () => {
    const missing = refusal(() => v03.parse('send', message({}, { text: 'x' })));
    assert.equal(missing.field, 'params.message.parts[0].kind');
    assert.match(missing.message, /is required: "text", "data" or "file"/);
    assert.equal(
      refusal(() => v03.parse('send', message({}, { kind: 'image', text: 'x' }))).field,
      'params.message.parts[0].kind',
    );
  });
});

describe('refusals say what they received, briefly, never a long value', () => {
  const v1Send = (message: Json): Json => ({
    message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }], ...message },
  });

  it('a role: the token it got, quoted; a long or odd one only described', () => {
    assert.equal(
      refusal(() => v1.parse('send', v1Send({ role: 'UNRECOGNIZED' }))).message,
      'invalid params: params.message.role must be ROLE_USER (got "UNRECOGNIZED")',
    );
    assert.match(refusal(() => v1.parse('send', v1Send({ role: 'ROLE_AGENT' }))).message, /\(got "ROLE_AGENT"\)$/);
    assert.match(refusal(() => v1.parse('send', v1Send({ role: undefined }))).message, /\(got nothing\)$/);
    assert.match(refusal(() => v1.parse('send', v1Send({ role: 0 }))).message, /\(got 0\)$/);
    const secret = 'sk-live-0123456789abcdef0123456789abcdef';
    const long = refusal(() => v1.parse('send', v1Send({ role: secret })));
    assert.match(long.message, /\(got a string of 40 characters\)$/);
    assert.ok(!long.message.includes(secret));
    assert.match(
      refusal(() => v1.parse('send', v1Send({ role: 'user role' }))).message,
      /\(got a string of 9 characters\)$/,
    );
    assert.equal(
      refusal(() =>
        v03.parse('send', {
          message: { kind: 'message', messageId: 'm', role: 'agent', parts: [{ kind: 'text', text: 'x' }] },
        }),
      ).message,
      'invalid params: params.message.role must be "user" (got "agent")',
    );
  });

  it('a part without content: its key names (a few, cut short), never its values', () => {
    assert.equal(
      refusal(() => v1.parse('send', v1Send({ parts: [{}] }))).message,
      'invalid params: params.message.parts[0] must have one of text, raw, url, data (got an empty object)',
    );
    const keyed = refusal(() =>
      v1.parse('send', v1Send({ parts: [{ text: 'ok' }, { kind: 'text', foo: 'a secret value' }] })),
    );
    assert.equal(keyed.field, 'params.message.parts[1]');
    assert.match(keyed.message, /\(got keys: kind, foo\)$/);
    assert.ok(!keyed.message.includes('secret'));
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${'k'.repeat(100)}${i}\u0007`, i]));
    const bounded = refusal(() => v1.parse('send', v1Send({ parts: [many] })));
    assert.ok(bounded.message.length < 400, bounded.message);
    assert.match(bounded.message, /k{32}…, .*\(500 keys\)\)$/);
    assert.match(
      refusal(() => v1.parse('send', v1Send({ parts: [{ text: 'a', url: 'https://x.test' }] }))).message,
      /\(got text and url\)$/,
    );
    assert.match(
      refusal(() => v1.parse('send', v1Send({ parts: ['just text'] }))).message,
      /must be an object \(got a string of 9 characters\)$/,
    );
  });

  it('v0.3 kinds and states, and the other typed readers, say what came', () => {
    const v03Send = (message: Json): Json => ({
      message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }], ...message },
    });
    assert.match(
      refusal(() => v03.parse('send', v03Send({ kind: 'task' }))).message,
      /must be "message" \(got "task"\)$/,
    );
    assert.match(
      refusal(() => v03.parse('send', v03Send({ parts: [{ kind: 'image' }] }))).message,
      /must be "text", "data" or "file" \(got "image"\)$/,
    );
    assert.match(
      refusal(() => v03.parse('send', v03Send({ parts: [{ kind: 'file', file: { name: 'a' } }] }))).message,
      /file must have bytes or uri \(got keys: name\)$/,
    );
    assert.match(refusal(() => v03.parse('list', { status: 'done' })).message, /\(got "done"\)$/);
    // A 1.0 message without the header: the refusal says which header is missing.
    const v1Message = { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } };
    assert.match(refusal(() => v03.parse('send', v1Message)).message, /send the header A2A-Version: 1\.0$/);
    assert.match(refusal(() => v1.parse('list', { status: 'RUNNING' })).message, /\(got "RUNNING"\)$/);
    assert.match(refusal(() => v1.parse('list', { pageSize: 1000 })).message, /between 1 and 100 \(got 1000\)$/);
    assert.match(refusal(() => v1.parse('get', { id: 5 })).message, /non-empty string \(got a number\)$/);
    assert.match(refusal(() => v1.parse('list', { includeArtifacts: 'yes' })).message, /boolean \(got "yes"\)$/);
  });
});
