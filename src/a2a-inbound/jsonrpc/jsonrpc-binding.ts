import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { CLIENT_GONE, detachSse, releaseOnClose } from '../../common/sse.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { A2aError, type Dialect } from '../../a2a-wire/a2a-errors.js';
import type { WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { V03, V1 } from '../../a2a-wire/dialects/dialects.js';
import { A2aCall } from '../handler/a2a-call.js';
import type { A2aStreamOutcome } from '../handler/a2a-invoker.js';
import type { HttpExchange } from '../http/exchange.js';
import { requestedDialect } from '../version.js';
import { EnvelopeError, parseEnvelope, type RpcId } from './envelope.js';
import { toJsonRpcError, type JsonRpcErrorObject } from './jsonrpc-errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The dialect a method is served in (§3.6.2): a v0.3 name in v0.3 shapes
 * under any accepted version; a v1.0 name only when 1.0 was asked for.
 */
function methodDialect(method: string, asked: WireDialect): WireDialect {
  if (Object.hasOwn(V03.methods, method)) return V03;
  if (!Object.hasOwn(V1.methods, method))
    throw new A2aError('method_not_found', `method '${method.slice(0, 64)}' not found`);
  if (asked === V1) return V1;
  // An absent or empty A2A-Version is 0.3, whose methods have other names.
  throw new A2aError(
    'method_not_found',
    `method '${method}' is an A2A 1.0 method; send the header A2A-Version: 1.0 ` +
      `(a request without A2A-Version is served as A2A 0.3, spec §3.6.2)`,
  );
}

/** The dialect of a request refused before its envelope was read: the version it asked for. */
const askedDialect = (header: string | string[] | undefined): Dialect =>
  String(header ?? '')
    .trim()
    .startsWith('1')
    ? '1.0'
    : '0.3';

/**
 * The JSON-RPC binding: `POST /v1/a2a/agents/:id`, JSON-RPC 2.0 (spec §9),
 * behind the A2A HTTP controller (`A2aHttpController`: the tenant guard has
 * accepted the bearer and the body has been read). Reads the version and
 * the envelope, runs the call (`A2aCall`), and writes the reply or the SSE
 * stream. Every JSON-RPC error is HTTP 200.
 *
 * Versions (§3.6.2): `A2A-Version: 1.0` serves v1.0 methods, and v0.3 method
 * names too (the seeds' clients send them under 1.0); an absent, empty or
 * `0.3` version serves v0.3 methods only.
 */
@Injectable()
export class JsonRpcBinding {
  private readonly logger = new Logger('A2A');

  constructor(
    private readonly call: A2aCall,
    private readonly config: AppConfig,
  ) {}

  /**
   * A refusal before the call is read (the bearer, the body): a database
   * outage is a JSON-RPC -32603 with the retryable reason (HTTP 503,
   * `Retry-After`) in the dialect the request asked for; anything else gets
   * the application's error shape, as on every other route.
   */
  refuse(x: HttpExchange, err: unknown): void {
    if (isDatabaseUnavailable(err) && x.open) {
      x.header('Retry-After', '1');
      x.closeIfUnread();
      x.json(503, { jsonrpc: '2.0', id: null, error: toJsonRpcError(err, askedDialect(x.req.headers['a2a-version'])) });
      return;
    }
    if (err instanceof DomainError && err.code === 'invalid_json' && !(err instanceof A2aError)) {
      // A body that is no JSON text (bytes that are not UTF-8, an encoding that does not decode): a parse error.
      x.closeIfUnread();
      const parse = new A2aError('parse_error', err.message);
      this.reply(x, null, this.error(x, parse, askedDialect(x.req.headers['a2a-version'])));
      return;
    }
    x.refuse(err);
  }

  /** One call: `t` has been authenticated, `body` is the request's text. */
  async serve(x: HttpExchange, t: TenantPrincipal, agentId: string, body: string): Promise<void> {
    if (!AGENT_ID_PATTERN.test(agentId)) {
      x.refuse(DomainError.notFound(`agent '${agentId.slice(0, 64)}'`));
      return;
    }
    let dialect: WireDialect;
    try {
      dialect = requestedDialect(x.req.headers['a2a-version'], x.query['A2A-Version']);
    } catch (err) {
      // With the request's id when it can be read (JSON-RPC 2.0 §5), else null.
      this.reply(x, idOf(body, x.bodyScan), this.error(x, err, '1.0'));
      return;
    }
    let id: RpcId = null;
    x.log.tenant_id = t.tenantId;
    x.log.agent_id = agentId;
    const abort = new AbortController();
    const onClose = (): void => abort.abort(CLIENT_GONE);
    // `on`, not `once` (which wraps the listener in a new function and its state): a response closes only once.
    x.res.on('close', onClose);
    let streaming = false;
    try {
      const envelope = parseEnvelope(body, x.bodyScan);
      id = envelope.id;
      dialect = methodDialect(envelope.method, dialect);
      const outcome = await this.call.run({
        principal: t,
        agentId,
        dialect,
        method: envelope.method,
        op: dialect.methods[envelope.method],
        params: () => envelope.params,
        size: { bytes: x.bodyBytes, files: 'base64' },
        origin: { protocol: x.protocol, headers: x.req.headers },
        abort,
        log: x.log,
      });
      if (outcome.kind === 'stream') {
        streaming = true;
        releaseOnClose(x.res, outcome.release);
        this.stream(x, id, dialect, outcome, abort);
      } else this.reply(x, id, undefined, outcome.result);
    } catch (err) {
      if (err instanceof EnvelopeError) this.reply(x, err.id, this.error(x, err.error, dialect.version));
      // Too large is the HTTP answer it was before the call was read: 413.
      else if (err instanceof DomainError && err.code === 'payload_too_large') x.refuse(err);
      else if (!x.open)
        return; // the client went away: nobody to answer
      else {
        if (err instanceof DomainError && err.retryAfterSeconds) x.header('Retry-After', String(err.retryAfterSeconds));
        this.reply(x, id, this.error(x, err, dialect.version));
      }
    } finally {
      if (!streaming) x.res.off('close', onClose);
    }
  }

  /** Streams the frames as SSE `message` events and returns at once (see `detachSse`). */
  private stream(
    x: HttpExchange,
    id: RpcId,
    dialect: WireDialect,
    outcome: A2aStreamOutcome,
    abort: AbortController,
  ): void {
    detachSse(
      x.res,
      outcome.items,
      {
        frame: (item) => {
          const frame = outcome.frame(item);
          return frame && { id: frame.seq, event: 'message', data: { jsonrpc: '2.0', id, result: frame.result } };
        },
        heartbeatMs: this.config.sseHeartbeatMs,
        abort,
        headers: x.headers(),
        onError: (err) => ({
          event: 'message',
          data: { jsonrpc: '2.0', id, error: this.error(x, err, dialect.version) },
        }),
      },
      // The call is released when the response closes (see `serve`).
      () => undefined,
    );
  }

  private error(x: HttpExchange, err: unknown, dialect: Dialect): JsonRpcErrorObject {
    return toJsonRpcError(err, dialect, (e) =>
      this.logger.error({ err: safeError(e), request_id: x.id }, 'JSON-RPC request failed'),
    );
  }

  private reply(x: HttpExchange, id: RpcId, error?: JsonRpcErrorObject, result?: unknown): void {
    if (!x.open) return;
    if (error) x.log.rpc_error = error.code;
    x.send(
      200,
      JSON_TYPE,
      JSON.stringify(error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result: result ?? null }),
    );
  }
}

/** The id of a request, as far as its envelope can be read (null where it cannot). */
function idOf(body: string, scan: HttpExchange['bodyScan']): RpcId {
  try {
    return parseEnvelope(body, scan).id;
  } catch (err) {
    return err instanceof EnvelopeError ? err.id : null;
  }
}
