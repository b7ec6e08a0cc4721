import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { CLIENT_GONE, releaseOnClose, writeSse } from '../../common/sse.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { A2aError } from '../../a2a-wire/a2a-errors.js';
import type { WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { PROTO_METHOD_OF, V1 } from '../../a2a-wire/dialects/dialects.js';
import { A2aCall } from '../handler/a2a-call.js';
import type { A2aStreamOutcome } from '../handler/a2a-invoker.js';
import type { HttpExchange } from '../http/exchange.js';
import { requestedDialect } from '../version.js';
import { toRestError } from './rest-errors.js';
import { matchRoute, restParams } from './rest-routes.js';

/** Spec §11.1: `application/a2a+json` for v1.0; v0.3's REST said `application/json`. */
const contentType = (d: WireDialect): string =>
  d.version === '1.0' ? 'application/a2a+json; charset=utf-8' : 'application/json; charset=utf-8';

/**
 * The HTTP+JSON/REST binding (spec §11) under every agent's URL, behind the
 * A2A HTTP controller (`A2aHttpController`): `POST message:send`, `POST message:stream`,
 * `GET tasks/{id}`, `GET tasks`, `POST tasks/{id}:cancel`,
 * `POST tasks/{id}:subscribe`, the push-config routes and
 * `GET extendedAgentCard`, each also after a `/{tenant}` prefix (v1.0, which
 * `A2aCall` holds to the agent's id). It reads the route and the version (§3.6: header
 * or query; 1.0 answers in v1.0 ProtoJSON, an absent or 0.3 version in the
 * v0.3 dialect's shapes), runs the call (`A2aCall`) with the operation's
 * request object built from path, query and body, and writes the answer.
 * Everything that fails — the bearer (401, checked before the body is
 * read), the body (413, 415, malformed JSON), an unknown route or method —
 * is answered in §11.6's shape.
 */
@Injectable()
export class RestBinding {
  private readonly logger = new Logger('A2A-REST');

  constructor(
    private readonly call: A2aCall,
    private readonly config: AppConfig,
  ) {}

  /** Writes an error in §11.6's shape, unless the response has already begun. */
  refuse(x: HttpExchange, err: unknown, dialect: WireDialect = V1): void {
    if (!x.open) return;
    const { status, body, headers } = toRestError(err, (e) =>
      this.logger.error({ err: safeError(e), request_id: x.id }, 'HTTP+JSON request failed'),
    );
    const reason = (body.error.details.find((d) => 'reason' in d) as { reason?: string } | undefined)?.reason;
    x.log.rest_error = reason ?? body.error.status;
    x.closeIfUnread();
    for (const [k, v] of Object.entries(headers)) x.header(k, v);
    x.send(status, contentType(dialect), JSON.stringify(body));
  }

  /**
   * One call: `t` has been authenticated; `sub` is the path under the
   * agent's URL, still percent-encoded; `body` the parsed JSON body, if any.
   */
  async serve(x: HttpExchange, t: TenantPrincipal, agentId: string, sub: string, body: unknown): Promise<void> {
    let dialect = V1;
    const abort = new AbortController();
    const onClose = (): void => abort.abort(CLIENT_GONE);
    // `on`, not `once` (which wraps the listener in a new function and its state): a response closes only once.
    x.res.on('close', onClose);
    try {
      if (!AGENT_ID_PATTERN.test(agentId)) throw DomainError.notFound(`agent '${agentId.slice(0, 64)}'`);
      const method = x.req.method ?? '';
      const route = matchRoute(method, sub, agentId);
      const noRoute = (): A2aError =>
        new A2aError('method_not_found', `no HTTP+JSON route ${method} /${sub.slice(0, 128)} (spec §11.3)`);
      if (route.kind === 'not_found') throw noRoute();
      if (route.kind === 'method_not_allowed') {
        x.header('Allow', route.allow.join(', '));
        throw new DomainError('method_not_allowed', `use ${route.allow.join(' or ')} for /${sub.slice(0, 128)}`);
      }
      dialect = requestedDialect(x.req.headers['a2a-version'], x.query['A2A-Version']);
      const version = dialect.version;
      // A v0.3 request has no tenant field, so no `/{tenant}/…` route either: as before, none is served for it.
      if (route.tenant !== undefined && version !== '1.0') throw noRoute();
      const outcome = await this.call.run({
        principal: t,
        agentId,
        pathTenant: route.tenant,
        dialect,
        method: PROTO_METHOD_OF[route.op],
        op: route.op,
        params: () => restParams(route, x.query, body, version),
        size: { bytes: x.bodyBytes, files: 'base64' },
        origin: { protocol: x.protocol, headers: x.req.headers },
        abort,
        log: x.log,
      });
      // A null result (v0.3's push-config delete, as on JSON-RPC) is no content on REST, like an undefined one.
      if (outcome.kind === 'stream') await this.stream(x, dialect, outcome, abort);
      else if (outcome.result === undefined || outcome.result === null) x.empty(204);
      else x.send(200, contentType(dialect), JSON.stringify(outcome.result));
    } catch (err) {
      this.refuse(x, err, dialect);
    } finally {
      x.res.off('close', onClose);
    }
  }

  /**
   * §11.7: `data:` frames of StreamResponse objects; a failure after the first frame is an `error` event. The
   * call is released when the response closes (ended, or the client went away).
   */
  private async stream(
    x: HttpExchange,
    dialect: WireDialect,
    outcome: A2aStreamOutcome,
    abort: AbortController,
  ): Promise<void> {
    releaseOnClose(x.res, outcome.release);
    await writeSse(x.res, outcome.items, {
      frame: (item) => {
        const frame = outcome.frame(item);
        return frame && { id: frame.seq, data: frame.result };
      },
      heartbeatMs: this.config.sseHeartbeatMs,
      abort,
      headers: x.headers(),
      onError: (err) => ({
        event: 'error',
        data: toRestError(err, (e) =>
          this.logger.error({ err: safeError(e), request_id: x.id }, 'HTTP+JSON stream failed'),
        ).body,
      }),
    });
  }
}
