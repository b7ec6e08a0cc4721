import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { TalliedCounter } from '../../src/metrics/tally.js';

describe('counters summed between scrapes (TalliedCounter)', () => {
  it('a scrape shows every series with its whole count, and scraping again adds nothing', async () => {
    const registry = new Registry();
    const calls = new TalliedCounter({
      name: 'calls_total',
      help: 'calls',
      labelNames: ['method', 'error'],
      registers: [registry],
    });
    calls.inc({ method: 'send', error: '' });
    calls.inc({ method: 'send', error: '' });
    calls.inc({ method: 'send', error: '-32001' });
    calls.inc({ method: 'get', error: '' }, 5);
    const first = await registry.getMetricsAsJSON();
    const values = (json: typeof first) =>
      json[0].values.map((v) => `${String(v.labels.method)}/${String(v.labels.error)}=${v.value}`).sort();
    assert.deepEqual(values(first), ['get/=5', 'send/-32001=1', 'send/=2']);
    assert.deepEqual(values(await registry.getMetricsAsJSON()), ['get/=5', 'send/-32001=1', 'send/=2']);
    calls.inc({ method: 'send', error: '' });
    assert.match(await registry.metrics(), /calls_total\{method="send",error=""\} 3/);
  });

  it('the labels a series keeps are a copy: the caller may reuse its object', async () => {
    const registry = new Registry();
    const ended = new TalliedCounter({
      name: 'ended_total',
      help: 'ended',
      labelNames: ['state'],
      registers: [registry],
    });
    const labels = { state: 'completed' };
    ended.inc(labels);
    labels.state = 'failed';
    ended.inc(labels);
    const text = await registry.metrics();
    assert.match(text, /ended_total\{state="completed"\} 1/);
    assert.match(text, /ended_total\{state="failed"\} 1/);
  });

  it('a bad count or an unknown label is refused at the call, and scrapes go on', async () => {
    const registry = new Registry();
    const calls = new TalliedCounter({ name: 'c_total', help: 'c', labelNames: ['method'], registers: [registry] });
    calls.inc({ method: 'send' });
    assert.throws(() => calls.inc({ method: 'send' }, -1), TypeError);
    assert.throws(() => calls.inc({ method: 'send' }, Number.NaN), TypeError);
    assert.throws(() => calls.inc({ method: 'get', other: 'x' } as unknown as { method: string }), /other/);
    assert.match(await registry.metrics(), /c_total\{method="send"\} 1/);
  });

  it("the registry's reset clears the sums not yet handed over too", async () => {
    const registry = new Registry();
    const calls = new TalliedCounter({ name: 'r_total', help: 'r', labelNames: ['method'], registers: [registry] });
    calls.inc({ method: 'send' }, 3);
    registry.resetMetrics();
    calls.inc({ method: 'send' });
    assert.match(await registry.metrics(), /r_total\{method="send"\} 1/);
  });
});
