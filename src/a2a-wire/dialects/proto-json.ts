/**
 * ProtoJSON of the `a2a.proto` messages a v1.0 answer carries — a task, its
 * status, messages, parts, artifacts and the two stream updates — exactly
 * as the official SDK's generated codec writes them (`X.toJSON(X.fromJSON(v))`:
 * each field read by its JSON name or its proto name, defaults left out,
 * enums by name, bytes as canonical base64, fields in the proto's order), in
 * one pass over the value instead of through the codec's message objects in
 * between: every answer with a task went through both, a noticeable part of
 * a short request's allocations. test/unit/proto-json.test.ts holds the two
 * to the same output over a corpus of ordinary and odd values.
 */
type J = Record<string, unknown>;

const isSet = (v: unknown): boolean => v !== null && v !== undefined;
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** A field by its JSON name, else its proto name (as the codec reads them). */
const field = (o: J, json: string, proto: string): unknown => (isSet(o[json]) ? o[json] : o[proto]);

/** A string field: set and not empty. */
function putString(out: J, key: string, v: unknown): void {
  if (!isSet(v)) return;
  const s = String(v);
  if (s !== '') out[key] = s;
}

/** A repeated string field: an array, not empty. */
function putStrings(out: J, key: string, v: unknown): void {
  if (Array.isArray(v) && v.length > 0) out[key] = v.map((e) => String(e));
}

const STATES = [
  'TASK_STATE_UNSPECIFIED',
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
];
const ROLES = ['ROLE_UNSPECIFIED', 'ROLE_USER', 'ROLE_AGENT'];

/** An enum field: by name or number; left out when unspecified, `UNRECOGNIZED` when neither. */
function putEnum(out: J, key: string, v: unknown, names: readonly string[]): void {
  if (!isSet(v)) return;
  const n =
    typeof v === 'number' ? (Number.isInteger(v) && v >= 0 && v < names.length ? v : -1) : names.indexOf(v as string);
  if (n !== 0) out[key] = n < 0 ? 'UNRECOGNIZED' : names[n];
}

function put<T>(out: J, key: string, v: unknown, to: (v: J) => T): void {
  if (isSet(v)) out[key] = to(v as J);
}

function putList(out: J, key: string, v: unknown, to: (v: J) => J): void {
  if (Array.isArray(v) && v.length > 0) out[key] = v.map((e) => to(e as J));
}

function putMetadata(out: J, v: unknown): void {
  if (isObject(v)) out.metadata = v;
}

export function protoPart(p: J): J {
  const out: J = {};
  if (isSet(p.text)) out.text = String(p.text);
  else if (isSet(p.raw)) out.raw = Buffer.from(p.raw as string, 'base64').toString('base64');
  else if (isSet(p.url)) out.url = String(p.url);
  else if (isSet(p.data)) out.data = p.data;
  putMetadata(out, p.metadata);
  putString(out, 'filename', p.filename);
  putString(out, 'mediaType', field(p, 'mediaType', 'media_type'));
  return out;
}

export function protoMessage(m: J): J {
  const out: J = {};
  putString(out, 'messageId', field(m, 'messageId', 'message_id'));
  putString(out, 'contextId', field(m, 'contextId', 'context_id'));
  putString(out, 'taskId', field(m, 'taskId', 'task_id'));
  putEnum(out, 'role', m.role, ROLES);
  putList(out, 'parts', m.parts, protoPart);
  putMetadata(out, m.metadata);
  putStrings(out, 'extensions', m.extensions);
  putStrings(out, 'referenceTaskIds', Array.isArray(m.referenceTaskIds) ? m.referenceTaskIds : m.reference_task_ids);
  return out;
}

export function protoArtifact(a: J): J {
  const out: J = {};
  putString(out, 'artifactId', field(a, 'artifactId', 'artifact_id'));
  putString(out, 'name', a.name);
  putString(out, 'description', a.description);
  putList(out, 'parts', a.parts, protoPart);
  putMetadata(out, a.metadata);
  putStrings(out, 'extensions', a.extensions);
  return out;
}

export function protoStatus(s: J): J {
  const out: J = {};
  putEnum(out, 'state', s.state, STATES);
  put(out, 'message', s.message, protoMessage);
  // A timestamp is kept when set, even empty (the codec's optional field).
  if (isSet(s.timestamp)) out.timestamp = String(s.timestamp);
  return out;
}

export function protoTask(t: J): J {
  const out: J = {};
  putString(out, 'id', t.id);
  putString(out, 'contextId', field(t, 'contextId', 'context_id'));
  put(out, 'status', t.status, protoStatus);
  putList(out, 'artifacts', t.artifacts, protoArtifact);
  putList(out, 'history', t.history, protoMessage);
  putMetadata(out, t.metadata);
  return out;
}

/** The fields both stream updates begin with. */
function updateHead(u: J): J {
  const out: J = {};
  putString(out, 'taskId', field(u, 'taskId', 'task_id'));
  putString(out, 'contextId', field(u, 'contextId', 'context_id'));
  return out;
}

export function protoStatusUpdate(u: J): J {
  const out = updateHead(u);
  put(out, 'status', u.status, protoStatus);
  putMetadata(out, u.metadata);
  return out;
}

export function protoArtifactUpdate(u: J): J {
  const out = updateHead(u);
  put(out, 'artifact', u.artifact, protoArtifact);
  // Booleans are kept when true (read as JavaScript's truth, as the codec reads them).
  if (u.append) out.append = true;
  if (field(u, 'lastChunk', 'last_chunk')) out.lastChunk = true;
  putMetadata(out, u.metadata);
  return out;
}
