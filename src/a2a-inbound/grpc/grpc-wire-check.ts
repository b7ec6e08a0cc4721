import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';

/**
 * protobufjs' generated decoders read a known field by its declared type
 * whatever wire type the tag carries: `tenant` sent as a varint decodes as
 * an empty or garbled string, and a string whose length runs past the end is
 * cut short in silence. Before the decoder runs, this walks the bytes
 * against the message type — every tag's wire type against its field's, every
 * length within its message, strings valid UTF-8 (proto3 requires it) — so
 * an ill-typed request is refused naming the field instead of being served as
 * some other request. Linear in the bytes; nesting bounded as the decoder's is.
 *
 * The same walk counts what the decoder would otherwise be asked to build: the
 * bytes of `bytes` fields (a part's file), so a request too large besides its
 * files is refused undecoded, and the values of the repeated fields that have
 * a limit (a message's parts), refused at the first one past it.
 */

const WIRE_NAMES = ['varint', '64-bit', 'length-delimited', 'group start', 'group end', '32-bit'];
const wireName = (wt: number): string => `${WIRE_NAMES[wt] ?? 'invalid'} (wire type ${wt})`;

/**
 * What a field holds on the wire: a nested message, or a scalar by the proto
 * type it is encoded as (an enum as an int32); `label` names it in errors.
 */
type Slot =
  | { kind: 'message'; type: protobuf.Type; label: string }
  | { kind: 'scalar'; type: string; packable: boolean; label: string };

function slotOf(field: protobuf.FieldBase): Slot {
  const t = field.resolvedType;
  if (t instanceof protobuf.Type) return { kind: 'message', type: t, label: t.name };
  if (t instanceof protobuf.Enum) return { kind: 'scalar', type: 'int32', packable: field.repeated, label: t.name };
  const packable = field.repeated && field.type in protobuf.types.packed;
  return { kind: 'scalar', type: field.type, packable, label: field.type };
}

const wireOf = (slot: Slot): number =>
  slot.kind === 'message' ? 2 : (protobuf.types.basic as Record<string, number>)[slot.type];

class WireProblem extends Error {
  constructor(
    message: string,
    /** The field a limit refused (the rest are refused as a malformed message). */
    readonly field?: string,
  ) {
    super(message);
  }
}

function fail(at: string, what: string): never {
  throw new WireProblem(`${at} ${what}`);
}

/** How many values a repeated field may have (`field` → its limit and its values' name). */
export type RepeatLimits = ReadonlyMap<protobuf.Field, { max: number; what: string }>;

/** What the walk learns besides problems: the bytes of `bytes` fields. */
interface Walk {
  limits: RepeatLimits;
  fileBytes: number;
}

/** Length-delimited contents: the reader is past the length; returns the contents and moves past them. */
function delimited(r: protobuf.Reader, at: string): Uint8Array {
  const length = r.uint32();
  if (r.pos + length > r.len) fail(at, `claims ${length} bytes, but only ${r.len - r.pos} remain`);
  const contents = r.buf.subarray(r.pos, r.pos + length);
  r.pos += length;
  return contents;
}

/** One value of a slot (field number `id`) that arrived with wire type `wt`. */
function checkValue(w: Walk, r: protobuf.Reader, slot: Slot, id: number, wt: number, at: string, depth: number): void {
  const expected = wireOf(slot);
  if (wt === 2 && slot.kind === 'scalar' && slot.packable) {
    const packed = protobuf.Reader.create(delimited(r, at));
    try {
      while (packed.pos < packed.len) packed.skipType(expected);
    } catch {
      fail(at, `holds a packed run of ${slot.label} values that ends inside a value`);
    }
    return;
  }
  if (wt !== expected) {
    fail(at, `(field ${id}) is sent ${wireName(wt)}; a2a.proto declares ${slot.label}, sent ${wireName(expected)}`);
  }
  if (slot.kind === 'message') return checkMessage(w, slot.type, delimited(r, at), at, depth + 1);
  if (slot.type === 'string') {
    if (!isUtf8(delimited(r, at))) fail(at, 'is not valid UTF-8');
    return;
  }
  if (slot.type === 'bytes') {
    w.fileBytes += delimited(r, at).length;
    return;
  }
  r.skipType(wt);
}

/** A map entry (`map<K, V>` is `repeated Entry { K key = 1; V value = 2; }` on the wire). */
function checkMapEntry(w: Walk, field: protobuf.MapField, bytes: Uint8Array, at: string, depth: number): void {
  const r = protobuf.Reader.create(bytes);
  const key: Slot = { kind: 'scalar', type: field.keyType, packable: false, label: field.keyType };
  const value = slotOf(field);
  while (r.pos < r.len) {
    const tag = r.uint32();
    const id = tag >>> 3;
    if (id === 1) {
      const start = r.pos;
      checkValue(w, r, key, id, tag & 7, `${at}.key`, depth);
      // protobufjs decodes a map into a plain object, where this key would set the prototype: the entry would vanish.
      // Read as the decoder reads it (a length may be written in more bytes than it needs).
      if (field.keyType === 'string' && protobuf.Reader.create(r.buf.subarray(start, r.pos)).string() === '__proto__') {
        const problem = 'is "__proto__", a key the gRPC binding cannot carry (JSON-RPC and HTTP+JSON can)';
        throw new WireProblem(`${at}.key ${problem}`, `${at}.key`);
      }
    } else if (id === 2) checkValue(w, r, value, id, tag & 7, `${at}.value`, depth);
    else r.skipType(tag & 7, depth);
  }
}

function checkMessage(w: Walk, type: protobuf.Type, bytes: Uint8Array, path: string, depth: number): void {
  if (depth > protobuf.Reader.recursionLimit)
    fail(path, `is nested deeper than ${protobuf.Reader.recursionLimit} messages`);
  const r = protobuf.Reader.create(bytes);
  const seen = new Map<number, number>();
  while (r.pos < r.len) {
    const tag = r.uint32();
    const id = tag >>> 3;
    const wt = tag & 7;
    if (id === 0) fail(path || type.name, 'holds field number 0, which no message has');
    const field = type.fieldsById[id];
    if (!field) {
      r.skipType(wt, depth); // an unknown field: skipped, as the spec asks (§5.7), but within bounds
      continue;
    }
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    const name = path ? `${path}.${field.name}` : field.name;
    const limit = w.limits.get(field);
    if (limit && n >= limit.max) {
      throw new WireProblem(`${name} must contain at most ${limit.max} ${limit.what}`, name);
    }
    const at = field.repeated || field.map ? `${name}[${n}]` : name;
    if (field instanceof protobuf.MapField) {
      if (wt !== 2) fail(at, `(field ${id}) is sent ${wireName(wt)}; a2a.proto declares a map, sent ${wireName(2)}`);
      checkMapEntry(w, field, delimited(r, at), at, depth + 1);
    } else {
      checkValue(w, r, slotOf(field), id, wt, at, depth);
    }
  }
}

/** What `wireScan` found: why the bytes are not the message (and the field a limit refused), or their file bytes. */
export type WireScan = { problem: string; field?: string } | { problem?: undefined; fileBytes: number };

/**
 * Why `bytes` are not a well-formed `type`, naming the field (`tenant
 * (field 1) is sent varint (wire type 0); a2a.proto declares string, sent
 * length-delimited (wire type 2)`), or, when they are, how many of them are
 * the contents of `bytes` fields.
 */
export function wireScan(type: protobuf.Type, bytes: Uint8Array, limits: RepeatLimits = new Map()): WireScan {
  const walk: Walk = { limits, fileBytes: 0 };
  try {
    checkMessage(walk, type, bytes, '', 0);
    return { fileBytes: walk.fileBytes };
  } catch (err) {
    if (err instanceof WireProblem) return { problem: err.message, field: err.field };
    // The reader's own refusals: a length or varint running past the end, an invalid wire type.
    return { problem: err instanceof Error ? err.message.slice(0, 200) : 'undecodable' };
  }
}
