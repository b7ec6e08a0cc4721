import { ApiOkResponse, type SchemaObject } from '@nestjs/swagger';
import type { Response } from 'express';
import { usageCsv } from './usage-csv.js';
import type { UsageReport } from './usage-reports.service.js';

const SUMS_SCHEMA: Record<string, SchemaObject> = {
  calls: { type: 'integer' },
  input_tokens: { type: 'integer', description: 'all input tokens, cached ones included' },
  output_tokens: { type: 'integer' },
  cached_tokens: { type: 'integer', description: 'input tokens read from the provider’s prompt cache' },
  unpriced_calls: { type: 'integer', description: 'calls of a model no configured price covered (cost 0)' },
  cost: {
    type: 'object',
    properties: { amount: { type: 'number' }, currency: { type: ['string', 'null'] } },
    required: ['amount', 'currency'],
  },
};

/** The report as OpenAPI describes it: JSON, or CSV with `format=csv`. */
export const DocUsageReport = (): MethodDecorator =>
  ApiOkResponse({
    description: 'usage over the period: totals, and a row per group (`group_by`)',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: {
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            group_by: { type: 'array', items: { type: 'string' } },
            totals: { type: 'object', properties: SUMS_SCHEMA },
            rows: {
              type: 'array',
              items: {
                type: 'object',
                description: 'the group keys asked for (agent, model, provider, tenant, day, hour), then the sums',
                properties: {
                  agent: { type: 'string' },
                  model: { type: 'string' },
                  provider: { type: 'string' },
                  tenant: { type: 'string' },
                  tenant_name: { type: 'string' },
                  day: { type: 'string', format: 'date' },
                  hour: { type: 'string', format: 'date-time' },
                  ...SUMS_SCHEMA,
                },
              },
            },
          },
          required: ['from', 'to', 'group_by', 'totals', 'rows'],
        },
      },
      'text/csv': { schema: { type: 'string', description: 'a header row, then a line per row' } },
    },
  });

/** Answers a report as JSON, or as CSV (`text/csv`, a header row) when asked. */
export function answerReport(res: Response, report: UsageReport, format: 'json' | 'csv' | undefined): unknown {
  if (format !== 'csv') return report;
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', 'inline; filename="usage.csv"');
  return usageCsv(report);
}
