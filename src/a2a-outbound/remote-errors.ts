import { EgressError } from '../common/net/egress.js';
import { OutboundAuthError } from '../outbound-auth/outbound-auth.types.js';
import { RemoteCallError } from './egress-fetch.js';
import { CardSignatureError } from '../common/card-signing/card-signature.js';

/** Worth one card re-fetch: the endpoint moved or speaks another version now. */
export function staleCard(err: unknown): boolean {
  if (err instanceof RemoteCallError) return /^HTTP (404|405|410)/.test(err.message);
  const code = (err as { envelopeCode?: unknown }).envelopeCode;
  return code === -32009 || code === -32601;
}

export function reason(err: unknown): string {
  if (err instanceof RemoteCallError || err instanceof EgressError) return err.message;
  if (err instanceof OutboundAuthError) return `credentials: ${err.message}`;
  return (err as Error).message?.slice(0, 200) || 'unknown error';
}

/** A failed call in the seed's vocabulary. */
export function describeCallError(err: unknown): string {
  if (err instanceof CardSignatureError) return describeCardError(err);
  if (err instanceof OutboundAuthError) return `ERR: credentials: ${err.message}`;
  if (err instanceof EgressError) {
    return err.code === 'blocked' || err.code === 'bad_url'
      ? `ERR: transport: refused: ${err.message}`
      : `ERR: transport: ${err.message}`;
  }
  if (err instanceof RemoteCallError) {
    return err.kind === 'http' ? `ERR: ${err.message}` : `ERR: malformed response: ${err.message}`;
  }
  const code = (err as { envelopeCode?: unknown }).envelopeCode;
  if (typeof code === 'number') {
    return `ERR: JSON-RPC ${code}: ${String((err as Error).message)
      .replace(/\s+/g, ' ')
      .slice(0, 300)}`;
  }
  return `ERR: malformed response: ${String((err as Error).message ?? err)
    .replace(/\s+/g, ' ')
    .slice(0, 200)}`;
}

/** A card that could not be had, for the model: a pinned card's bad signature says so. */
export function describeCardError(err: unknown): string {
  if (err instanceof CardSignatureError) return `ERR: card signature invalid: ${err.message}`;
  return `ERR: card fetch failed: ${reason(err)}`;
}

/** A remote-backed agent's upstream card could not be had; `transient`: worth trying again later. */
export class UpstreamCardError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'UpstreamCardError';
  }
}

/** Whether a card fetch that failed so may succeed later (not a refused address, a bad card or signature). */
export function transientCardError(err: unknown): boolean {
  if (err instanceof CardSignatureError) return false;
  if (err instanceof EgressError) return err.code !== 'blocked' && err.code !== 'bad_url';
  if (err instanceof RemoteCallError) return err.kind === 'http' && /^HTTP (429|5\d\d)/.test(err.message);
  return true;
}

/**
 * Why a client could not be built from a card: the card's fault (no interface this server speaks, an address the
 * guard refuses), or — a gRPC host whose name cannot be resolved now, a timeout — the moment's, which stays
 * transient (`transientCardError`) so that the caller may retry.
 */
export function unusableCard(err: unknown): Error {
  if (err instanceof EgressError && err.code !== 'blocked' && err.code !== 'bad_url') return err;
  return new RemoteCallError('malformed', `no usable interface in the card (${reason(err)})`);
}
