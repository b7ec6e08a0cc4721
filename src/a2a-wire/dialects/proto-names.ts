import protobuf from 'protobufjs';
import { A2aError } from '../a2a-errors.js';
import { A2A_PROTO } from '../a2a-proto.js';
import { isObject, type Json } from './params.js';

const PACKAGE = 'lf.a2a.v1';

/** One field of an `a2a.proto` message, by both of its ProtoJSON names. */
interface NamedField {
  /** The lowerCamelCase JSON name: what Arbiter reads and writes. */
  json: string;
  /** The name as the proto spells it (`message_id`). */
  proto: string;
  /** The field's own message type, when it is one of `a2a.proto`'s (Struct, Value, Timestamp are JSON values). */
  message?: string;
  /** A `map<…>` field: its keys are content; the message type is its values'. */
  map: boolean;
}

/**
 * protoc's JSON name of a field (`ToJsonName`): each underscore dropped and
 * the character after it upper-cased. `a2a.proto` sets no `json_name`.
 */
export function jsonNameOf(protoName: string): string {
  return protoName.replace(/_+(.?)/g, (_, c: string) => c.toUpperCase());
}

/** `a2a.proto` parsed with its own field names (the gRPC codec's copy has them in lowerCamelCase). */
function parseKeepingCase(): protobuf.Namespace {
  const root = new protobuf.Root();
  for (const wkt of ['empty', 'struct', 'timestamp']) {
    const json = protobuf.common.get(`google/protobuf/${wkt}.proto`);
    if (!json?.nested) throw new Error(`protobufjs lacks google/protobuf/${wkt}.proto`);
    root.addJSON(json.nested);
  }
  protobuf.parse(A2A_PROTO, root, { keepCase: true });
  root.resolveAll();
  const ns = root.lookup(PACKAGE);
  if (!(ns instanceof protobuf.Namespace)) throw new Error(`a2a.proto lacks package ${PACKAGE}`);
  return ns;
}

const PROTO = parseKeepingCase();

/** Message name → (either spelling → field). */
function buildTable(ns: protobuf.Namespace): Map<string, Map<string, NamedField>> {
  const table = new Map<string, Map<string, NamedField>>();
  for (const type of ns.nestedArray) {
    if (!(type instanceof protobuf.Type)) continue;
    const fields = new Map<string, NamedField>();
    for (const field of type.fieldsArray) {
      const own = field.resolvedType;
      const message = own instanceof protobuf.Type && own.fullName.startsWith(`.${PACKAGE}.`) ? own.name : undefined;
      const named: NamedField = {
        json: jsonNameOf(field.name),
        proto: field.name,
        map: field.map,
        ...(message ? { message } : {}),
      };
      fields.set(named.json, named);
      fields.set(named.proto, named);
    }
    table.set(type.name, fields);
  }
  return table;
}

const TABLE = buildTable(PROTO);

/** The request message of each `A2AService` method, by method name (`SendMessage` → `SendMessageRequest`). */
export const REQUEST_TYPES: Readonly<Record<string, string>> = Object.fromEntries(
  PROTO.lookupService('A2AService').methodsArray.map((m) => [m.name, m.requestType]),
);

/** Both spellings of a field of `type` given by its JSON name (just the JSON name when the two agree). */
export function spellingsOf(type: string, json: string): string[] {
  const field = TABLE.get(type)?.get(json);
  return field && field.proto !== field.json ? [field.json, field.proto] : [json];
}

/**
 * A ProtoJSON object of `type` with every field under its lowerCamelCase
 * name. ProtoJSON parsers accept a field's JSON name and its proto name
 * (`messageId` or `message_id`); this applies the same rule to each
 * message the request holds (parts, configuration, push config …), from
 * `a2a.proto`'s own field names. Keys inside `Struct` and `Value` fields
 * (`metadata`, a data part's `data`) are content and stay as they are, and
 * so do keys the message does not define (the dialect ignores those).
 * One field under both names is InvalidParams naming it, as the protobuf
 * conformance suite asks of a parser (`FieldNameDuplicateDifferentCasing`).
 */
export function readProtoNames(type: string, value: Json, path: string): Json {
  const fields = TABLE.get(type);
  if (!fields) return value;
  // Built member by member (no entries arrays, no set of names seen): this runs on every request's parameters.
  const out: Json = {};
  for (const key of Object.keys(value)) {
    const v = value[key];
    const field = fields.get(key);
    if (!field) {
      put(out, key, v);
      continue;
    }
    // Given under its proto name while its JSON name is there too (in either order).
    if (key !== field.json && Object.hasOwn(value, field.json)) {
      throw A2aError.invalidParams(
        `${path}.${field.json}`,
        `is given twice, as ${field.json} and as ${field.proto}; send one of them`,
      );
    }
    if (!field.message) put(out, field.json, v);
    else {
      const at = `${path}.${field.json}`;
      put(out, field.json, field.map ? mapValues(field.message, v, at) : nested(field.message, v, at));
    }
  }
  return out;
}

/** Sets a member; a `__proto__` key stays a key (a plain assignment would set the prototype). */
function put(o: Json, key: string, v: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value: v, enumerable: true, writable: true, configurable: true });
  else o[key] = v;
}

/** A message-typed field's value: one message, or a repeated field's list of them; anything else as it is. */
function nested(type: string, v: unknown, path: string): unknown {
  if (isObject(v)) return readProtoNames(type, v, path);
  if (!Array.isArray(v)) return v;
  return (v as unknown[]).map((item, i) => (isObject(item) ? readProtoNames(type, item, `${path}[${i}]`) : item));
}

/** A map of messages: the keys are content (never renamed), each value a message. */
function mapValues(type: string, v: unknown, path: string): unknown {
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, nested(type, item, `${path}.${k}`)]));
}
