import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkAgainst,
  exhausted,
  exhaustedMessage,
  NO_LIMITS,
  parseLimits,
  periods,
  ratios,
  SPEND_KEYS,
  type PeriodSpend,
} from '../../src/budgets/budget-limits.js';

const spend = (
  dayTokens: number,
  monthTokens: number,
  dayCost = 0,
  monthCost = 0,
  requests: [number, number] = [0, 0],
): PeriodSpend => ({
  day: { tokens: dayTokens, cost: dayCost, requests: requests[0] },
  month: { tokens: monthTokens, cost: monthCost, requests: requests[1] },
});

describe('budgets: limits, periods and checks', () => {
  it('periods are the UTC calendar day and month, from their start to the next one', () => {
    const p = periods(Date.parse('2026-11-30T23:59:59.999Z'));
    assert.equal(p.day.from.toISOString(), '2026-11-30T00:00:00.000Z');
    assert.equal(p.day.resetsAt.toISOString(), '2026-12-01T00:00:00.000Z');
    assert.equal(p.month.from.toISOString(), '2026-11-01T00:00:00.000Z');
    assert.equal(p.month.resetsAt.toISOString(), '2026-12-01T00:00:00.000Z');
    const dec = periods(Date.parse('2026-12-31T12:00:00Z'));
    assert.equal(dec.month.resetsAt.toISOString(), '2027-01-01T00:00:00.000Z');
    const leap = periods(Date.parse('2028-02-28T10:00:00Z'));
    assert.equal(leap.day.resetsAt.toISOString(), '2028-02-29T00:00:00.000Z');
  });

  it('a budget is exhausted at its limit, not before; the first exhausted one is named', () => {
    const limits = { ...NO_LIMITS, tokens_per_day: 1000, cost_per_month: 2 };
    assert.equal(exhausted(limits, spend(999, 5000, 0, 1.99)), undefined);
    assert.deepEqual(exhausted(limits, spend(1000, 5000)), { key: 'tokens_per_day', used: 1000, limit: 1000 });
    assert.deepEqual(exhausted(limits, spend(10, 10, 0, 2.5)), { key: 'cost_per_month', used: 2.5, limit: 2 });
    assert.equal(exhausted(NO_LIMITS, spend(1e12, 1e12, 1e9, 1e9)), undefined);
    assert.equal(
      exhaustedMessage('agent research', { key: 'tokens_per_month', used: 1200, limit: 1000 }),
      'budget exhausted for agent research (tokens this month: 1200 of 1000)',
    );
    assert.equal(
      exhaustedMessage('tenant team-a', { key: 'cost_per_day', used: 0.1234567, limit: 0.1 }),
      'budget exhausted for tenant team-a (cost today: 0.123457 of 0.1)',
    );
    assert.deepEqual(
      ratios(limits, spend(800, 0, 0, 1)).map((r) => [r.key, r.ratio]),
      [
        ['tokens_per_day', 0.8],
        ['cost_per_month', 0.5],
      ],
    );
  });

  it('parses limits: whole tokens 1…10¹², costs 0.000001…10⁹ with prices only, null clears, unknown keys refused', () => {
    const ok = parseLimits(
      { tokens_per_day: 5, cost_per_month: 1.23456789, tokens_per_month: null },
      { pricesConfigured: true },
    );
    assert.deepEqual(ok.errors, []);
    assert.deepEqual(ok.limits, { tokens_per_day: 5, cost_per_month: 1.234568, tokens_per_month: null });
    const fields = (body: unknown, prices = true): string[] =>
      parseLimits(body, { pricesConfigured: prices }).errors.map((e) => e.field);
    assert.deepEqual(fields({ tokens_per_day: 0 }), ['tokens_per_day']);
    assert.deepEqual(fields({ tokens_per_day: -1 }), ['tokens_per_day']);
    assert.deepEqual(fields({ tokens_per_day: 2.5 }), ['tokens_per_day']);
    assert.deepEqual(fields({ tokens_per_month: 1e12 + 1 }), ['tokens_per_month']);
    assert.deepEqual(fields({ tokens_per_month: '100' }), ['tokens_per_month']);
    assert.deepEqual(fields({ cost_per_day: 0 }), ['cost_per_day']);
    assert.deepEqual(fields({ cost_per_day: Infinity }), ['cost_per_day']);
    assert.deepEqual(fields({ cost_per_day: 1e9 + 1 }), ['cost_per_day']);
    assert.deepEqual(fields({ cost_per_day: 1 }, false), ['cost_per_day']);
    assert.deepEqual(fields({ tokens_per_hour: 1 }), ['tokens_per_hour']);
    assert.deepEqual(fields('not an object'), ['body']);
    assert.deepEqual(fields({ sends_per_minute: 5 }), ['sends_per_minute']);
    assert.deepEqual(
      parseLimits({ sends_per_minute: 5 }, { pricesConfigured: true, otherKeys: ['sends_per_minute'] }).errors,
      [],
    );
  });

  it('request budgets: whole numbers 1…10⁹ without prices, exhausted at their count, named in messages', () => {
    const ok = parseLimits({ requests_per_day: 2, requests_per_month: 1e9 }, { pricesConfigured: false });
    assert.deepEqual(ok.errors, []);
    assert.deepEqual(ok.limits, { requests_per_day: 2, requests_per_month: 1e9 });
    const problems = (body: unknown): [string, string][] =>
      parseLimits(body, { pricesConfigured: true }).errors.map((e) => [e.field, e.messages[0]]);
    for (const bad of [0, -1, 1.5, 1e9 + 1, '2', true, {}]) {
      assert.deepEqual(
        problems({ requests_per_day: bad }),
        [['requests_per_day', 'requests_per_day must be null (none) or a whole number from 1 to 10^9']],
        JSON.stringify(bad),
      );
    }
    assert.deepEqual(parseLimits({ requests_per_month: null }, { pricesConfigured: false }).limits, {
      requests_per_month: null,
    });
    const limits = { ...NO_LIMITS, requests_per_day: 2 };
    assert.equal(exhausted(limits, spend(1e6, 1e6, 0, 0, [1, 1])), undefined);
    const hit = exhausted(limits, spend(0, 0, 0, 0, [2, 2]));
    assert.deepEqual(hit, { key: 'requests_per_day', used: 2, limit: 2 });
    // Between a run's model calls only token and cost budgets apply: its message was counted when it was taken.
    assert.equal(exhausted(limits, spend(0, 0, 0, 0, [2, 2]), SPEND_KEYS), undefined);
    assert.equal(exhaustedMessage('agent front', hit), 'budget exhausted for agent front (requests today: 2 of 2)');
    assert.deepEqual(
      checkAgainst({ requests_per_month: 3 }, spend(0, 0, 0, 0, [1, 4])).map((e) => [e.field, e.messages[0]]),
      [['requests_per_month', 'requests_per_month must not be below what was already spent this month (4)']],
    );
    assert.deepEqual(
      checkAgainst({ requests_per_day: 20 }, spend(0, 0), { ...NO_LIMITS, requests_per_day: 10 }).map((e) => e.field),
      ['requests_per_day'],
    );
  });

  it('refuses a budget below what was spent in its period, and an agent budget above its tenant’s', () => {
    const errs = checkAgainst({ tokens_per_day: 100, tokens_per_month: 5000 }, spend(150, 4000));
    assert.deepEqual(
      errs.map((e) => [e.field, e.messages[0]]),
      [['tokens_per_day', 'tokens_per_day must not be below what was already spent today (150)']],
    );
    const above = checkAgainst({ cost_per_month: 20 }, spend(0, 0), { ...NO_LIMITS, cost_per_month: 10 });
    assert.deepEqual(
      above.map((e) => e.field),
      ['cost_per_month'],
    );
    assert.match(above[0].messages[0], /must not exceed the tenant's own cost_per_month \(10\)/);
    // Equal to the tenant's, or the tenant has none of that key: fine.
    assert.deepEqual(
      checkAgainst({ cost_per_month: 10, tokens_per_day: 7 }, spend(0, 0), { ...NO_LIMITS, cost_per_month: 10 }),
      [],
    );
  });
});
