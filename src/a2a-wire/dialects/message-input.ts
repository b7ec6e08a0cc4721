import { A2aError } from '../a2a-errors.js';
import type { MessageJson, PartJson } from '../../common/a2a-json.js';

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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Checks a message's parts before the engine takes it: text and data as
 * they are, `text/*` files with inline bytes up to the limit, valid base64
 * and no NUL bytes (the engine shows the model their text). Anything else is
 * ContentTypeNotSupported.
 */
export function checkParts(parts: PartJson[], field: string, maxFileBytes: number): void {
  parts.forEach((p, i) => {
    const at = `${field}[${i}]`;
    if (typeof p.text === 'string' || p.data !== undefined) return;
    if (typeof p.raw === 'string') {
      // Malformed input first (InvalidParams), then whether Arbiter takes this kind of file.
      const b64 = p.raw.replace(/\s+/g, '');
      if (!BASE64.test(b64)) throw A2aError.invalidParams(`${at}.raw`, 'must be padded base64');
      const media = (p.mediaType ?? '').toLowerCase();
      if (!media.startsWith('text/')) {
        throw new A2aError(
          'content_type_not_supported',
          `${at}: files of media type '${p.mediaType || 'unspecified'}' are not supported; only text/* files`,
        );
      }
      const bytes = Buffer.from(b64, 'base64');
      if (bytes.length > maxFileBytes) {
        throw new A2aError('content_type_not_supported', `${at}: file is larger than ${maxFileBytes} bytes`);
      }
      if (bytes.includes(0)) {
        throw new A2aError('content_type_not_supported', `${at}: the file holds NUL bytes, so it is not text`);
      }
      return;
    }
    if (typeof p.url === 'string') {
      throw new A2aError(
        'content_type_not_supported',
        `${at}: file references by URL are not supported; send the bytes inline`,
      );
    }
    throw A2aError.invalidParams(at, 'must carry text, data, or a file');
  });
}

/** Common checks of a user message, after a dialect has put it in v1.0 form. */
export function checkUserMessage(m: MessageJson, field: string): void {
  if (m.role !== 'ROLE_USER') throw A2aError.invalidParams(`${field}.role`, 'must be the user role');
  if (m.parts.length === 0) throw A2aError.invalidParams(`${field}.parts`, 'must contain at least one part');
  if (m.parts.length > 64) throw A2aError.invalidParams(`${field}.parts`, 'must contain at most 64 parts');
}
