import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { A2A_PROTO } from '../../src/a2a-wire/a2a-proto.js';
import {
  A2A_ROOT,
  a2aPackageDefinition,
  UndecodedMessage,
  a2aType,
  fromProtoJson,
  MalformedMessage,
  OversizeMessage,
  toProtoJson,
} from '../../src/a2a-inbound/grpc/grpc-codec.js';
import { wireScan } from '../../src/a2a-inbound/grpc/grpc-wire-check.js';

const wireProblem = (type: protobuf.Type, bytes: Uint8Array): string | undefined => wireScan(type, bytes).problem;
import { decodeStatusDetails, STATUS_DETAILS_KEY, toGrpcError } from '../../src/a2a-inbound/grpc/grpc-errors.js';
import { A2aError } from '../../src/a2a-wire/a2a-errors.js';
import { V1Dialect } from '../../src/a2a-wire/dialects/v1.dialect.js';
import { TaskError } from '../../src/tasks/task.errors.js';
import type { ServiceDefinition } from '@grpc/proto-loader';

/** The normative proto beside the repository (the workspace's shared/reference), when it is there. */
const REFERENCE = resolve('..', 'shared', 'reference', 'a2a-v1.0.proto');

function parseProto(text: string): protobuf.Root {
  const root = new protobuf.Root();
  protobuf.parse(text, root, { keepCase: false });
  return root;
}

/**
 * The service's methods, each reading a request as the binding does: grpc-js hands its bytes over undecoded
 * (`UndecodedMessage`), and the binding opens them once the caller is checked.
 */
const service = (): ServiceDefinition => {
  const definition = a2aPackageDefinition()['lf.a2a.v1.A2AService'] as ServiceDefinition;
  for (const method of Object.values(definition)) {
    const deserialize = method.requestDeserialize;
    method.requestDeserialize = (bytes: Buffer): object => {
      const r = deserialize(bytes);
      return r instanceof UndecodedMessage ? r.open() : r;
    };
  }
  return definition;
};

/** A message through the wire: ProtoJSON → proto-loader's object → bytes → what the server's deserializer hands over. */
function overTheWire(typeName: string, method: string, json: Record<string, unknown>): unknown {
  const type = a2aType(typeName);
  const bytes = type.encode(type.fromObject(fromProtoJson(type, json))).finish();
  return service()[method].requestDeserialize(Buffer.from(bytes));
}

describe('gRPC codec (spec §10)', () => {
  it(
    'the embedded a2a.proto defines exactly what the reference a2a.proto does',
    { skip: !existsSync(REFERENCE) && `no reference a2a.proto at ${REFERENCE}` },
    () => {
      // Compared as plain JSON: protobufjs' toJSON objects are not plain data to deepEqual.
      const plain = (root: protobuf.Root): unknown => JSON.parse(JSON.stringify(root.toJSON()));
      const embedded = plain(parseProto(A2A_PROTO));
      assert.deepEqual(embedded, plain(parseProto(readFileSync(REFERENCE, 'utf8'))));
      // Options included (the HTTP annotations): the comparison is not of two empty shells.
      assert.match(JSON.stringify(embedded), /message:send/);
    },
  );

  it('a2a.proto is read from beside the compiled module (dist/ alone, as the image ships it), else from src/', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'a2a-proto-'));
    try {
      // The compiled module alone with a proto beside it: the one beside it is read.
      copyFileSync(
        fileURLToPath(new URL('../../src/a2a-wire/a2a-proto.js', import.meta.url)),
        join(dir, 'a2a-proto.js'),
      );
      writeFileSync(join(dir, 'a2a.proto'), `${A2A_PROTO}// beside\n`);
      const alone = (await import(pathToFileURL(join(dir, 'a2a-proto.js')).href)) as { A2A_PROTO: string };
      assert.ok(alone.A2A_PROTO.endsWith('// beside\n'));
      // The build's copy step puts every .proto of src/ at the same place under dist/.
      mkdirSync(join(dir, 'src', 'a2a-wire'), { recursive: true });
      writeFileSync(join(dir, 'src', 'a2a-wire', 'a2a.proto'), A2A_PROTO);
      execFileSync(process.execPath, [resolve('scripts', 'copy-assets.mjs')], { cwd: dir });
      assert.equal(readFileSync(join(dir, 'dist', 'src', 'a2a-wire', 'a2a.proto'), 'utf8'), A2A_PROTO);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.match(A2A_PROTO, /^syntax = "proto3";\npackage lf\.a2a\.v1;/);
  });

  it('serves every method of A2AService, the streaming ones as server streams', () => {
    const methods = service();
    assert.deepEqual(Object.keys(methods).sort(), Object.keys(new V1Dialect().methods).sort());
    const streaming = Object.entries(methods)
      .filter(([, m]) => m.responseStream)
      .map(([name]) => name)
      .sort();
    assert.deepEqual(streaming, ['SendStreamingMessage', 'SubscribeToTask']);
    assert.ok(Object.values(methods).every((m) => !m.requestStream));
  });

  it('a decoded request becomes the ProtoJSON the v1.0 dialect parses (Struct, Value, enums, bytes, optional)', () => {
    const json = {
      tenant: 'agent-1',
      message: {
        messageId: 'm1',
        role: 'ROLE_USER',
        parts: [
          { text: '' },
          { data: { a: [1, 'two', true, null, { b: {} }] } },
          { raw: Buffer.from('hi').toString('base64'), mediaType: 'text/plain', filename: 'x.txt' },
        ],
        metadata: { k: { nested: ['v'] } },
      },
      configuration: { historyLength: 0, returnImmediately: true },
    };
    const decoded = overTheWire('SendMessageRequest', 'SendMessage', json);
    assert.deepEqual(toProtoJson(a2aType('SendMessageRequest'), decoded), json);
    // And the dialect takes it as it takes JSON-RPC params.
    const parsed = new V1Dialect().parse('send', toProtoJson(a2aType('SendMessageRequest'), decoded));
    assert.equal(parsed.op, 'send');
  });

  it('Timestamps are RFC 3339 both ways; a bad one is InvalidParams', () => {
    const decoded = overTheWire('ListTasksRequest', 'ListTasks', {
      statusTimestampAfter: '2024-05-06T07:08:09.123Z',
      status: 'TASK_STATE_WORKING',
      pageSize: 3,
    });
    assert.deepEqual(toProtoJson(a2aType('ListTasksRequest'), decoded), {
      statusTimestampAfter: '2024-05-06T07:08:09.123Z',
      status: 'TASK_STATE_WORKING',
      pageSize: 3,
    });
    assert.throws(
      () =>
        toProtoJson(a2aType('ListTasksRequest'), { statusTimestampAfter: { seconds: '999999999999999', nanos: 0 } }),
      (e: unknown) => e instanceof A2aError && e.reason === 'invalid_params' && e.field === 'statusTimestampAfter',
    );
  });

  it('refuses what JSON cannot hold or the system cannot take: NaN, nesting past the limit', () => {
    const nan = { tenant: 't', message: { metadata: { fields: { x: { numberValue: Number.NaN } } } } };
    assert.throws(
      () => toProtoJson(a2aType('SendMessageRequest'), nan),
      (e: unknown) => e instanceof A2aError && e.field === 'message.metadata.x',
    );
    let deep: Record<string, unknown> = { stringValue: 'leaf' };
    for (let i = 0; i < 200; i++) deep = { structValue: { fields: { d: deep } } };
    assert.throws(
      () => toProtoJson(a2aType('SendMessageRequest'), { message: { metadata: { fields: { d: deep } } } }),
      (e: unknown) => e instanceof A2aError && e.reason === 'invalid_params',
    );
  });

  it('grpc-js hands a request over undecoded: nothing of it is read before the binding has checked the caller', () => {
    const raw = a2aPackageDefinition()['lf.a2a.v1.A2AService'] as ServiceDefinition;
    // Bytes that are no message at all, and 8 MiB of empty parts: neither is looked at here.
    const many = Buffer.concat([Buffer.from([0x12, 0x80, 0x80, 0x80, 0x04]), Buffer.alloc(8 * 1024 * 1024, 0)]);
    many.fill(Buffer.from([0x2a, 0x00]), 5);
    for (const bytes of [Buffer.from([0xff, 0xff, 0xff]), many]) {
      const got: unknown = raw.SendMessage.requestDeserialize(bytes);
      assert.ok(got instanceof UndecodedMessage);
    }
    const opened = (raw.SendMessage.requestDeserialize(Buffer.from([0xff, 0xff, 0xff])) as UndecodedMessage).open();
    assert.ok(opened instanceof MalformedMessage);
  });

  it('a request whose bytes do not decode is a MalformedMessage, not an exception', () => {
    const decoded = service().SendMessage.requestDeserialize(Buffer.from([0x12, 0x03, 0x22, 0x05, 0x01]));
    assert.ok(decoded instanceof MalformedMessage);
  });

  it('a field sent with the wrong wire type is a MalformedMessage naming it, in every method and at any depth', () => {
    // Field 1 (tenant on most requests) as a varint, on every method: the decoder alone reads it as an empty string.
    const reflected = A2A_ROOT.lookupService('lf.a2a.v1.A2AService');
    for (const [name, method] of Object.entries(service())) {
      const decoded = method.requestDeserialize(Buffer.from([0x08, 0x05]));
      assert.ok(decoded instanceof MalformedMessage, name);
      const field = reflected.methods[name].resolvedRequestType!.fieldsById[1].name;
      assert.equal(
        decoded.problem,
        `${field} (field 1) is sent varint (wire type 0); a2a.proto declares string, sent length-delimited (wire type 2)`,
      );
    }
    const type = a2aType('SendMessageRequest');
    const good = (json: Record<string, unknown>) =>
      Buffer.from(type.encode(type.fromObject(fromProtoJson(type, json))).finish());
    const msg = { tenant: 't', message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a' }, { text: 'b' }] } };
    // The second part's text (field 1 of Part) rewritten as a 32-bit value: [0x0a, 1, 'b'] → [0x0d, …].
    const bytes = good(msg);
    const at = bytes.lastIndexOf(Buffer.from([0x0a, 0x01, 0x62]));
    const bad = Buffer.concat([bytes.subarray(0, at), Buffer.from([0x0d, 0x62, 0x62]), bytes.subarray(at + 3)]);
    const nested = service().SendMessage.requestDeserialize(bad);
    assert.ok(nested instanceof MalformedMessage);
    assert.match(nested.problem, /^message\.parts\[1\]\.text \(field 1\) is sent 32-bit \(wire type 5\)/);
    // An enum sent length-delimited; a map entry's value of the wrong type.
    const role = Buffer.concat([good({ tenant: 't' }), Buffer.from([0x12, 0x04, 0x22, 0x02, 0x41, 0x42])]);
    const r = service().SendMessage.requestDeserialize(role);
    assert.ok(r instanceof MalformedMessage);
    assert.match(
      r.problem,
      /^message\.role \(field 4\) is sent length-delimited \(wire type 2\); a2a\.proto declares Role/,
    );
    const meta = good({ tenant: 't', metadata: { k: 'v' } });
    const valueAt = meta.lastIndexOf(Buffer.from([0x1a, 0x01, 0x76])); // Value.string_value (3) = "v"
    const m = service().SendMessage.requestDeserialize(
      Buffer.concat([meta.subarray(0, valueAt), Buffer.from([0x18, 0x76, 0x00]), meta.subarray(valueAt + 3)]),
    );
    assert.ok(m instanceof MalformedMessage);
    assert.match(m.problem, /^metadata\.fields\[0\]\.value\.stringValue \(field 3\) is sent varint/);
    // A string cut short, or not UTF-8; an invalid wire type in an unknown field.
    const cut = service().GetTask.requestDeserialize(Buffer.from([0x0a, 0x03, 0x61, 0x62]));
    assert.ok(cut instanceof MalformedMessage && cut.problem === 'tenant claims 3 bytes, but only 2 remain');
    const utf8 = service().GetTask.requestDeserialize(Buffer.from([0x0a, 0x02, 0xc3, 0x28]));
    assert.ok(utf8 instanceof MalformedMessage && utf8.problem === 'tenant is not valid UTF-8');
    const unknown = service().GetTask.requestDeserialize(Buffer.from([0xf8, 0x07, 0x01])); // field 127, a varint
    assert.ok(!(unknown instanceof MalformedMessage), 'an unknown field is skipped');
    assert.ok(service().GetTask.requestDeserialize(Buffer.from([0xff, 0x07, 0x01])) instanceof MalformedMessage);
  });

  it('past the plain limit, a request of a method that carries no message is an OversizeMessage, left unread', () => {
    const methods = a2aPackageDefinition(16)['lf.a2a.v1.A2AService'] as ServiceDefinition;
    const type = a2aType('GetTaskRequest');
    const bytes = (id: string) => Buffer.from(type.encode(type.fromObject({ tenant: 't', id })).finish());
    assert.equal(bytes('x'.repeat(11)).length, 16);
    assert.ok(!(methods.GetTask.requestDeserialize(bytes('x'.repeat(11))) instanceof OversizeMessage));
    const over = methods.GetTask.requestDeserialize(bytes('x'.repeat(12)));
    assert.ok(over instanceof OversizeMessage);
    assert.deepEqual([over.bytes, over.limit], [17, 16]);
    // Garbage past the limit is not even looked at.
    assert.ok(methods.ListTasks.requestDeserialize(Buffer.alloc(17, 0xff)) instanceof OversizeMessage);
    // The two methods that carry a message (and file bytes) are held by gRPC's own limit and the binding's check.
    const send = a2aType('SendMessageRequest');
    const big = Buffer.from(
      send
        .encode(send.fromObject(fromProtoJson(send, { tenant: 't', message: { messageId: 'x'.repeat(40) } })))
        .finish(),
    );
    for (const name of ['SendMessage', 'SendStreamingMessage']) {
      assert.ok(!(methods[name].requestDeserialize(big) instanceof OversizeMessage), name);
    }
  });

  it('a message of too many parts, or too large besides its file bytes, is refused from the check, undecoded', () => {
    const send = a2aType('SendMessageRequest');
    const methods = a2aPackageDefinition(1024)['lf.a2a.v1.A2AService'] as ServiceDefinition;
    const open = (json: Record<string, unknown>) => {
      const bytes = Buffer.from(send.encode(send.fromObject(fromProtoJson(send, json))).finish());
      return (methods.SendMessage.requestDeserialize(bytes) as UndecodedMessage).open();
    };
    const message = (parts: unknown[]) => ({ tenant: 't', message: { messageId: 'm', role: 'ROLE_USER', parts } });
    const text = (n: number) => Array.from({ length: n }, () => ({ text: 'x' }));
    // 64 parts is a message; the 65th is refused as the other bindings refuse it, naming the field.
    assert.ok(!(open(message(text(64))) instanceof MalformedMessage));
    const many = open(message(text(65)));
    assert.ok(many instanceof MalformedMessage);
    assert.deepEqual([many.field, many.problem], ['message.parts', 'message.parts must contain at most 64 parts']);
    // File bytes do not count against the plain limit: 4 KiB of them in 1 KiB allowed.
    const file = { raw: Buffer.alloc(4096, 7).toString('base64'), mediaType: 'application/octet-stream' };
    const withFile = open(message([file]));
    assert.ok(!(withFile instanceof MalformedMessage) && !(withFile instanceof OversizeMessage));
    // Text does: 2 KiB of it (or 8 MiB of empty parts, below) is too large besides its files, and is not decoded.
    const long = open(message([file, { text: 'x'.repeat(2048) }]));
    assert.ok(long instanceof OversizeMessage);
    assert.ok(long.besidesFiles && long.limit === 1024 && long.bytes > 2048 && long.bytes < 2200, `${long.bytes}`);
    const empty = Buffer.concat([Buffer.from([0x12, 0x80, 0x80, 0x80, 0x04]), Buffer.alloc(8 * 1024 * 1024, 0)]);
    empty.fill(Buffer.from([0x2a, 0x00]), 5);
    const unbounded = a2aPackageDefinition()['lf.a2a.v1.A2AService'] as ServiceDefinition;
    const emptyParts = (unbounded.SendMessage.requestDeserialize(empty) as UndecodedMessage).open();
    assert.ok(emptyParts instanceof MalformedMessage && emptyParts.field === 'message.parts');
  });

  it('a map key "__proto__" (which the decoder would drop) is refused naming it; other keys cross', () => {
    const send = a2aType('SendMessageRequest');
    const withKey = (key: string) => {
      const json = {
        tenant: 't',
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }], metadata: { [key]: 1, kept: 2 } },
      };
      return Buffer.from(send.encode(send.fromObject(fromProtoJson(send, json))).finish());
    };
    const open = (bytes: Buffer): unknown => service().SendMessage.requestDeserialize(bytes);
    const ok = open(withKey('__protX__'));
    assert.deepEqual(toProtoJson(send, ok).message, {
      messageId: 'm',
      role: 'ROLE_USER',
      parts: [{ text: 'x' }],
      metadata: { __protX__: 1, kept: 2 },
    });
    // The same bytes with the key's last letters changed: a key the encoder above could not even have written.
    const bytes = withKey('__protX__');
    const at = bytes.indexOf('__protX__');
    bytes.write('__proto__', at);
    const refused = open(bytes);
    assert.ok(refused instanceof MalformedMessage);
    assert.equal(refused.field, 'message.metadata.fields[0].key');
    assert.match(refused.problem, /"__proto__", a key the gRPC binding cannot carry/);
    // The key's length written in two bytes (0x89 0x00: 9, not in its shortest form) is the same key to a decoder.
    const entry = Buffer.concat([
      Buffer.from([0x0a, 0x89, 0x00]),
      Buffer.from('__proto__'),
      Buffer.from([0x12, 0x09, 0x11]), // value: a Value whose number_value (field 2, 64-bit) is 1
      Buffer.from(new Float64Array([1]).buffer),
    ]);
    const nested = (field: number, inner: Uint8Array, w = protobuf.Writer.create()) =>
      w.uint32((field << 3) | 2).bytes(inner);
    const struct = nested(1, entry).finish();
    const msg = nested(6, struct, protobuf.Writer.create().uint32(0x0a).string('m').uint32(0x20).uint32(1)).finish();
    const req = nested(2, msg, protobuf.Writer.create().uint32(0x0a).string('t')).finish();
    const longForm = open(Buffer.from(req));
    assert.ok(longForm instanceof MalformedMessage, 'refused however its length is written');
    assert.equal(longForm.field, 'message.metadata.fields[0].key');
  });

  it('the wire check takes packed and unpacked repeated scalars, and refuses a packed run cut short', () => {
    const { root } = protobuf.parse('syntax = "proto3"; message P { repeated int32 n = 1; repeated fixed32 f = 2; }');
    const P = root.resolveAll().lookupType('P');
    const bytes = Buffer.from(P.encode(P.fromObject({ n: [1, 300], f: [7] })).finish());
    assert.equal(bytes[0], 0x0a, 'packed (length-delimited)');
    assert.equal(wireProblem(P, bytes), undefined);
    assert.equal(wireProblem(P, Buffer.from([0x08, 0x01, 0x08, 0x02])), undefined, 'unpacked varints');
    assert.equal(
      wireProblem(P, Buffer.from([0x12, 0x03, 0x01, 0x02, 0x03])),
      'f[0] holds a packed run of fixed32 values that ends inside a value',
    );
    assert.match(wireProblem(P, Buffer.from([0x10, 0x01]))!, /^f\[0\] \(field 2\) is sent varint/);
  });

  it('replies: a rendered v1.0 card (maps, oneofs, Struct params) survives the proto reply intact', () => {
    const card = {
      name: 'a',
      description: 'd',
      supportedInterfaces: [{ url: 'h:1', protocolBinding: 'GRPC', tenant: 'a', protocolVersion: '1.0' }],
      version: '1',
      capabilities: {
        streaming: true,
        extensions: [{ uri: 'urn:x', params: { role: 'r', tools: ['/mem'] } }],
      },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
    };
    const type = a2aType('AgentCard');
    const bytes = type.encode(type.fromObject(fromProtoJson(type, card))).finish();
    const back = type.toObject(type.decode(bytes), { enums: String, longs: String, defaults: false, arrays: false });
    const json = toProtoJson(type, back) as Record<string, any>;
    assert.deepEqual(json.capabilities.extensions[0].params, { role: 'r', tools: ['/mem'] });
    assert.deepEqual(json.securitySchemes, card.securitySchemes);
    assert.equal(json.supportedInterfaces[0].tenant, 'a');
    assert.equal(A2A_ROOT.lookupService('lf.a2a.v1.A2AService').methods.GetExtendedAgentCard.responseType, 'AgentCard');
  });
});

describe('gRPC errors (spec §10.6)', () => {
  it('an A2A error: its gRPC code, the message, and ErrorInfo in grpc-status-details-bin', () => {
    const e = toGrpcError(TaskError.notFound('t-1'));
    assert.equal(e.code, status.NOT_FOUND);
    assert.match(e.details, /task 't-1' not found/);
    const bin = e.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer;
    assert.deepEqual(decodeStatusDetails(bin), {
      code: status.NOT_FOUND,
      message: e.details,
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' },
      ],
    });
  });

  it('invalid params: INVALID_ARGUMENT, a BadRequest naming the field as it is on the wire, then ErrorInfo', () => {
    const e = toGrpcError(A2aError.invalidParams('params.message.parts', 'is required'));
    assert.equal(e.code, status.INVALID_ARGUMENT);
    const d = decodeStatusDetails(e.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer).details;
    assert.deepEqual(
      d.map((x) => x['@type']),
      ['type.googleapis.com/google.rpc.BadRequest', 'type.googleapis.com/google.rpc.ErrorInfo'],
    );
    assert.equal((d[0].fieldViolations as { field: string }[])[0].field, 'message.parts');
    assert.equal(d[1].reason, 'INVALID_PARAMS');
  });

  it('the rest of §5.4: not cancelable, unsupported, version', () => {
    assert.equal(toGrpcError(TaskError.notCancelable('t', 'TASK_STATE_COMPLETED')).code, status.FAILED_PRECONDITION);
    assert.equal(toGrpcError(new A2aError('unsupported_operation', 'no')).code, status.FAILED_PRECONDITION);
    assert.equal(toGrpcError(new A2aError('version_not_supported', 'no')).code, status.FAILED_PRECONDITION);
  });

  it('an unexpected error is INTERNAL "internal error"; its text only reaches the log hook', () => {
    const seen: unknown[] = [];
    const e = toGrpcError(new Error('secret detail: password=hunter2'), (x) => seen.push(x));
    assert.equal(e.code, status.INTERNAL);
    assert.equal(e.details, 'internal error');
    assert.ok(!decodeStatusDetails(e.metadata.get(STATUS_DETAILS_KEY)[0] as Buffer).message.includes('hunter2'));
    assert.equal(seen.length, 1);
  });
});
