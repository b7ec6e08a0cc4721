import { isUtf8 as isUtf8Text } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { parse as parseContentType } from 'content-type';
import { DomainError } from '../errors.js';
import { findJsonProblem, JsonTextError, parseJsonText, type JsonScan } from '../json-guard.js';

/** A request's media type and charset (both lower case), or null when the header is malformed. */
export function mediaTypeOf(header: string): { type: string; charset?: string } | null {
  try {
    const ct = parseContentType(header);
    const charset = ct.parameters.charset?.toLowerCase();
    return charset === undefined ? { type: ct.type } : { type: ct.type, charset };
  } catch {
    return null;
  }
}

/** UTF-8 under either of its names; an absent charset means UTF-8 for JSON (RFC 8259 §8.1). */
export const isUtf8 = (charset: string | undefined): boolean =>
  charset === undefined || charset === 'utf-8' || charset === 'utf8';

/** JSON media types: `application/json` and `application/<anything>+json` (A2A's `application/a2a+json`). */
export const isJsonType = (type: string): boolean =>
  type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));

/** Whether the request announces a body (RFC 9112 §6.3): chunked, or a non-zero length. */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** A body that was not read whole: the client went away or sent something undecodable. */
export class BodyAborted extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BodyAborted';
  }
}

/**
 * A JSON body's bytes must be UTF-8 (RFC 8259 §8.1): bytes that are not were read as U+FFFD in silence, and stored
 * so — two bodies that differ only there alike. Checked before decoding (`isUtf8`: native, at memory speed).
 */
export function checkUtf8(body: Buffer): void {
  if (!isUtf8Text(body)) {
    throw new DomainError('invalid_json', 'the request body is not valid UTF-8 (JSON text must be: RFC 8259 §8.1)');
  }
}

const tooLarge = (limit: number) => new DomainError('payload_too_large', `request body exceeds ${limit} bytes`);

/**
 * Reads a request body as UTF-8 text (a leading BOM dropped), at most
 * `limit` bytes after decoding a `Content-Encoding` (gzip, deflate, br, as
 * body-parser does): a declared length over the limit is refused before a
 * byte is read, a stream that passes it as soon as it does (413). An
 * unknown encoding is a 415; a corrupt one a 400. `bytes` is the decoded size.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<{ text: string; bytes: number }> {
  if (req.destroyed || req.readableAborted) {
    return Promise.reject(new BodyAborted('the client closed the request before its body was read'));
  }
  // An empty Content-Encoding is none, as body-parser reads it.
  const encoding =
    String(req.headers['content-encoding'] ?? '')
      .trim()
      .toLowerCase() || 'identity';
  let source: Readable = req;
  if (encoding === 'identity') {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  } else if (encoding === 'gzip' || encoding === 'x-gzip' || encoding === 'deflate' || encoding === 'br') {
    const inflate =
      encoding === 'br' ? createBrotliDecompress() : encoding === 'deflate' ? createInflate() : createGunzip();
    req.on('error', (err) => inflate.destroy(err));
    source = req.pipe(inflate);
  } else {
    return Promise.reject(
      new DomainError(
        'unsupported_media_type',
        `unsupported Content-Encoding '${encoding.slice(0, 32)}'; send the body as is, gzip, deflate or br`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let raw = 0;
    let decoded: { text: string; bytes: number } | undefined;
    let settled = false;
    const finish = (err: Error | undefined, value?: { text: string; bytes: number }): void => {
      if (settled) return;
      settled = true;
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      req.off('close', onClose);
      req.off('data', onRaw);
      req.off('end', onRawEnd);
      if (err) {
        if (source !== req) source.destroy();
        reject(err);
      } else resolve(value!);
    };
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > limit) {
        // Stop reading; the answer closes the connection (the rest of the body is never read).
        req.pause();
        finish(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, bytes);
      try {
        checkUtf8(body);
      } catch (err) {
        return finish(err as Error);
      }
      let text = body.toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (source === req || req.complete) return finish(undefined, { text, bytes });
      // Decoded, but the request goes on (bytes after the encoded stream): read to its end, within the limit.
      decoded = { text, bytes };
      req.resume();
    };
    // An encoded body is bounded as it arrives too: empty gzip members, say, decode to nothing but still come.
    const onRaw = (chunk: Buffer): void => {
      raw += chunk.length;
      if (raw > limit) {
        req.pause();
        finish(tooLarge(limit));
      }
    };
    const onRawEnd = (): void => {
      if (decoded) finish(undefined, decoded);
    };
    const onError = (err: Error): void =>
      finish(
        source === req
          ? new BodyAborted(err.message)
          : new DomainError('invalid_json', `the body could not be decoded as ${encoding}`),
      );
    const onClose = (): void => {
      if (!req.complete) finish(new BodyAborted('the client closed the request before its body ended'));
    };
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    req.on('close', onClose);
    if (source !== req) {
      req.on('data', onRaw);
      req.on('end', onRawEnd);
    }
  });
}

/**
 * A body whose text cannot be taken, as the client gets it: a syntax error
 * (400 `invalid_json`, saying where) or a value nested too deep (400
 * `validation_failed` naming it, as for any other field).
 */
export function bodyProblem(err: JsonTextError): DomainError {
  if (err.kind === 'depth') {
    const field = err.path?.replace(/^body\.?/, '') || 'body';
    return DomainError.validation(
      [{ field, messages: [`${err.reason} (line ${err.at.line}, column ${err.at.column})`] }],
      err.message,
    );
  }
  return new DomainError('invalid_json', `request body is ${err.message}`);
}

/**
 * A request body's JSON text as a value, for every route: an object or an array (a scalar is refused, as
 * body-parser's `strict` does), a syntax error located, its strings held to the text rules (no NUL, no unpaired
 * surrogate: a 400 naming the field). `scan`: the text's scan when the caller made one.
 */
export function jsonBody(text: string, scan?: JsonScan): unknown {
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') {
    throw new DomainError('invalid_json', 'request body is not valid JSON: it must be an object or an array');
  }
  let body: unknown;
  try {
    body = parseJsonText(text, scan ? { scan } : undefined);
  } catch (err) {
    throw err instanceof JsonTextError ? bodyProblem(err) : err;
  }
  const problem = findJsonProblem(body);
  if (problem) {
    throw DomainError.validation(
      [{ field: problem.path.replace(/^body\.?/, '') || 'body', messages: [problem.problem] }],
      `${problem.path} ${problem.problem}`,
    );
  }
  return body;
}
