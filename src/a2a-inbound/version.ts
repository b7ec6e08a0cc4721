import { A2aError, type Dialect } from '../a2a-wire/a2a-errors.js';
import type { WireDialect } from '../a2a-wire/dialects/dialect.js';
import { dialectOf } from '../a2a-wire/dialects/dialects.js';

/**
 * Spec §3.6: the version comes from the `A2A-Version` header (or the
 * `A2A-Version` query parameter); an empty or absent value means 0.3.
 * Only Major.Minor counts, so `1.0.2` is 1.0; `1` is read as 1.0.
 */
export function negotiateVersion(
  header: string | string[] | undefined,
  query: unknown,
): Dialect | { unsupported: string } {
  const raw = firstString(header) ?? firstString(query);
  const value = (raw ?? '').trim();
  if (value === '') return '0.3';
  if (/^1(\.0(\.\d+)?)?$/.test(value)) return '1.0';
  if (/^0\.3(\.\d+)?$/.test(value)) return '0.3';
  return { unsupported: value.slice(0, 32) };
}

/**
 * The dialect an HTTP request asked for (JSON-RPC and HTTP+JSON serve both),
 * or §3.6.2's VersionNotSupportedError naming what was asked.
 */
export function requestedDialect(header: string | string[] | undefined, query: unknown): WireDialect {
  const negotiated = negotiateVersion(header, query);
  if (typeof negotiated === 'string') return dialectOf(negotiated);
  throw new A2aError(
    'version_not_supported',
    `A2A-Version '${negotiated.unsupported}' is not supported; supported: 1.0, 0.3`,
    undefined,
    { requestedVersion: negotiated.unsupported, supportedVersions: '1.0,0.3' },
  );
}

/**
 * The gRPC binding serves 1.0 only: no version is 0.3 (§3.6.2), whose gRPC
 * service (package a2a.v1) this server does not serve.
 */
export function checkGrpcVersion(values: string[]): void {
  const negotiated = negotiateVersion(values, undefined);
  if (negotiated === '1.0') return;
  const requested = typeof negotiated === 'object' ? negotiated.unsupported : (values[0] ?? '');
  throw new A2aError(
    'version_not_supported',
    `A2A-Version '${requested}' is not supported on the gRPC binding; send the metadata a2a-version: 1.0 ` +
      `(no version means 0.3, spec §3.6.2)`,
    undefined,
    { requestedVersion: requested, supportedVersions: '1.0' },
  );
}

function firstString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}
