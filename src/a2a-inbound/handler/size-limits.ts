import { DomainError } from '../../common/errors.js';
import type { AppConfig } from '../../config/app-config.js';
import type { ParsedParams } from '../../a2a-wire/dialects/dialect.js';
import type { JsonScan } from '../../common/json-guard.js';

/**
 * An A2A request body may be `ARBITER_MAX_BODY_BYTES` plus the base64 of
 * `ARBITER_MAX_MESSAGE_FILE_BYTES` (the A2A HTTP controller reads up to that), but besides
 * its message's file bytes — the `raw` of its file parts, as the dialect
 * parsed them (v0.3's `file.bytes` too) — it stays within
 * `ARBITER_MAX_BODY_BYTES`: text, data, metadata and every other method's
 * body are held to the plain limit, whatever keys they use. A 413 (on
 * gRPC, RESOURCE_EXHAUSTED: `bytes` is then the protobuf message's size and
 * its file bytes are counted as the bytes they are, not as base64).
 */
export function checkBesidesFiles(
  bytes: number,
  call: ParsedParams,
  config: AppConfig,
  files: 'base64' | 'binary' = 'base64',
): void {
  const plain = config.maxBodyBytes;
  if (bytes <= plain) return;
  let fileBytes = 0;
  if (call.op === 'send' || call.op === 'stream') {
    for (const part of call.params.message.parts) {
      if (typeof part.raw !== 'string') continue;
      // JSON bodies carry the base64 text; a protobuf message carries the bytes themselves.
      fileBytes += files === 'base64' ? part.raw.length : Buffer.byteLength(part.raw, 'base64');
    }
  }
  if (bytes - fileBytes <= plain) return;
  throw tooLargeBesidesFiles(config);
}

/**
 * The same limit checked before the body is parsed, from the HTTP body's scan:
 * file bytes are long strings, so a body whose text besides long strings
 * passes `ARBITER_MAX_BODY_BYTES` cannot pass `checkBesidesFiles` either —
 * and parsing it first (say 14 MiB of `[],`) would hold the event loop for
 * most of a second.
 */
export function checkScanBesidesFiles(bytes: number, scan: JsonScan, config: AppConfig): void {
  // A body too deep is refused for its depth when it is parsed, which the scan's depth answer makes cheap.
  if (scan.deepAt === -1 && bytes > config.maxBodyBytes && scan.besidesLongStrings > config.maxBodyBytes) {
    throw tooLargeBesidesFiles(config);
  }
}

const tooLargeBesidesFiles = (config: AppConfig): DomainError =>
  new DomainError(
    'payload_too_large',
    `request body exceeds ${config.maxBodyBytes} bytes besides its file bytes (files: ${config.a2aBodyBytes - config.maxBodyBytes} bytes more)`,
  );
