import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sendCpuRatios, sendCpuRatioTable, type Measurement } from '../../bench/report.js';

const m = (target: string, scenario: string, rep: number, cpu: number, db?: number): Measurement => ({
  rep,
  scenario,
  target,
  position: 0,
  ops: 1000,
  errors: 0,
  seconds: 5,
  perSecond: 200,
  p50: 1,
  p99: 2,
  serverCpuUsPerReq: cpu,
  ...(db === undefined ? {} : { dbCpuUsPerReq: db }),
  clientCpuUsPerReq: 50,
});

describe("the bench's CPU of a send at c=1 against c=16", () => {
  it('pairs the two scenarios of the same rep and gives the median of the per-rep ratios', () => {
    const all = [
      // Rep 2's c=1 window is slow; pairing it with rep 1's c=16 would give 5.0, not 2.5.
      m('bare-pg', 'send-1', 1, 120, 100),
      m('bare-pg', 'send-16', 1, 60, 50),
      m('bare-pg', 'send-1', 2, 300, 100),
      m('bare-pg', 'send-16', 2, 120, 50),
      m('bare-pg', 'send-1', 3, 105, 100),
      m('bare-pg', 'send-16', 3, 70, 100),
      m('bare', 'send-1', 1, 60),
      m('bare', 'send-16', 1, 30),
      m('bare', 'stream-16', 1, 10),
      // Only c=1: no ratio.
      m('sdk-memory', 'send-1', 1, 400),
      // A window that completed nothing counts no ratio.
      m('sdk-db', 'send-1', 1, NaN),
      m('sdk-db', 'send-16', 1, 1000),
    ];
    const ratios = sendCpuRatios(all, ['bare', 'bare-pg', 'sdk-memory', 'sdk-db']);
    assert.deepEqual(
      ratios.map((r) => r.target),
      ['bare', 'bare-pg'],
    );
    const [bare, durable] = ratios;
    assert.deepEqual(bare.server, { median: 2, min: 2, max: 2 });
    assert.equal(bare.withDb, undefined);
    assert.deepEqual(durable.server, { median: 2, min: 1.5, max: 2.5 });
    // (cpu + db) at c=1 / at c=16: 220/110, 400/170, 205/170.
    assert.equal(durable.withDb?.median, 2);
    assert.equal(durable.withDb?.min, 205 / 170);
    assert.equal(durable.withDb?.max, 400 / 170);
    const table = sendCpuRatioTable(ratios);
    assert.match(table, /\| bare \| 2\.00 \(2\.00–2\.00\) \| – \|/);
    assert.match(table, /\| bare-pg \| 2\.00 \(1\.50–2\.50\) \| 2\.00 \(1\.21–2\.35\) \|/);
  });
});
