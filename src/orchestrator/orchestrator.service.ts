import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { echoTurn } from './providers/echo.model.js';
import type { Orchestrator, RunContext, RunEvent, RunInput } from './run-event.js';

/**
 * Runs an agent turn. Until real model providers land, every agent runs on
 * the offline `echo` model — a placeholder that streams the input back.
 */
@Injectable()
export class OrchestratorService implements Orchestrator, OnModuleInit {
  private readonly logger = new Logger('Orchestrator');

  constructor(private readonly config: AppConfig) {}

  onModuleInit(): void {
    this.logger.warn(
      'no model provider is configured: agents answer with the offline "echo" model, a placeholder that repeats the input',
    );
  }

  async *run(ctx: RunContext, inputs: AsyncIterable<RunInput>, signal: AbortSignal): AsyncGenerator<RunEvent> {
    const it = inputs[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) {
      yield { type: 'error', code: 'no_input', message: 'the run received no input' };
      return;
    }
    yield* echoTurn(it, first.value, signal, {
      chunks: this.config.echoChunks,
      delayMs: this.config.echoDelayMs,
    });
    void ctx;
  }
}
