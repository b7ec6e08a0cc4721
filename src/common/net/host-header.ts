/**
 * A request's `Host` header, where a URL Arbiter shows is built from it (cards, links): only a well-formed one is
 * used.
 */

const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253})(?::(\d{1,5}))?$/;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** A `Host` header that is a host name (labels of letters, digits and inner hyphens) or an IP literal, and a port. */
export function wellFormedHost(host: string | undefined): host is string {
  const m = host === undefined ? null : HOST.exec(host);
  if (!m) return false;
  if (m[2] !== undefined && Number(m[2]) > 65535) return false;
  if (!m[1].startsWith('[') && !m[1].split('.').every((label) => LABEL.test(label))) return false;
  // As a URL reads it: an address such as 1.2.3.999 or [1:2] is none, and 127.1 is another spelling of one.
  try {
    return new URL(`http://${m[1]}`).hostname === m[1].toLowerCase();
  } catch {
    return false;
  }
}
