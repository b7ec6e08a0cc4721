import { IsIn, IsOptional, IsUUID } from 'class-validator';
import { ApiOkResponse, type SchemaObject } from '@nestjs/swagger';
import { BUDGETS_HEADER, TENANT_BUDGETS } from '../budgets/budget-docs.js';
import { WINDOW_NAMES, type WindowName } from './stats-windows.js';

const WINDOW_MESSAGE = `window must be one of ${WINDOW_NAMES.join(', ')}`;

/** `GET /v1/stats`: the caller's tenant's figures over a window. */
export class StatsQueryDto {
  /** The window, ending now: 15m, 1h (default), 6h, 24h, 7d or 30d. */
  @IsOptional()
  @IsIn(WINDOW_NAMES, { message: WINDOW_MESSAGE })
  window?: WindowName;
}

/** `GET /v1/admin/stats`: every tenant's figures (or one's) over a window. */
export class AdminStatsQueryDto {
  /** The window, ending now: 15m, 1h (default), 6h, 24h, 7d or 30d. */
  @IsOptional()
  @IsIn(WINDOW_NAMES, { message: WINDOW_MESSAGE })
  window?: WindowName;

  /** Only this tenant's figures (its id). */
  @IsOptional()
  @IsUUID('all', { message: 'tenant must be a tenant id (a UUID)' })
  tenant?: string;
}

const LATENCY: SchemaObject = {
  type: 'object',
  description: 'seconds; null when no run fell in',
  properties: { p50: { type: ['number', 'null'] }, p95: { type: ['number', 'null'] } },
};
const COUNTS: Record<string, SchemaObject> = {
  started: { type: 'integer', description: 'tasks created' },
  completed: { type: 'integer' },
  failed: { type: 'integer', description: 'failed or rejected' },
  canceled: { type: 'integer' },
  input_required: { type: 'integer', description: 'entering input-required (or auth-required)' },
  first_event: LATENCY,
  duration: LATENCY,
};
const ERRORS: SchemaObject = {
  type: 'array',
  items: {
    type: 'object',
    properties: { binding: { type: 'string' }, code: { type: 'string' }, count: { type: 'integer' } },
  },
};
const SLICES: SchemaObject = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      key: { type: 'string' },
      calls: { type: 'integer' },
      input_tokens: { type: 'integer' },
      output_tokens: { type: 'integer' },
      cost: { type: 'number' },
    },
  },
};

/** The stats answer as OpenAPI describes it. */
export const DocStats = (): MethodDecorator =>
  ApiOkResponse({
    description:
      'task outcomes, run times and A2A errors per interval and over the window; usage by agent and model; budget use',
    schema: {
      type: 'object',
      properties: {
        window: { type: 'string' },
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
        interval_seconds: { type: 'integer' },
        tenant_id: { type: ['string', 'null'] },
        intervals: {
          type: 'array',
          items: {
            type: 'object',
            properties: { start: { type: 'string', format: 'date-time' }, ...COUNTS, a2a_errors: ERRORS },
          },
        },
        totals: { type: 'object', properties: { ...COUNTS, a2a_errors: { type: 'integer' } } },
        a2a_errors: ERRORS,
        usage: {
          type: 'object',
          properties: {
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            currency: { type: ['string', 'null'] },
            by_agent: SLICES,
            by_model: SLICES,
          },
        },
        budgets: {
          type: 'object',
          description:
            'budget use this UTC day and month as the budgets routes answer it: one tenant’s (`tenant`, `agents`, as `GET /v1/budgets`), or across tenants every tenant with a budget (`tenants`, as `GET /v1/admin/budgets`)',
          properties: {
            ...BUDGETS_HEADER,
            ...TENANT_BUDGETS,
            tenants: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  tenant_id: { type: 'string', format: 'uuid' },
                  tenant_name: { type: 'string' },
                  ...TENANT_BUDGETS,
                },
              },
            },
          },
          required: ['currency', 'warn_at_percent'],
        },
      },
      required: ['window', 'from', 'to', 'interval_seconds', 'intervals', 'totals', 'a2a_errors', 'usage', 'budgets'],
    },
  });
