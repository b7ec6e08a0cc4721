import { randomUUID } from 'node:crypto';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { describeCallError, UpstreamCardError } from '../a2a-outbound/remote-errors.js';
import type { ArtifactJson, MessageJson, PartJson } from '../common/a2a-json.js';
import { findJsonProblem } from '../common/json-guard.js';
import { storable } from '../common/text.js';
import type { RunContext } from './run-event.js';

type Json = Record<string, unknown>;
type Protocol = (what: string) => UpstreamProblem;

/**
 * What a remote-backed agent's upstream says, checked and mapped to the Arbiter task: messages, artifacts and
 * their parts (ProtoJSON, one content each), and the errors that end a turn.
 */

/** Why a turn gave up on its upstream: the task ends `failed` with `code: message`. */
export class UpstreamProblem extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A JSON value from an upstream (`data`, `metadata`: nested at most 64 levels, as its answer was read) with its
 * strings and keys `storable`: a caller sending a NUL or an unpaired surrogate gets a 400, an upstream has them
 * replaced, as in its text.
 */
function wellFormedJson(v: unknown): unknown {
  if (findJsonProblem(v) === undefined) return v; // almost always: checked without copying
  if (typeof v === 'string') return storable(v);
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(wellFormedJson);
  const out: Json = {};
  for (const [k, item] of Object.entries(v)) {
    // A `__proto__` key stays a key (an assignment would set the prototype).
    Object.defineProperty(out, storable(k), {
      value: wellFormedJson(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

const wellFormedObject = (v: unknown): Json | undefined => (isObject(v) ? (wellFormedJson(v) as Json) : undefined);

/** An upstream message as this task's: its parts checked, its ids this task's. */
export function mappedMessage(ctx: Pick<RunContext, 'taskId' | 'contextId'>, m: Json, protocol: Protocol): MessageJson {
  const parts = mappedParts(m.parts, protocol);
  return {
    messageId: typeof m.messageId === 'string' && m.messageId ? storable(m.messageId.slice(0, 128)) : randomUUID(),
    role: 'ROLE_AGENT',
    parts,
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    ...(isObject(m.metadata) ? { metadata: wellFormedObject(m.metadata) } : {}),
  };
}

export function mappedArtifact(a: unknown, protocol: Protocol): ArtifactJson {
  if (!isObject(a) || typeof a.artifactId !== 'string' || !a.artifactId) throw protocol('an artifact without an id');
  return {
    artifactId: storable(a.artifactId.slice(0, 256)),
    ...(typeof a.name === 'string' && a.name ? { name: storable(a.name) } : {}),
    ...(typeof a.description === 'string' && a.description ? { description: storable(a.description) } : {}),
    parts: mappedParts(a.parts, protocol),
    ...(isObject(a.metadata) ? { metadata: wellFormedObject(a.metadata) } : {}),
  };
}

export function mappedParts(parts: unknown, protocol: Protocol): PartJson[] {
  if (!Array.isArray(parts)) throw protocol('content without parts');
  return parts.map((p: unknown) => {
    if (!isObject(p)) throw protocol('a part that is not an object');
    const kinds = ['text', 'raw', 'url', 'data'].filter((k) => p[k] !== undefined);
    if (kinds.length !== 1) throw protocol('a part with no content, or more than one');
    const out: PartJson = {};
    if (typeof p.text === 'string') out.text = storable(p.text);
    else if (typeof p.raw === 'string') {
      // Stored as the caller's are: padded standard base64 (what SQL's `decode` reads).
      const b64 = p.raw.replace(/\s+/g, '');
      if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw protocol('file bytes that are not base64');
      out.raw = b64;
    } else if (typeof p.url === 'string') out.url = httpUrl(p.url, protocol);
    else if (p.data !== undefined) out.data = wellFormedJson(p.data);
    else throw protocol('a part of the wrong type');
    if (typeof p.mediaType === 'string' && p.mediaType) out.mediaType = storable(p.mediaType);
    if (typeof p.filename === 'string' && p.filename) out.filename = storable(p.filename);
    if (isObject(p.metadata)) out.metadata = wellFormedObject(p.metadata);
    return out;
  });
}

/**
 * A file part's link as a caller's is held: an absolute http(s) URL (never `javascript:` or `data:` for a client
 * to render), kept in its parsed form (percent-encoded, so no NUL or lone surrogate reaches the store).
 */
function httpUrl(text: string, protocol: Protocol): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw protocol('a file part whose url is not an absolute http(s) URL');
  }
  return url.href;
}

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function stateOf(task: Json): string {
  return isObject(task.status) && typeof task.status.state === 'string' ? task.status.state : '';
}

export function isTaskNotFound(err: unknown): boolean {
  if (err instanceof TaskNotFoundError) return true;
  const code = (err as { envelopeCode?: unknown; code?: unknown }).envelopeCode;
  return code === -32001 || /task not found|TaskNotFound/i.test(String((err as Error)?.message ?? ''));
}

/** JSON with object keys sorted (what the log returns of a jsonb value has its keys in another order). */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}

/**
 * Parts as Arbiter's log folds an artifact's chunks: a text part without metadata that follows a text part is
 * merged into it, and an empty text part after another part is dropped (see `ArtifactFold`). Two artifacts are
 * the same content when their folded parts are.
 */
export function foldedParts(parts: PartJson[]): PartJson[] {
  const out: PartJson[] = [];
  for (const part of parts) {
    const last = out[out.length - 1];
    if (last && typeof last.text === 'string' && typeof part.text === 'string' && !part.metadata) {
      out[out.length - 1] = { ...last, text: last.text + part.text };
    } else if (!(out.length > 0 && typeof part.text === 'string' && part.text === '')) out.push(part);
  }
  return out;
}

/**
 * What to log of an upstream artifact given what the log holds of it (both folded): nothing when they are the
 * same; the missing tail as one appended chunk when what is logged is a prefix of it (whole parts, and the last
 * text part's beginning); else the whole artifact again, replacing what is logged.
 */
export function artifactDelta(
  logged: ArtifactJson | undefined,
  upstream: ArtifactJson,
): { parts: PartJson[]; append: boolean } | undefined {
  const u = foldedParts(upstream.parts);
  if (!logged) return { parts: u, append: false };
  const l = foldedParts(logged.parts);
  const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);
  const { parts: _lp, ...lRest } = logged;
  const { parts: _up, ...uRest } = upstream;
  if (!same(lRest, uRest) || l.length === 0 || u.length < l.length) {
    return same(lRest, uRest) && same(l, u) ? undefined : { parts: u, append: false };
  }
  const k = l.length - 1;
  if (!same(l.slice(0, k), u.slice(0, k))) return { parts: u, append: false };
  const [lLast, uLast] = [l[k], u[k]];
  let tail: PartJson[];
  if (same(lLast, uLast)) tail = [];
  else if (
    typeof lLast.text === 'string' &&
    typeof uLast.text === 'string' &&
    uLast.text.startsWith(lLast.text) &&
    same({ ...lLast, text: '' }, { ...uLast, text: '' })
  ) {
    tail = [{ text: uLast.text.slice(lLast.text.length) }];
  } else return { parts: u, append: false };
  tail = [...tail, ...u.slice(k + 1)];
  return tail.length === 0 ? undefined : { parts: tail, append: true };
}

/** Why a turn failed, from what its upstream call threw: the code and the upstream's own message. */
export function causeOf(err: unknown, upstreamTaskId: string | undefined): { code: string; message: string } {
  if (err instanceof UpstreamProblem) return { code: err.code, message: err.message };
  // No card, or one its pin refuses: its message says which (already safe to show).
  if (err instanceof UpstreamCardError) return { code: 'upstream_error', message: err.message };
  if (isTaskNotFound(err)) {
    return {
      code: 'upstream_task_lost',
      message: `the upstream agent no longer knows task ${upstreamTaskId ?? '(unknown)'} (it may have restarted)`,
    };
  }
  return { code: 'upstream_error', message: describeCallError(err).replace(/^ERR: /, '') };
}
