import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const TENANT_TOKEN_PATTERN = /^atr_[0-9a-f]{64}$/;

/** `atr_` + 64 hex characters (256 bits from the CSPRNG). */
export function generateTenantToken(): string {
  return `atr_${randomBytes(32).toString('hex')}`;
}

export function generateAdminToken(): string {
  return `adm_${randomBytes(32).toString('hex')}`;
}

export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Human-facing prefix shown in token listings; not enough to authenticate. */
export function tokenPrefix(token: string): string {
  return token.slice(0, 12);
}

/** Compares two secrets in time independent of where they differ (or their lengths). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}
