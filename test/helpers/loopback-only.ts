/**
 * A connect tripwire for every test process (loaded with `--import` by
 * `scripts/run-tests.mjs` and by the server child processes the tests
 * start): a TCP connection to anything but loopback is refused before a
 * packet leaves, and the process then exits non-zero naming it — so a
 * regression in an SSRF guard, in a test naming a metadata or private
 * address, can never send traffic off this machine, and cannot pass
 * quietly because the refusal looked like the expected error.
 */
import dns from 'node:dns';
import net from 'node:net';

const violations: string[] = [];

function isLoopback(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  return a === 'localhost' || a === '::1' || /^127\./.test(a) || /^::ffff:127\./.test(a);
}

function refuse(target: string): Error {
  violations.push(target);
  return Object.assign(new Error(`loopback-only tripwire: a connection to ${target} was refused`), {
    code: 'ECONNREFUSED',
  });
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;
type Lookup = (host: string, options: dns.LookupOptions, cb: LookupCallback) => void;

/** Resolves as asked, then refuses any non-loopback answer. */
function guardedLookup(inner: Lookup): Lookup {
  return (host, options, cb) =>
    inner(host, options, (err, address, family) => {
      if (err) return cb(err, address, family);
      const all = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const bad = all.find((a) => !isLoopback(a));
      if (bad !== undefined) return cb(refuse(`${host} (${bad})`), address, family);
      cb(null, address, family);
    });
}

// Kept unbound on purpose: it is called with each socket as `this` below.
// eslint-disable-next-line @typescript-eslint/unbound-method
const original = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  const first = args[0];
  let options: Record<string, unknown> | undefined;
  if (Array.isArray(first))
    options = first[0] as Record<string, unknown>; // internal normalized form
  else if (first && typeof first === 'object') options = first as Record<string, unknown>;
  else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    options = { port: first, host: typeof args[1] === 'string' ? args[1] : 'localhost' };
    args = [options, ...args.slice(typeof args[1] === 'string' ? 2 : 1)];
  }
  if (options && typeof options.path !== 'string') {
    const host = typeof options.host === 'string' ? options.host : 'localhost';
    if (net.isIP(host.replace(/^\[|\]$/g, '')) && !isLoopback(host)) {
      const err = refuse(`${host}:${String(options.port)}`);
      process.nextTick(() => this.destroy(err));
      return this;
    }
    if (!net.isIP(host)) options.lookup = guardedLookup((options.lookup as Lookup | undefined) ?? dns.lookup);
  }
  return (original as (...a: unknown[]) => net.Socket).apply(this, args);
};

process.on('exit', () => {
  if (violations.length === 0) return;
  process.stderr.write(`loopback-only tripwire: refused connections to ${violations.join(', ')}\n`);
  process.exitCode = 1;
});
