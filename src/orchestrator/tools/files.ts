import { extname } from 'node:path/posix';

const MEDIA_TYPES: Record<string, string> = {
  '.md': 'text/markdown',
  '.txt': 'text/plain',
  '.json': 'application/json',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.js': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.py': 'text/x-python',
  '.sql': 'application/sql',
  '.css': 'text/css',
  '.sh': 'text/x-shellscript',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.bin': 'application/octet-stream',
};

/** The media type of a `/write` path by its extension; `fallback` for an unknown one. */
export function mediaTypeFor(path: string, fallback = 'text/plain'): string {
  return MEDIA_TYPES[extname(path).toLowerCase()] ?? fallback;
}

/**
 * A `/write` path made safe to hand to a client as a file name: relative,
 * `/`-separated, no `.` or `..` segments, no control or reserved characters.
 * Returns an error message instead when it cannot be made safe.
 */
export function sanitizePath(raw: string): { path: string } | { error: string } {
  const p = raw
    .trim()
    .replace(/\\/g, '/')
    .replace(/^(\.\/)+/, '')
    .replace(/^\/+/, '');
  if (p.length === 0) return { error: 'a path is required: /write <path>' };
  if (p.length > 200) return { error: 'the path is longer than 200 characters' };
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f<>:"|?*]/.test(p))
    return { error: 'the path contains characters not allowed in file names' };
  const segments = p.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) {
    return { error: 'the path must be relative, without empty, "." or ".." segments' };
  }
  return { path: segments.join('/') };
}
