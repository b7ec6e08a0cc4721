import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Ranges an operator may open (`allowPrivate`, an allow-listed host); the others stay closed whatever the setting. */
export const OPENABLE = new Set(['private', 'loopback', 'uniqueLocal', 'carrierGradeNat']);

/**
 * Why an address may not be reached, or null for a public unicast address.
 * An IPv6 address that carries an IPv4 address is classed by the IPv4
 * address it leads to, so `::a9fe:a9fe` is the metadata service's
 * 169.254.169.254 (linkLocal), whichever way it is written:
 *   IPv4-mapped      ::ffff:a.b.c.d             (RFC 4291 §2.5.5.2)
 *   IPv4-compatible  ::a.b.c.d, not :: or ::1   (RFC 4291 §2.5.5.1, deprecated; a `sit` tunnel still routes it)
 *   IPv4-translated  ::ffff:0:a.b.c.d           (SIIT, RFC 7915)
 *   NAT64            64:ff9b::a.b.c.d           (RFC 6052 well-known prefix: the translator connects to a.b.c.d)
 *   6to4             2002:WWXX:YYZZ::/48        (RFC 3056: the tunnel's IPv4 end)
 *   Teredo           2001:0:server:…:~client    (RFC 4380: both the server and the de-obfuscated client)
 *   ISATAP           <prefix>:0:5efe:a.b.c.d    (RFC 5214 interface id; also 100:/200:/300:5efe)
 * With two addresses at stake (Teredo, ISATAP and its own prefix) the
 * stricter class wins. The NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215)
 * is never reachable: where the IPv4 address sits depends on the prefix
 * length the operator chose. Anything else outside 2000::/3, the global
 * unicast space, is `reserved`.
 */
export function blockedRange(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return v4Class(ipaddr.IPv4.parse(address));
  if (family !== 6) return 'invalid address';
  // The WHATWG URL parser writes the address in hex (ipaddr.js would read `::a.b.c.d` as `::ffff:a.b.c.d`);
  // a zone id (`%eth0`) does not change the class.
  let hex: string;
  try {
    hex = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
  } catch {
    return 'invalid address';
  }
  return v6Class(ipaddr.IPv6.parse(hex));
}

function v4Class(ip: ipaddr.IPv4): string | null {
  const range = ip.range();
  return range === 'unicast' ? null : range;
}

/** The IPv4 address in `bytes` at `at`, XOR `mask` (Teredo obfuscates its client address). */
function v4At(bytes: number[], at: number, mask = 0): string | null {
  return v4Class(new ipaddr.IPv4(bytes.slice(at, at + 4).map((b) => b ^ mask)));
}

/** The stricter of some classes: one that stays closed, else one an operator may open, else public. */
function stricter(...classes: (string | null)[]): string | null {
  return classes.find((c) => c !== null && !OPENABLE.has(c)) ?? classes.find((c) => c !== null) ?? null;
}

function v6Class(ip: ipaddr.IPv6): string | null {
  const w = ip.parts;
  const b = ip.toByteArray();
  const zero = (from: number, to: number): boolean => w.slice(from, to).every((x) => x === 0);
  const own = ip.range();
  if (own === 'unspecified' || own === 'loopback') return own;
  if (zero(0, 6)) return v4At(b, 12); // IPv4-compatible
  if (zero(0, 5) && w[5] === 0xffff) return v4At(b, 12); // IPv4-mapped
  if (zero(0, 4) && w[4] === 0xffff && w[5] === 0) return v4At(b, 12); // IPv4-translated
  if (w[0] === 0x64 && w[1] === 0xff9b && zero(2, 6)) return v4At(b, 12); // NAT64 well-known prefix
  if (w[0] === 0x64 && w[1] === 0xff9b && w[2] === 1) return 'nat64LocalUse';
  if (w[0] === 0x2002) return v4At(b, 2); // 6to4
  if (w[0] === 0x2001 && w[1] === 0) return stricter(v4At(b, 4), v4At(b, 12, 0xff)); // Teredo
  const ownClass = own === 'unicast' ? (w[0] >> 13 === 1 ? null : 'reserved') : own;
  if ((w[4] & 0xfcff) === 0 && w[5] === 0x5efe) return stricter(ownClass, v4At(b, 12)); // ISATAP
  return ownClass;
}
