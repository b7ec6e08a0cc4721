import { DomainError } from '../../common/errors.js';
import { scanJson } from '../../common/json-guard.js';
import { hasBody, isJsonType, isUtf8, jsonBody, mediaTypeOf, readBody } from '../../common/http/read-body.js';
import type { AppConfig } from '../../config/app-config.js';
import { checkScanBesidesFiles } from '../handler/size-limits.js';
import type { HttpExchange } from './exchange.js';

/**
 * JSON-RPC's body as text (a malformed one is a JSON-RPC parse error, not
 * an HTTP 400): `application/json`, `application/a2a+json` or no media
 * type, UTF-8.
 */
export function readRpcBody(x: HttpExchange, config: AppConfig): Promise<string> {
  const header = x.req.headers['content-type'];
  if (header !== undefined) {
    const media = mediaTypeOf(header);
    if (
      !media ||
      (media.type !== 'application/json' && media.type !== 'application/a2a+json') ||
      !isUtf8(media.charset)
    ) {
      return Promise.reject(
        new DomainError(
          'unsupported_media_type',
          `JSON-RPC requests must be sent as Content-Type: application/json (or application/a2a+json), UTF-8; got '${header.slice(0, 100)}'`,
        ),
      );
    }
  }
  x.continue();
  // A reaction on the read (every JSON-RPC call comes this way): no async frame and await of its own.
  return readBody(x.req, config.a2aBodyBytes).then(({ text, bytes }) => {
    x.bodyBytes = bytes;
    x.bodyScan = scanJson(text);
    checkScanBesidesFiles(bytes, x.bodyScan, config);
    return text;
  });
}

/** HTTP+JSON's body, parsed: a JSON object or array (UTF-8), when the request has one. */
export async function readRestBody(x: HttpExchange, config: AppConfig): Promise<unknown> {
  if (!hasBody(x.req)) return undefined;
  const media = mediaTypeOf(x.req.headers['content-type'] ?? '');
  if (!media || !isJsonType(media.type) || !isUtf8(media.charset)) {
    throw new DomainError('unsupported_media_type', 'request bodies must be JSON (Content-Type: application/json)');
  }
  x.continue();
  const { text, bytes } = await readBody(x.req, config.a2aBodyBytes);
  x.bodyBytes = bytes;
  const scan = scanJson(text);
  checkScanBesidesFiles(bytes, scan, config);
  // No text, or blanks alone: no body.
  return /\S/.test(text) ? jsonBody(text, scan) : undefined;
}
