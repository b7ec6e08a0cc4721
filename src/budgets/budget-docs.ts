import { ApiOkResponse, type SchemaObject } from '@nestjs/swagger';

const limit = (description: string): SchemaObject => ({ type: ['number', 'null'], description });

/** The six limits (null: none), as bodies and answers carry them. */
export const LIMITS_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    tokens_per_day: limit('input + output tokens per UTC day, 1 to 10^12'),
    tokens_per_month: limit('input + output tokens per UTC calendar month, 1 to 10^12'),
    cost_per_day: limit('cost per UTC day in the prices file’s currency, 0.000001 to 10^9 (needs prices)'),
    cost_per_month: limit('cost per UTC calendar month, 0.000001 to 10^9 (needs prices)'),
    requests_per_day: limit('messages sent to the agent (new tasks and continuations) per UTC day, 1 to 10^9'),
    requests_per_month: limit('messages sent per UTC calendar month, 1 to 10^9'),
  },
  additionalProperties: false,
};

const PERIOD: SchemaObject = {
  type: 'object',
  properties: {
    tokens: { type: 'integer' },
    cost: { type: 'number' },
    requests: { type: 'integer', description: 'messages sent (new tasks and continuations)' },
    from: { type: 'string', format: 'date-time' },
    resets_at: { type: 'string', format: 'date-time' },
  },
  required: ['tokens', 'cost', 'requests', 'from', 'resets_at'],
};

export const USE_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    limits: LIMITS_SCHEMA,
    used: { type: 'object', properties: { day: PERIOD, month: PERIOD }, required: ['day', 'month'] },
  },
  required: ['limits', 'used'],
};

export const AGENT_USE_SCHEMA: SchemaObject = {
  type: 'object',
  properties: { agent: { type: 'string' }, ...USE_SCHEMA.properties },
  required: ['agent', 'limits', 'used'],
};

export const TENANT_BUDGETS: Record<string, SchemaObject> = {
  tenant: USE_SCHEMA,
  agents: {
    type: 'array',
    description: 'every agent with a budget or usage this month',
    items: AGENT_USE_SCHEMA,
  },
};

export const BUDGETS_HEADER: Record<string, SchemaObject> = {
  currency: { type: ['string', 'null'], description: 'the prices file’s currency; null without prices' },
  warn_at_percent: { type: 'integer', description: 'ARBITER_BUDGET_WARN_PERCENT' },
};

export const DocTenantBudgets = (): MethodDecorator =>
  ApiOkResponse({
    description: 'the tenant’s budgets and what it and its agents used this UTC day and month',
    schema: {
      type: 'object',
      properties: { ...BUDGETS_HEADER, ...TENANT_BUDGETS },
      required: ['currency', 'warn_at_percent', 'tenant', 'agents'],
    },
  });

export const DocAdminBudgets = (): MethodDecorator =>
  ApiOkResponse({
    description:
      'every tenant with a budget (`tenants`), or with `tenant=<id>` that tenant’s budgets as `GET /v1/budgets` answers them, with `tenant_id`',
    schema: {
      type: 'object',
      properties: {
        ...BUDGETS_HEADER,
        tenant_id: { type: 'string', format: 'uuid' },
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
  });
