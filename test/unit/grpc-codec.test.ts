import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { A2A_PROTO } from '../../src/a2a-inbound/grpc/a2a-proto.js';
import {
  A2A_ROOT,
  a2aPackageDefinition,
  a2aType,
  fromProtoJson,
  MalformedMessage,
  toProtoJson,
} from '../../src/a2a-inbound/grpc/grpc-codec.js';
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

const service = (): ServiceDefinition => a2aPackageDefinition()['lf.a2a.v1.A2AService'] as ServiceDefinition;

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

  it('a request whose bytes do not decode is a MalformedMessage, not an exception', () => {
    const decoded = service().SendMessage.requestDeserialize(Buffer.from([0x12, 0x03, 0x22, 0x05, 0x01]));
    assert.ok(decoded instanceof MalformedMessage);
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
