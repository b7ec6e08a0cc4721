import { randomUUID } from 'node:crypto';
import type { ArtifactJson, MessageJson, PartJson } from '../common/a2a-json.js';

/**
 * File parts and their bytes. A file part's bytes are stored once, in
 * `task_files`, and the log and the task row hold the part without them:
 * its name and media type, and this metadata key naming the stored file.
 * Every read that goes to a client puts the bytes back (`withBytes`), so a
 * client gets the Part it sent (spec §4.1.6: `raw`, `mediaType`, `filename`).
 */
export const FILE_REF = 'x-arbiter.file_ref';

export interface FileRef {
  id: string;
  size: number;
}

/** A file to store with its task; the bytes as padded base64 (how they arrive, and what SQL's `decode` reads). */
export interface NewTaskFile {
  id: string;
  mediaType: string;
  filename: string | null;
  size: number;
  b64: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The stored file a part stands for: only a part with no content of its own and a well-formed reference. */
export function fileRefOf(p: PartJson): FileRef | undefined {
  if (p.text !== undefined || p.raw !== undefined || p.url !== undefined || p.data !== undefined) return undefined;
  const r = p.metadata?.[FILE_REF] as Partial<FileRef> | undefined;
  if (!r || typeof r.id !== 'string' || !UUID.test(r.id) || typeof r.size !== 'number') return undefined;
  return { id: r.id, size: r.size };
}

/** The decoded size of padded base64, without decoding it. */
export function base64Size(b64: string): number {
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return (b64.length / 4) * 3 - pad;
}

/** A new file from bytes (a tool wrote it): its record and the part that stands for it in the log. */
export function newFile(
  bytes: Buffer,
  mediaType: string,
  filename: string | null,
): { file: NewTaskFile; part: PartJson } {
  const file: NewTaskFile = {
    id: randomUUID(),
    mediaType,
    filename,
    size: bytes.length,
    b64: bytes.toString('base64'),
  };
  return { file, part: refPart(file, { mediaType, ...(filename ? { filename } : {}) }) };
}

function refPart(file: NewTaskFile, part: Omit<PartJson, 'raw'>): PartJson {
  return { ...part, metadata: { ...part.metadata, [FILE_REF]: { id: file.id, size: file.size } } };
}

/** A small text file the model reads as text (it stays inline): `text/*`, valid UTF-8, no NUL, within `max` bytes. */
function inlineText(p: PartJson, b64: string, max: number): boolean {
  if (!(p.mediaType ?? '').toLowerCase().startsWith('text/') || base64Size(b64) > max) return false;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.includes(0)) return false;
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * A validated user message as the engine stores it: every file part with
 * raw bytes, other than a small text file, becomes a reference to a file
 * stored with the task (returned in `files`). A reference key a client put
 * in a part's metadata is dropped: only the engine makes references.
 */
export function storeFiles(
  message: MessageJson,
  inlineTextMax: number,
): { message: MessageJson; files: NewTaskFile[] } {
  const { parts, files } = storeFileParts(message.parts, inlineTextMax);
  return { message: parts === message.parts ? message : { ...message, parts }, files };
}

/** `storeFiles` for any parts (a message's, an artifact's): the same parts when nothing changes. */
export function storeFileParts(given: PartJson[], inlineTextMax: number): { parts: PartJson[]; files: NewTaskFile[] } {
  const files: NewTaskFile[] = [];
  const parts = given.map((p): PartJson => {
    let part = p;
    if (p.metadata && FILE_REF in p.metadata) {
      const { [FILE_REF]: _dropped, ...metadata } = p.metadata;
      part = { ...p, metadata };
      if (Object.keys(metadata).length === 0) delete part.metadata;
    }
    if (typeof part.raw !== 'string') return part;
    const b64 = part.raw.replace(/\s+/g, '');
    if (inlineText(part, b64, inlineTextMax)) return b64 === part.raw ? part : { ...part, raw: b64 };
    const { raw: _raw, ...rest } = part;
    const file: NewTaskFile = {
      id: randomUUID(),
      mediaType: part.mediaType || 'application/octet-stream',
      filename: part.filename ?? null,
      size: base64Size(b64),
      b64,
    };
    files.push(file);
    return refPart(file, rest);
  });
  return { parts: files.length || parts.some((p, i) => p !== given[i]) ? parts : given, files };
}

/** The ids of the stored files these parts stand for. */
export function fileIdsIn(parts: Iterable<PartJson>): string[] {
  const ids: string[] = [];
  for (const p of parts) {
    const ref = fileRefOf(p);
    if (ref) ids.push(ref.id);
  }
  return ids;
}

/** How many bytes of stored files the parts refer to (each file once), as their references record. */
export function fileBytesIn(parts: Iterable<PartJson>): number {
  const seen = new Set<string>();
  let total = 0;
  for (const p of parts) {
    const ref = fileRefOf(p);
    if (ref && !seen.has(ref.id)) {
      seen.add(ref.id);
      total += ref.size;
    }
  }
  return total;
}

/** Parts with their stored files' bytes back in `raw`, as the client sent or the tool wrote them. */
export function withBytes(parts: PartJson[], bytes: ReadonlyMap<string, Buffer>): PartJson[] {
  if (!parts.some((p) => fileRefOf(p))) return parts;
  return parts.map((p) => {
    const ref = fileRefOf(p);
    if (!ref) return p;
    const { [FILE_REF]: _ref, ...metadata } = p.metadata ?? {};
    const found = bytes.get(ref.id);
    const part: PartJson = { ...p, raw: found ? found.toString('base64') : '' };
    // Only a deleted task loses its files, and a deleted task is not read: this marks a fault, not a case.
    if (!found) metadata['x-arbiter.file_missing'] = true;
    if (Object.keys(metadata).length) part.metadata = metadata;
    else delete part.metadata;
    return part;
  });
}

export const messagesWithBytes = (ms: MessageJson[], b: ReadonlyMap<string, Buffer>): MessageJson[] =>
  ms.map((m) => messageWithBytes(m, b));

export function messageWithBytes(m: MessageJson, bytes: ReadonlyMap<string, Buffer>): MessageJson {
  const parts = withBytes(m.parts, bytes);
  return parts === m.parts ? m : { ...m, parts };
}

export function artifactWithBytes(a: ArtifactJson, bytes: ReadonlyMap<string, Buffer>): ArtifactJson {
  const parts = withBytes(a.parts, bytes);
  return parts === a.parts ? a : { ...a, parts };
}

/** What a model sees of a stored file: a line with its name, media type and size, never its bytes. */
export function describeStoredFile(p: PartJson, ref: FileRef): string {
  return `[file: ${p.filename || 'unnamed'}, ${p.mediaType || 'application/octet-stream'}, ${ref.size} bytes]`;
}
