import { isPaddedBase64 } from '../../common/base64.js';
import { mediaTypeFor, sanitizePath } from './files.js';

/**
 * The file a `/write <path>` (the lines are the file's text) or
 * `/write --base64 <path>` (the lines are its bytes, base64) gives the user,
 * or why it cannot: a bad path, bad base64, more than `maxBytes`.
 */
export function fileOfWrite(
  args: string,
  body: string,
  maxBytes: number,
): { path: string; bytes: Buffer; mediaType: string } | { error: string } {
  const b64 = /^--base64(?:\s+|$)/.exec(args);
  const p = sanitizePath(b64 ? args.slice(b64[0].length) : args);
  if ('error' in p) return { error: p.error };
  let bytes: Buffer;
  if (b64) {
    const compact = body.replace(/\s+/g, '');
    if (!isPaddedBase64(compact)) return { error: `the lines of /write --base64 ${p.path} are not padded base64` };
    bytes = Buffer.from(compact, 'base64');
  } else {
    bytes = Buffer.from(body, 'utf8');
  }
  if (bytes.length > maxBytes)
    return { error: `${p.path} is ${bytes.length} bytes; a file may be at most ${maxBytes} bytes` };
  return { path: p.path, bytes, mediaType: mediaTypeFor(p.path, b64 ? 'application/octet-stream' : 'text/plain') };
}
