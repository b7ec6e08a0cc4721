import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { isoTime } from '../../common/iso-time.js';
import { MAX_JSON_DEPTH } from '../../common/json-guard.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { Json } from '../../a2a-wire/dialects/params.js';
import { A2A_PROTO } from '../../a2a-wire/a2a-proto.js';
import { MAX_MESSAGE_PARTS } from '../../a2a-wire/dialects/message-input.js';
import { type RepeatLimits, wireScan } from './grpc-wire-check.js';

/** The proto package and service (spec §10.1). */
export const A2A_PACKAGE = 'lf.a2a.v1';
export const A2A_SERVICE = 'A2AService';

/**
 * How proto-loader hands decoded messages over: field names in lowerCamelCase
 * (ProtoJSON's names), enums by name, 64-bit integers as decimal strings —
 * ProtoJSON's forms — and bytes as Buffers, which `toProtoJson` turns into
 * base64 with Node's own codec (protobufjs' is JavaScript, 10 MiB of files
 * took a tenth of a second of the event loop each way). Unset fields are left
 * out; oneofs without a marker field (the member that is set is the one present).
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  enums: String,
  longs: String,
  defaults: false,
  oneofs: false,
};

/** A `bytes` field's value as ProtoJSON has it (base64), from the Buffer the decoder made. */
function bytesToJson(v: unknown): unknown {
  if (!(v instanceof Uint8Array)) return v;
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** A request whose bytes did not decode as its message: the binding answers INVALID_ARGUMENT. */
export class MalformedMessage {
  constructor(
    readonly problem: string,
    /** The field a limit refused (a message's parts): the same invalid params as the other bindings. */
    readonly field?: string,
  ) {}
}

/**
 * A request's bytes as they arrived, decoded only when the binding asks (`open`), after it has checked the caller:
 * checking and decoding a message of many MiB takes seconds of the event loop, which no caller without a valid
 * token may spend. Nor may one with a token: a message of more parts than it may have, or larger besides its
 * files' bytes than `plainLimit`, is refused from the check's walk, before the decoder builds an object of each part.
 */
export class UndecodedMessage {
  constructor(
    private readonly bytes: Buffer,
    private readonly type: protobuf.Type,
    private readonly decode: (bytes: Buffer) => unknown,
    private readonly plainLimit = Infinity,
  ) {}

  /** The message, or why its bytes are none (refused first, naming the field: the decoder reads ill-typed fields). */
  open(): object | MalformedMessage | OversizeMessage {
    const scan = wireScan(this.type, this.bytes, REPEAT_LIMITS);
    if (scan.problem !== undefined) return new MalformedMessage(scan.problem, scan.field);
    const plain = this.bytes.length - scan.fileBytes;
    if (plain > this.plainLimit) return new OversizeMessage(plain, this.plainLimit, true);
    try {
      const message = this.decode(this.bytes) as object;
      wireSizes.set(message, this.bytes.length);
      return message;
    } catch (err) {
      return new MalformedMessage(err instanceof Error ? err.message.slice(0, 200) : 'undecodable');
    }
  }
}

/** A request larger than its method may take, left undecoded: the binding answers RESOURCE_EXHAUSTED. */
export class OversizeMessage {
  constructor(
    readonly bytes: number,
    readonly limit: number,
    /** Whether `bytes` leaves out the message's file bytes (a message's methods are held to the limit besides them). */
    readonly besidesFiles = false,
  ) {}
}

/**
 * The methods whose request carries a message, and with it file bytes: gRPC
 * itself holds them to the A2A body limit (files included) and the binding
 * to `ARBITER_MAX_BODY_BYTES` besides their file bytes. Every other request
 * holds no file and is held to `ARBITER_MAX_BODY_BYTES` as a whole.
 */
export const MESSAGE_METHODS: ReadonlySet<string> = new Set(['SendMessage', 'SendStreamingMessage']);

function buildRoot(): protobuf.Root {
  const root = new protobuf.Root();
  for (const wkt of ['empty', 'struct', 'timestamp']) {
    const json = protobuf.common.get(`google/protobuf/${wkt}.proto`);
    if (!json?.nested) throw new Error(`protobufjs lacks google/protobuf/${wkt}.proto`);
    root.addJSON(json.nested);
  }
  // The google.api options (HTTP annotations, field behaviour) are kept as uninterpreted options: gRPC needs none.
  protobuf.parse(A2A_PROTO, root, { keepCase: false });
  root.resolveAll();
  return root;
}

/** The A2A proto as protobufjs reflection (for the ProtoJSON conversion below). */
export const A2A_ROOT = buildRoot();

export function a2aType(name: string): protobuf.Type {
  return A2A_ROOT.lookupType(`${A2A_PACKAGE}.${name}`);
}

/** The repeated fields a request's bytes are held to before decoding (as the dialect holds a parsed message). */
const REPEAT_LIMITS: RepeatLimits = new Map([
  [a2aType('Message').fields.parts, { max: MAX_MESSAGE_PARTS, what: 'parts' }],
]);

const wireSizes = new WeakMap<object, number>();

/** The size in bytes of a request message as it arrived (for the body limit besides its file bytes). */
export function wireSizeOf(message: unknown): number | undefined {
  return typeof message === 'object' && message !== null ? wireSizes.get(message) : undefined;
}

/**
 * The package definition the Nest gRPC server loads. Each method's request
 * deserializer is wrapped: bytes that are not a valid message (see
 * `wireScan`; or that the decoder refuses) become a
 * `MalformedMessage` for the binding to refuse as INVALID_ARGUMENT (grpc-js
 * would otherwise answer INTERNAL, which says the server is at fault); a
 * request of a method outside `MESSAGE_METHODS` over `plainLimit` bytes
 * (`ARBITER_MAX_BODY_BYTES`) becomes an `OversizeMessage` without being read.
 */
export function a2aPackageDefinition(plainLimit = Infinity): protoLoader.PackageDefinition {
  const definition = protoLoader.fromJSON(A2A_ROOT.toJSON(), LOADER_OPTIONS);
  const service = definition[`${A2A_PACKAGE}.${A2A_SERVICE}`] as protoLoader.ServiceDefinition;
  const reflected = A2A_ROOT.lookupService(`${A2A_PACKAGE}.${A2A_SERVICE}`);
  for (const [name, method] of Object.entries(service)) {
    const decode = method.requestDeserialize;
    const type = reflected.methods[name].resolvedRequestType!;
    const limit = MESSAGE_METHODS.has(name) ? Infinity : plainLimit;
    const besidesFiles = MESSAGE_METHODS.has(name) ? plainLimit : Infinity;
    method.requestDeserialize = (bytes: Buffer) =>
      // grpc-js has one receive limit for every method (the one that takes files): the others are held here, undecoded.
      bytes.length > limit
        ? new OversizeMessage(bytes.length, limit)
        : new UndecodedMessage(bytes, type, decode, besidesFiles);
  }
  return definition;
}

const STRUCT = '.google.protobuf.Struct';
const VALUE = '.google.protobuf.Value';
const LIST_VALUE = '.google.protobuf.ListValue';
const TIMESTAMP = '.google.protobuf.Timestamp';
const EMPTY = '.google.protobuf.Empty';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function tooDeep(path: string, depth: number): void {
  if (depth > MAX_JSON_DEPTH) throw A2aError.invalidParams(path, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
}

/** `google.protobuf.Value` as loaded → the JSON value it stands for (ProtoJSON §Value). */
function valueToJson(v: unknown, path: string, depth: number): unknown {
  tooDeep(path, depth);
  if (!isObj(v)) return null;
  if (v.structValue !== undefined) return structToJson(v.structValue, path, depth + 1);
  if (v.listValue !== undefined) {
    const values = isObj(v.listValue) && Array.isArray(v.listValue.values) ? v.listValue.values : [];
    return values.map((x, i) => valueToJson(x, `${path}[${i}]`, depth + 1));
  }
  if (v.numberValue !== undefined) {
    if (typeof v.numberValue !== 'number' || !Number.isFinite(v.numberValue)) {
      throw A2aError.invalidParams(path, 'must be a finite number (JSON has no NaN or Infinity)');
    }
    return v.numberValue;
  }
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return null; // nullValue, or no kind at all
}

function structToJson(s: unknown, path: string, depth: number): Json {
  tooDeep(path, depth);
  const fields = isObj(s) && isObj(s.fields) ? s.fields : {};
  const out: Json = {};
  for (const [k, v] of Object.entries(fields)) out[k] = valueToJson(v, `${path}.${k}`, depth + 1);
  return out;
}

/** `google.protobuf.Timestamp` → RFC 3339 in UTC (ProtoJSON), at millisecond precision. */
function timestampToJson(t: unknown, path: string): string {
  const seconds = isObj(t) ? Number(t.seconds ?? 0) : 0;
  const nanos = isObj(t) ? Number(t.nanos ?? 0) : 0;
  const ms = seconds * 1000 + Math.floor(nanos / 1e6);
  // ProtoJSON's range: 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999999999Z.
  if (
    !Number.isFinite(ms) ||
    nanos < 0 ||
    nanos > 999_999_999 ||
    ms < -62_135_596_800_000 ||
    ms > 253_402_300_799_999
  ) {
    throw A2aError.invalidParams(path, 'is not a valid timestamp');
  }
  return isoTime(ms);
}

function fieldToJson(field: protobuf.Field, v: unknown, path: string, depth: number): unknown {
  const type = field.resolvedType;
  // Scalars and enums are already in their ProtoJSON form, but for bytes.
  if (!(type instanceof protobuf.Type)) return field.type === 'bytes' ? bytesToJson(v) : v;
  switch (type.fullName) {
    case STRUCT:
      return structToJson(v, path, depth);
    case VALUE:
      return valueToJson(v, path, depth);
    case LIST_VALUE:
      return valueToJson({ listValue: v }, path, depth);
    case TIMESTAMP:
      return timestampToJson(v, path);
    case EMPTY:
      return {};
    default:
      return toProtoJson(type, v, path, depth + 1);
  }
}

/**
 * A message as proto-loader decoded it (see `LOADER_OPTIONS`) → its ProtoJSON
 * form, the shape the v1.0 dialect parses on every binding: `Struct`,
 * `Value` and `Timestamp` become JSON values and RFC 3339 strings.
 */
export function toProtoJson(type: protobuf.Type, obj: unknown, path = '', depth = 0): Json {
  tooDeep(path || type.name, depth);
  const out: Json = {};
  if (!isObj(obj)) return out;
  for (const [key, v] of Object.entries(obj)) {
    const field = type.fields[key];
    if (!field || v === undefined || v === null) continue;
    const at = path ? `${path}.${key}` : key;
    if (field.map && isObj(v)) {
      const m: Json = {};
      for (const [k, item] of Object.entries(v)) m[k] = fieldToJson(field, item, `${at}.${k}`, depth + 1);
      out[key] = m;
    } else if (field.repeated && Array.isArray(v)) {
      out[key] = v.map((item, i) => fieldToJson(field, item, `${at}[${i}]`, depth + 1));
    } else {
      out[key] = fieldToJson(field, v, at, depth + 1);
    }
  }
  return out;
}

/** A JSON value → `google.protobuf.Value` as protobufjs' `fromObject` takes it. */
function jsonToValue(v: unknown): Obj {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(jsonToValue) } };
  if (isObj(v)) return { structValue: jsonToStruct(v) };
  // Not JSON (a bigint …): nothing the handler renders; as a string rather than lost.
  return { stringValue: typeof v === 'bigint' ? v.toString() : typeof v };
}

function jsonToStruct(v: unknown): Obj {
  const fields: Obj = {};
  if (isObj(v)) for (const [k, item] of Object.entries(v)) if (item !== undefined) fields[k] = jsonToValue(item);
  return { fields };
}

/** RFC 3339 → `google.protobuf.Timestamp` (nanoseconds kept from the fraction). */
function jsonToTimestamp(v: unknown): Obj {
  const text = typeof v === 'string' ? v : '';
  const ms = Date.parse(text);
  if (!Number.isFinite(ms)) return {};
  const fraction = /\.(\d{1,9})/.exec(text)?.[1] ?? '';
  const nanos = fraction ? Number(fraction.padEnd(9, '0')) : 0;
  return { seconds: String(Math.floor(ms / 1000)), nanos };
}

function fieldFromJson(field: protobuf.Field, v: unknown): unknown {
  const type = field.resolvedType;
  // Bytes as a Buffer (protobufjs would decode the base64 in JavaScript); ProtoJSON's base64 may be URL-safe too.
  if (!(type instanceof protobuf.Type))
    return field.type === 'bytes' && typeof v === 'string' ? Buffer.from(v, 'base64') : v;
  switch (type.fullName) {
    case STRUCT:
      return jsonToStruct(v);
    case VALUE:
      return jsonToValue(v);
    case LIST_VALUE:
      return { values: Array.isArray(v) ? v.map(jsonToValue) : [] };
    case TIMESTAMP:
      return jsonToTimestamp(v);
    case EMPTY:
      return {};
    default:
      return fromProtoJson(type, v);
  }
}

/**
 * A ProtoJSON object (what the dialect renders) → the object proto-loader's
 * serializer takes (`Type.fromObject`). Fields the message does not define are
 * left out, as a ProtoJSON parser ignoring unknown fields would.
 */
export function fromProtoJson(type: protobuf.Type, json: unknown): Obj {
  const out: Obj = {};
  if (!isObj(json)) return out;
  for (const [key, v] of Object.entries(json)) {
    const field = type.fields[key];
    if (!field || v === undefined || v === null) continue;
    if (field.map && isObj(v)) {
      const m: Obj = {};
      for (const [k, item] of Object.entries(v)) m[k] = fieldFromJson(field, item);
      out[key] = m;
    } else if (field.repeated && Array.isArray(v)) {
      out[key] = v.map((item) => fieldFromJson(field, item));
    } else {
      out[key] = fieldFromJson(field, v);
    }
  }
  return out;
}
