import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { ModelRouter } from './providers/model-router.service.js';
import { echoTurn } from './providers/echo.model.js';
import { ProviderError, type ChatMessage } from './providers/provider.js';
import type { Orchestrator, RunContext, RunEvent, RunInput } from './run-event.js';
import { systemPrompt } from './system-prompt.js';
import { AgentCatalog } from '../registry/services/agent-catalog.service.js';
import { MASTER_AGENT_ID } from '../registry/constitution.js';

/**
 * Runs an agent turn on the agent's model: a real provider (Anthropic, or
 * any OpenAI-compatible server) or the offline `echo` placeholder. The
 * model's text is forwarded as it streams. (Slash-command tools and
 * delegation are the next step of the orchestrator; see the README.)
 */
@Injectable()
export class OrchestratorService implements Orchestrator, OnModuleInit {
  private readonly logger = new Logger('Orchestrator');

  constructor(
    private readonly config: AppConfig,
    private readonly router: ModelRouter,
    private readonly catalog: AgentCatalog,
  ) {}

  onModuleInit(): void {
    const real = this.router.configured().filter((p) => p !== 'echo' && p !== 'ollama');
    if (this.config.defaultModel === 'echo') {
      this.logger.warn(
        `the default model is the offline "echo" placeholder, which repeats the input; ` +
          `set ARBITER_DEFAULT_MODEL (configured providers: ${real.length ? real.join(', ') : 'none'}; ollama/<model> needs none)`,
      );
    }
  }

  async *run(ctx: RunContext, inputs: AsyncIterable<RunInput>, signal: AbortSignal): AsyncGenerator<RunEvent> {
    const it = inputs[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) {
      yield { type: 'error', code: 'no_input', message: 'the run received no input' };
      return;
    }
    const c = ctx.agent.constitution;
    let target;
    try {
      target = this.router.resolve(c.model);
    } catch (err) {
      const e = err instanceof ProviderError ? err : new ProviderError('model_unavailable', 'model unavailable');
      yield { type: 'error', code: e.code, message: e.message };
      return;
    }
    if (target.kind === 'echo') {
      yield* echoTurn(it, first.value, signal, { chunks: this.config.echoChunks, delayMs: this.config.echoDelayMs });
      return;
    }
    // Earlier turns of this task (a continuation after input-required), then the new message.
    const messages: ChatMessage[] = [
      ...(ctx.history ?? []).filter((m) => m.content.length > 0),
      { role: 'user', content: first.value.text },
    ];
    let system = systemPrompt(c);
    if (ctx.agent.id === MASTER_AGENT_ID) {
      // The master agent sees the tenant's catalogue.
      const roster = await this.catalog.roster(ctx.tenantId);
      if (roster) system += `\n\n${roster}`;
    }
    let content = '';
    let usage = { inputTokens: 0, outputTokens: 0 };
    try {
      for await (const ev of this.router.stream(
        target.provider,
        { model: target.model, system, messages, maxTokens: c.max_tokens, temperature: c.temperature },
        signal,
      )) {
        if (ev.type === 'text') {
          content += ev.delta;
          yield { type: 'text', delta: ev.delta };
        } else if (ev.type === 'usage') {
          usage = { inputTokens: ev.inputTokens, outputTokens: ev.outputTokens };
        }
      }
    } catch (err) {
      signal.throwIfAborted();
      const e = err instanceof ProviderError ? err : new ProviderError('provider_error', 'the model call failed');
      this.logger.warn({ code: e.code, provider: target.provider.name, taskId: ctx.taskId }, e.message);
      yield { type: 'error', code: e.code, message: e.message };
      return;
    }
    yield { type: 'usage', ...usage };
    yield { type: 'done', content };
  }
}
