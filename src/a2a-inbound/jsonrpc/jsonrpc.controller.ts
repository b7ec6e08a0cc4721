import { All, Controller, HttpCode, Logger, Param, Post, Req, Res, UseFilters } from '@nestjs/common';
import type { Request, Response } from 'express';
import { CurrentTenant, type TenantPrincipal } from '../../common/auth.decorators.js';
import { FileCarryingBody, JsonTextBody } from '../../common/body-reader.interceptor.js';
import { DomainError, requestIdOf } from '../../common/errors.js';
import { safeError } from '../../common/safe-error.js';
import { requestLog } from '../../common/logging.js';
import { annotateActiveSpan } from '../../tracing/spans.js';
import { detachSse } from '../../common/sse.js';
import { AppConfig } from '../../config/app-config.js';
import { AGENT_ID_PATTERN } from '../../registry/constitution.js';
import { AgentCatalog } from '../../registry/services/agent-catalog.service.js';
import { OpenStreams } from '../../tenants/services/open-streams.service.js';
import { A2aError, type Dialect } from '../../a2a-wire/a2a-errors.js';
import type { WireDialect } from '../../a2a-wire/dialects/dialect.js';
import { V03Dialect } from '../../a2a-wire/dialects/v03.dialect.js';
import { V1Dialect } from '../../a2a-wire/dialects/v1.dialect.js';
import type { A2aStream } from '../handler/a2a-request-handler.js';
import { releaseOnClose } from '../../common/sse.js';
import { AgentCardService } from '../services/agent-card.service.js';
import { negotiateVersion } from '../version.js';
import { checkParamsJson, EnvelopeError, parseEnvelope, type RpcId } from './envelope.js';
import { JsonRpcBinding } from './jsonrpc-binding.js';
import { toJsonRpcError, type JsonRpcErrorObject } from './jsonrpc-errors.js';
import { JsonRpcGuardErrors } from './jsonrpc-guard-errors.filter.js';
import { ApiBody, ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

const V1 = new V1Dialect();
const V03 = new V03Dialect();

/** The dialect a method name belongs to: a v0.3 name is served in v0.3 shapes under any accepted version. */
function dialectOf(method: string): WireDialect | undefined {
  if (Object.hasOwn(V03.methods, method)) return V03;
  if (Object.hasOwn(V1.methods, method)) return V1;
  return undefined;
}

/**
 * `POST /v1/a2a/agents/:id`: JSON-RPC 2.0 (spec §9). Reads the version,
 * the envelope and the method's dialect, hands the call to the binding, and
 * writes the reply or the SSE stream. Every JSON-RPC error is HTTP 200.
 *
 * Versions (§3.6.2): `A2A-Version: 1.0` serves v1.0 methods, and v0.3 method
 * names too (the seeds' clients send them under 1.0); an absent, empty or
 * `0.3` version serves v0.3 methods only.
 */
@UseFilters(JsonRpcGuardErrors)
@ApiTags('A2A JSON-RPC')
@Controller('v1/a2a/agents')
export class JsonRpcController {
  private readonly logger = new Logger('A2A');

  constructor(
    private readonly binding: JsonRpcBinding,
    private readonly catalog: AgentCatalog,
    private readonly streams: OpenStreams,
    private readonly config: AppConfig,
    private readonly cards: AgentCardService,
  ) {}

  @ApiOperation({
    summary:
      'A2A JSON-RPC 2.0 endpoint of the agent (v1.0 with A2A-Version: 1.0, else v0.3); streaming methods answer SSE',
  })
  @ApiBody({ schema: { $ref: '#/components/schemas/JsonRpcRequest' } })
  @ApiOkResponse({ schema: { $ref: '#/components/schemas/JsonRpcResponse' } })
  @Post(':id')
  @HttpCode(200)
  @JsonTextBody()
  @FileCarryingBody()
  async rpc(
    @CurrentTenant() t: TenantPrincipal,
    @Param('id') agentId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (!AGENT_ID_PATTERN.test(agentId)) throw DomainError.notFound(`agent '${agentId.slice(0, 64)}'`);
    const negotiated = negotiateVersion(req.headers['a2a-version'], req.query['A2A-Version']);
    if (typeof negotiated === 'object') {
      // Before any envelope parsing, so the id is null (seed 002).
      const err = new A2aError(
        'version_not_supported',
        `A2A-Version '${negotiated.unsupported}' is not supported; supported: 1.0, 0.3`,
        undefined,
        { requestedVersion: negotiated.unsupported, supportedVersions: '1.0,0.3' },
      );
      this.reply(res, null, this.error(err, '1.0', req));
      return;
    }
    let dialect: WireDialect = negotiated === '1.0' ? V1 : V03;
    let id: RpcId = null;
    const line = requestLog(res);
    line.tenant_id = t.tenantId;
    line.agent_id = agentId;
    const abort = new AbortController();
    const release = this.streams.hold(t, abort);
    let detached = false;
    res.on('close', () => abort.abort(new Error('client disconnected')));
    try {
      const envelope = parseEnvelope(typeof req.body === 'string' ? req.body : '');
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
      const agent = await this.catalog.resolve(t.tenantId, agentId);
      if (!agent) throw DomainError.notFound(`agent '${agentId}'`);
      const outcome = await this.binding.invoke(dialect, call, {
        principal: t,
        agent,
        signal: abort.signal,
        baseUrl: this.cards.baseUrl(req),
      });
      if (outcome.kind === 'result') {
        line.task_id = taskIdOf(outcome.result);
        if (typeof line.task_id === 'string') annotateActiveSpan({ 'a2a.task_id': line.task_id });
        this.reply(res, id, undefined, outcome.result);
      } else {
        line.task_id = outcome.stream.task.id;
        annotateActiveSpan({ 'a2a.task_id': outcome.stream.task.id });
        releaseOnClose(res, outcome.stream.release);
        this.stream(req, res, id, dialect, outcome.stream, abort, release);
        detached = true;
      }
    } catch (err) {
      if (err instanceof EnvelopeError) this.reply(res, err.id, this.error(err.error, dialect.version, req));
      else if (res.destroyed || res.writableEnded)
        return; // the client went away: nobody to answer
      else if (!res.headersSent) {
        if (err instanceof DomainError && err.retryAfterSeconds)
          res.setHeader('Retry-After', String(err.retryAfterSeconds));
        this.reply(res, id, this.error(err, dialect.version, req));
      }
    } finally {
      if (!detached) release();
    }
  }

  /** Any other HTTP method on the endpoint. */
  @ApiExcludeEndpoint()
  @All(':id')
  wrongMethod(@Res() res: Response): void {
    res.setHeader('Allow', 'POST');
    res.status(405).json({ error: 'use POST for JSON-RPC requests', code: 'method_not_allowed' });
  }

  /** Streams the items as SSE frames; returns at once, and calls `done` when the stream ends (see `detachSse`). */
  private stream(
    req: Request,
    res: Response,
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
      res,
      frames(),
      {
        heartbeatMs: this.config.sseHeartbeatMs,
        abort,
        onError: (err) => ({
          event: 'message',
          data: { jsonrpc: '2.0', id, error: this.error(err, dialect.version, req) },
        }),
      },
      done,
    );
  }

  private error(err: unknown, dialect: Dialect, req: Request): JsonRpcErrorObject {
    return toJsonRpcError(err, dialect, (e) =>
      this.logger.error({ err: safeError(e), request_id: requestIdOf(req) }, 'JSON-RPC request failed'),
    );
  }

  private reply(res: Response, id: RpcId, error?: JsonRpcErrorObject, result?: unknown): void {
    if (res.headersSent || res.writableEnded) return;
    if (error) requestLog(res).rpc_error = error.code;
    res.status(200).json(error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result: result ?? null });
  }
}

/** The task a result is about, for the request log: a task (v0.3), `{ task }` (1.0), or a message with its taskId. */
function taskIdOf(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as { id?: unknown; kind?: unknown; taskId?: unknown; task?: { id?: unknown } };
  const id = r.task?.id ?? r.taskId ?? (r.kind === 'task' || 'contextId' in r ? r.id : undefined);
  return typeof id === 'string' ? id : undefined;
}
