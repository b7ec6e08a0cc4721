import { Injectable, Logger } from '@nestjs/common';
import type { TenantPrincipal } from '../../common/auth.decorators.js';
import { DomainError } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { CLIENT_GONE, detachSse, releaseOnClose } from '../../common/sse.js';
import { isDatabaseUnavailable } from '../../common/db-errors.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { annotateActiveSpan } from '../../tracing/spans.js';
import { A2aError, type Dialect } from '../../a2a-wire/a2a-errors.js';
import type { WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { V03Dialect } from '../../a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../a2a-wire/dialects/v1.dialect.js';
import type { A2aStream } from '../handler/a2a-request-handler.js';
import type { HttpExchange } from '../http/exchange.js';
import { checkBesidesFiles } from '../http/body-size.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { negotiateVersion } from '../version.js';
import { checkParamsJson, EnvelopeError, parseEnvelope, type RpcId } from './envelope.js';
import { JsonRpcBinding } from './jsonrpc-binding.js';
import { toJsonRpcError, type JsonRpcErrorObject } from './jsonrpc-errors.js';

const V1 = new V1Dialect();
const V03 = new V03Dialect();
const JSON_TYPE = 'application/json; charset=utf-8';

/** The dialect a method name belongs to: a v0.3 name is served in v0.3 shapes under any accepted version. */
function dialectOf(method: string): WireDialect | undefined {
  if (Object.hasOwn(V03.methods, method)) return V03;
  if (Object.hasOwn(V1.methods, method)) return V1;
  return undefined;
}

/** The dialect of a request refused before its envelope was read: the version it asked for. */
const askedDialect = (header: string | string[] | undefined): Dialect =>
  String(header ?? '')
    .trim()
    .startsWith('1')
    ? '1.0'
    : '0.3';

/**
 * `POST /v1/a2a/agents/:id`: JSON-RPC 2.0 (spec §9), on the A2A HTTP edge
 * (`A2aHttpEdge`: the bearer is accepted and the body read before this
 * runs). Reads the version, the envelope and the method's dialect, hands
 * the call to the binding, and writes the reply or the SSE stream. Every
 * JSON-RPC error is HTTP 200.
 *
 * Versions (§3.6.2): `A2A-Version: 1.0` serves v1.0 methods, and v0.3 method
 * names too (the seeds' clients send them under 1.0); an absent, empty or
 * `0.3` version serves v0.3 methods only.
 */
@Injectable()
export class JsonRpcHttp {
  private readonly logger = new Logger('A2A');

  constructor(
    private readonly binding: JsonRpcBinding,
    private readonly catalog: AgentCatalog,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
    private readonly cards: AgentCardService,
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
    x.refuse(err);
  }

  /** One call: `t` has been authenticated, `body` is the request's text. */
  async serve(x: HttpExchange, t: TenantPrincipal, agentId: string, body: string): Promise<void> {
    if (!AGENT_ID_PATTERN.test(agentId)) {
      x.refuse(DomainError.notFound(`agent '${agentId.slice(0, 64)}'`));
      return;
    }
    const negotiated = negotiateVersion(x.req.headers['a2a-version'], x.query['A2A-Version']);
    if (typeof negotiated === 'object') {
      // Before any envelope parsing, so the id is null (seed 002).
      const err = new A2aError(
        'version_not_supported',
        `A2A-Version '${negotiated.unsupported}' is not supported; supported: 1.0, 0.3`,
        undefined,
        { requestedVersion: negotiated.unsupported, supportedVersions: '1.0,0.3' },
      );
      this.reply(x, null, this.error(x, err, '1.0'));
      return;
    }
    let dialect: WireDialect = negotiated === '1.0' ? V1 : V03;
    let id: RpcId = null;
    const line = x.log;
    line.tenant_id = t.tenantId;
    line.agent_id = agentId;
    const abort = new AbortController();
    const release = this.streams.hold(t, abort);
    let detached = false;
    const { res } = x;
    const onClose = (): void => abort.abort(CLIENT_GONE);
    res.once('close', onClose);
    try {
      const envelope = parseEnvelope(body, x.bodyScan);
      id = envelope.id;
      const methodDialect = dialectOf(envelope.method);
      if (!methodDialect) throw new A2aError('method_not_found', `method '${envelope.method.slice(0, 64)}' not found`);
      if (methodDialect === V1 && negotiated === '0.3') {
        // §3.6.2: an absent or empty A2A-Version is 0.3, whose methods have other names.
        throw new A2aError(
          'method_not_found',
          `method '${envelope.method}' is an A2A 1.0 method; send the header A2A-Version: 1.0 ` +
            `(a request without A2A-Version is served as A2A 0.3, spec §3.6.2)`,
        );
      }
      dialect = methodDialect;
      line.a2a_method = envelope.method;
      line.dialect = dialect.version;
      annotateActiveSpan({
        'a2a.method': envelope.method,
        'a2a.dialect': dialect.version,
        'arbiter.agent_id': agentId,
      });
      checkParamsJson(envelope.params);
      const call = dialect.parse(dialect.methods[envelope.method], envelope.params);
      checkBesidesFiles(x.bodyBytes, call, this.config);
      const agent = await this.catalog.resolve(t.tenantId, agentId);
      if (!agent) throw DomainError.notFound(`agent '${agentId}'`);
      const outcome = await this.binding.invoke(dialect, call, {
        principal: t,
        agent,
        signal: abort.signal,
        baseUrl: this.cards.baseUrl({ protocol: x.protocol, headers: x.req.headers }),
      });
      if (outcome.kind === 'result') {
        line.task_id = taskIdOf(outcome.result);
        if (typeof line.task_id === 'string') annotateActiveSpan({ 'a2a.task_id': line.task_id });
        this.reply(x, id, undefined, outcome.result);
      } else {
        line.task_id = outcome.stream.task.id;
        annotateActiveSpan({ 'a2a.task_id': outcome.stream.task.id });
        releaseOnClose(res, outcome.stream.release);
        this.stream(x, id, dialect, outcome.stream, abort, release);
        detached = true;
      }
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
      if (!detached) {
        res.off('close', onClose);
        release();
      }
    }
  }

  /** Streams the items as SSE frames; returns at once, and calls `done` when the stream ends (see `detachSse`). */
  private stream(
    x: HttpExchange,
    id: RpcId,
    dialect: WireDialect,
    stream: A2aStream,
    abort: AbortController,
    done: () => void,
  ): void {
    async function* frames() {
      for await (const item of stream.items) {
        const frame = dialect.streamItem(item, stream.task);
        if (frame === undefined) continue;
        const seq = item.type === 'task' ? item.task.lastSeq : item.event.seq;
        yield { id: seq, event: 'message', data: { jsonrpc: '2.0', id, result: frame } };
      }
    }
    detachSse(
      x.res,
      frames(),
      {
        heartbeatMs: this.config.sseHeartbeatMs,
        abort,
        headers: x.headers(),
        onError: (err) => ({
          event: 'message',
          data: { jsonrpc: '2.0', id, error: this.error(x, err, dialect.version) },
        }),
      },
      done,
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

/** The task a result is about, for the request log: a task (v0.3), `{ task }` (1.0), or a message with its taskId. */
function taskIdOf(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as { id?: unknown; kind?: unknown; taskId?: unknown; task?: { id?: unknown } };
  const id = r.task?.id ?? r.taskId ?? (r.kind === 'task' || 'contextId' in r ? r.id : undefined);
  return typeof id === 'string' ? id : undefined;
}
