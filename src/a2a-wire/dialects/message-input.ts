import { isPaddedBase64 } from '../../common/base64.js';
import { A2aError } from '../a2a-errors.js';
import type { MessageJson, PartJson } from '../../common/a2a-json.js';
import { base64Size } from '../../tasks/task-files.js';

/** What Arbiter answers in (its cards' output modes). */
export const OUTPUT_MODES = ['text/plain', 'application/json'];
export const INPUT_MODES = ['text/plain', 'application/json'];

/**
 * Modes a client may accept that Arbiter's text and JSON answers can serve:
 * its own, their wildcards, `text` (what `@ag-ui/a2a` sends for text/plain)
 * and `text/markdown` (plain text is valid Markdown).
 */
const SERVED = new Set([...OUTPUT_MODES, '*/*', 'text/*', 'application/*', 'text', 'text/markdown']);

/**
 * The spec asks agents to tailor output to `acceptedOutputModes`, not to
 * refuse: a request is refused (ContentTypeNotSupported) only when none of
 * its modes could be served.
 */
export function checkAcceptedOutputModes(modes: string[] | undefined, field: string): void {
  if (!modes || modes.length === 0) return;
  if (modes.some((m) => SERVED.has((m.toLowerCase().split(';')[0] ?? '').trim()))) return;
  throw new A2aError(
    'content_type_not_supported',
    `none of ${field} (${modes.join(', ')}) is an output mode of this agent (${OUTPUT_MODES.join(', ')})`,
  );
}

/** `type/subtype` with optional parameters (RFC 6838 names). */
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$/;

export interface FileLimits {
  /** Decoded bytes of one file part (`ARBITER_MAX_FILE_BYTES`). */
  maxFileBytes: number;
  /** Decoded bytes of all the message's file parts (`ARBITER_MAX_MESSAGE_FILE_BYTES`). */
  maxMessageFileBytes: number;
}

/**
 * Checks a message's parts before the engine takes it: text and data as
 * they are; files of any media type, with raw bytes (padded base64, within
 * the per-part and per-message limits) or by an absolute http(s) URL, which
 * is kept as given and never fetched by the server. A bad part is
 * InvalidParams naming it.
 */
export function checkParts(parts: PartJson[], field: string, limits: FileLimits): void {
  let total = 0;
  parts.forEach((p, i) => {
    const at = `${field}[${i}]`;
    if (typeof p.text === 'string' || p.data !== undefined) return;
    if (p.mediaType !== undefined && !MEDIA_TYPE.test(p.mediaType)) {
      throw A2aError.invalidParams(`${at}.mediaType`, 'must be a media type such as application/pdf');
    }
    if (typeof p.raw === 'string') {
      const b64 = p.raw.replace(/\s+/g, '');
      if (!isPaddedBase64(b64)) throw A2aError.invalidParams(`${at}.raw`, 'must be padded base64');
      const size = base64Size(b64);
      if (size > limits.maxFileBytes) {
        throw A2aError.invalidParams(
          `${at}.raw`,
          `is ${size} bytes; a file may be at most ${limits.maxFileBytes} bytes`,
        );
      }
      total += size;
      if (total > limits.maxMessageFileBytes) {
        throw A2aError.invalidParams(
          `${at}.raw`,
          `brings the message's files to ${total} bytes; a message may carry at most ${limits.maxMessageFileBytes} bytes of files`,
        );
      }
      return;
    }
    if (typeof p.url === 'string') {
      let url: URL | undefined;
      try {
        url = new URL(p.url);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
        throw A2aError.invalidParams(`${at}.url`, 'must be an absolute http(s) URL');
      }
      return;
    }
    throw A2aError.invalidParams(at, 'must carry text, data, or a file');
  });
}

/** How many parts a message may have. */
export const MAX_MESSAGE_PARTS = 64;

/** Common checks of a user message, after a dialect has put it in v1.0 form (and checked its role). */
export function checkUserMessage(m: MessageJson, field: string): void {
  if (m.parts.length === 0) throw A2aError.invalidParams(`${field}.parts`, 'must contain at least one part');
  if (m.parts.length > MAX_MESSAGE_PARTS) {
    throw A2aError.invalidParams(`${field}.parts`, `must contain at most ${MAX_MESSAGE_PARTS} parts`);
  }
}
