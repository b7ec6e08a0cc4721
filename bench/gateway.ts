/**
 * The gateway-overhead table of `npm run bench`: the SDK reference server
 * called directly (`sdk-memory`) against the same server behind Arbiter
 * (`arbiter-proxy`: a remote-backed agent in front of an instance of its own),
 * measured in the same run. Through Arbiter, the CPU of Arbiter's process and
 * of the upstream's are read apart, and summed.
 */
import { median, sp, spread, type Measurement } from './report.js';

export const DIRECT = 'sdk-memory';
export const PROXY = 'arbiter-proxy';

/** Markdown, or undefined when the run did not measure both targets in any scenario. */
export function gatewayTable(all: Measurement[], scenarios: { key: string; label: string }[]): string | undefined {
  const lines = [
    '| scenario | called | req/s | p50 ms | p99 ms | Arbiter CPU µs/req | upstream SDK CPU µs/req | sum µs/req | PostgreSQL µs/req | added µs/req |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  let any = false;
  for (const s of scenarios) {
    const direct = all.filter((m) => m.scenario === s.key && m.target === DIRECT);
    const proxied = all.filter((m) => m.scenario === s.key && m.target === PROXY);
    if (direct.length === 0 || proxied.length === 0) continue;
    any = true;
    const of = (ms: Measurement[], v: (m: Measurement) => number | undefined) => {
      const xs = ms.map(v).filter((x): x is number => x !== undefined && Number.isFinite(x));
      return xs.length ? spread(xs) : undefined;
    };
    const part = (label: string) => (m: Measurement) => m.serverCpuPartsUsPerReq?.[label];
    // Per rep: (Arbiter + upstream) through the gateway − the SDK alone, both in that rep.
    const added = proxied.flatMap((m) => {
      const d = direct.find((x) => x.rep === m.rep);
      return d ? [m.serverCpuUsPerReq - d.serverCpuUsPerReq] : [];
    });
    lines.push(
      `| ${s.label} | SDK directly | ${sp(
        of(direct, (m) => m.perSecond),
        0,
      )} | ${sp(
        of(direct, (m) => m.p50),
        1,
      )} | ` +
        `${sp(
          of(direct, (m) => m.p99),
          1,
        )} | – | ${sp(of(direct, (m) => m.serverCpuUsPerReq))} | ` +
        `${sp(of(direct, (m) => m.serverCpuUsPerReq))} | – | |`,
      `| | through Arbiter | ${sp(
        of(proxied, (m) => m.perSecond),
        0,
      )} | ${sp(
        of(proxied, (m) => m.p50),
        1,
      )} | ` +
        `${sp(
          of(proxied, (m) => m.p99),
          1,
        )} | ${sp(of(proxied, part('arbiter')))} | ${sp(of(proxied, part('upstream')))} | ` +
        `${sp(of(proxied, (m) => m.serverCpuUsPerReq))} | ${sp(of(proxied, (m) => m.dbCpuUsPerReq))} | ` +
        `${added.length ? `+${median(added).toFixed(0)}` : '–'} |`,
    );
  }
  return any ? lines.join('\n') : undefined;
}
