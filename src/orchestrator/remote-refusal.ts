import { A2AError } from '@a2a-js/sdk/errors';
import { RemoteCallError } from '../a2a-outbound/egress-fetch.js';
import { UpstreamCardError } from '../a2a-outbound/remote-errors.js';
import { EgressError } from '../common/net/egress.js';
import { stripSecrets } from '../outbound-auth/credentials.js';
import { OutboundAuthError } from '../outbound-auth/outbound-auth.types.js';
import { causeOf } from './remote-content.js';
import type { RunEvent, UpstreamErrorType, UpstreamRefusal } from './run-event.js';

/** gRPC status codes the mapping reads: INVALID_ARGUMENT, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE. */
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_TRANSIENT = new Set([4, 8, 14]);
/** JSON-RPC's own errors (parse error, invalid request, method not found): about Arbiter's request, not the caller's. */
const JSONRPC_OWN = new Set([-32700, -32600, -32601]);

/**
 * The error that ends a remote-backed agent's turn: its code and the upstream's own message, secrets stripped;
 * `unanswered` (the turn sent a message and the upstream has sent no event of it), an upstream error is the
 * upstream's refusal of the send, kept for a caller still waiting for its answer.
 */
export function turnFailure(
  err: unknown,
  upstreamTaskId: string | undefined,
  secrets: readonly string[],
  unanswered: boolean,
): Extract<RunEvent, { type: 'error' }> {
  const { code, message } = causeOf(err, upstreamTaskId);
  const refusal = unanswered && code === 'upstream_error' ? refusalOf(err, secrets) : undefined;
  return { type: 'error', code, message: stripSecrets(message, secrets), ...(refusal ? { refusal } : {}) };
}

/**
 * What an upstream answered a send with, for the caller (see `UpstreamRefusal`): undefined for what is not an
 * answer of the upstream or of the way to it (an error of this process, a timeout, a protocol problem).
 */
export function refusalOf(err: unknown, secrets: readonly string[]): UpstreamRefusal | undefined {
  const type = typeOf(err);
  if (!type) return undefined;
  const said = (err as Error).message.replace(/\s+/g, ' ').trim().slice(0, 500) || 'an error without a message';
  return { type, message: `upstream: ${stripSecrets(said, secrets)}` };
}

function typeOf(err: unknown): UpstreamErrorType | undefined {
  if (err instanceof UpstreamCardError) return err.transient ? 'unavailable' : 'internal';
  // A credential Arbiter could not get (no JWT to exchange, its token endpoint down) is not the upstream's answer.
  if (err instanceof OutboundAuthError) return undefined;
  if (err instanceof EgressError) return err.code === 'blocked' || err.code === 'bad_url' ? 'internal' : 'unavailable';
  if (err instanceof RemoteCallError)
    return transientHttp(Number(/^HTTP (\d{3})/.exec(err.message)?.[1])) ? 'unavailable' : 'internal';
  if (!(err instanceof A2AError)) return undefined;
  const wire = err as A2AError & {
    envelopeCode?: unknown;
    status?: unknown;
    statusCode?: unknown;
    transport?: unknown;
  };
  if (typeof wire.envelopeCode === 'number' && JSONRPC_OWN.has(wire.envelopeCode)) return 'internal';
  switch (err.reason) {
    case 'INVALID_PARAMS':
      return 'invalid_params';
    case 'CONTENT_TYPE_NOT_SUPPORTED':
      return 'content_type_not_supported';
    case 'UNSUPPORTED_OPERATION':
      return 'unsupported_operation';
    default:
  }
  if (err.metadata?.retryable === 'true') return 'unavailable';
  if (wire.transport === 'grpc' && typeof wire.status === 'number') {
    if (wire.status === GRPC_INVALID_ARGUMENT) return 'invalid_params';
    if (GRPC_TRANSIENT.has(wire.status)) return 'unavailable';
  }
  if (wire.transport === 'rest' && typeof wire.statusCode === 'number' && transientHttp(wire.statusCode)) {
    return 'unavailable';
  }
  return 'internal';
}

const transientHttp = (status: number): boolean => status === 429 || status === 502 || status === 503 || status === 504;
