import { convert } from 'html-to-text';
import { egressRequest, EgressError, type EgressPolicy } from '../../common/net/egress.js';

const MAX_DOWNLOAD = 2 * 1024 * 1024;

/**
 * `/fetch <url>`: an http(s) GET through the egress guard, HTML rendered as
 * text. Returns the tool result body (an `ERR:` line on failure).
 */
export async function fetchAsText(
  url: string,
  policy: EgressPolicy,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<string> {
  if (!url || /\s/.test(url)) return 'ERR: usage: /fetch <url>';
  let res;
  try {
    res = await egressRequest(url, policy, {
      timeoutMs,
      maxBytes: MAX_DOWNLOAD,
      signal,
      headers: { accept: 'text/html, text/plain, application/json;q=0.9, */*;q=0.5' },
    });
  } catch (err) {
    signal.throwIfAborted();
    if (err instanceof EgressError) {
      return err.code === 'blocked' || err.code === 'bad_url'
        ? `ERR: fetch refused: ${err.message}`
        : `ERR: fetch failed: ${err.message}`;
    }
    return 'ERR: fetch failed';
  }
  if (res.status < 200 || res.status >= 300) return `ERR: HTTP ${res.status} from ${res.url.href}`;
  const type = String(res.headers['content-type'] ?? 'text/plain')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  const textual =
    !type || type.startsWith('text/') || /[/+](json|xml|javascript|yaml)$/.test(type) || type === 'application/xhtml';
  if (!textual) return `ERR: unsupported content type ${type} (text, HTML, JSON and XML only)`;
  const raw = res.body.toString('utf8');
  const text =
    type === 'text/html' || type === 'application/xhtml+xml'
      ? convert(raw, {
          wordwrap: false,
          selectors: [
            { selector: 'img', format: 'skip' },
            { selector: 'a', options: { ignoreHref: true } },
          ],
        })
      : raw;
  return `HTTP ${res.status} ${type} ${res.url.href}${res.truncated ? ' (download cut at 2 MiB)' : ''}\n\n${text.trim()}`;
}
