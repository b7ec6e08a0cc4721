import { findJsonProblem, parseJsonText, type JsonScan, type JsonTextError } from '../../common/json-guard.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import { isObject, type Json } from '../../a2a-wire/dialects/params.js';

export type RpcId = string | number | null;

/** A JSON-RPC 2.0 request object, checked (spec §9, JSON-RPC 2.0 §4). */
export interface Envelope {
  id: RpcId;
  method: string;
  params: Json;
}

/** A request that could not be read: the error, and the id as far as it could be read (else null). */
export class EnvelopeError extends Error {
  constructor(
    readonly id: RpcId,
    readonly error: A2aError,
  ) {
    super(error.message);
    this.name = 'EnvelopeError';
  }
}

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * Reads a request body into an envelope; pure. Batches are refused, and so
 * are unknown members. `params` is only checked to be an object here: its
 * content belongs to the method (see `checkParamsJson`).
 */
export function parseEnvelope(text: string, scan?: JsonScan): Envelope {
  let id: RpcId = null;
  const fail = (error: A2aError): never => {
    throw new EnvelopeError(id, error);
  };
  let body: unknown;
  try {
    body = parseJsonText(text, { root: '', scan });
  } catch (err) {
    const e = err as JsonTextError;
    // Nesting is bounded before parsing (the id cannot be read then): too deep in params is bad params, elsewhere a bad request.
    if (e.kind === 'depth' && e.path?.startsWith('params')) {
      return fail(A2aError.invalidParams(e.path, `${e.reason} (line ${e.at.line}, column ${e.at.column})`));
    }
    if (e.kind === 'depth') return fail(new A2aError('invalid_request', `the request's ${e.message}`));
    return fail(new A2aError('parse_error', `invalid JSON payload: ${e.message}`));
  }
  if (Array.isArray(body)) return fail(new A2aError('invalid_request', 'batch requests are not supported'));
  if (!isObject(body))
    return fail(new A2aError('invalid_request', 'the request must be a JSON-RPC 2.0 request object'));
  const rawId = body.id;
  if (typeof rawId === 'number' && Number.isFinite(rawId)) id = rawId;
  else if (typeof rawId === 'string' && findJsonProblem(rawId) === undefined && rawId.length <= 1024) id = rawId;
  else if (rawId !== undefined && rawId !== null) {
    fail(new A2aError('invalid_request', 'id must be a string (at most 1024 characters), a number or null'));
  }
  if (body.jsonrpc !== '2.0') fail(new A2aError('invalid_request', 'jsonrpc must be "2.0"'));
  if (typeof body.method !== 'string' || body.method.length === 0) {
    return fail(new A2aError('invalid_request', 'method must be a non-empty string'));
  }
  const extra = Object.keys(body).find((k) => !MEMBERS.has(k));
  if (extra !== undefined)
    fail(new A2aError('invalid_request', `unknown member '${extra.slice(0, 64)}' in the request object`));
  const params = body.params;
  // JSON-RPC 2.0 §4.2: params is a structured value (object or array) when present.
  if (params !== undefined && params !== null && typeof params !== 'object') {
    fail(new A2aError('invalid_request', 'params must be an object (or an array) when present'));
  }
  if (Array.isArray(params))
    fail(A2aError.invalidParams('params', 'must be an object: A2A methods take named parameters'));
  return { id, method: body.method, params: isObject(params) ? params : {} };
}
