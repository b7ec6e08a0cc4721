import type { UsageReport } from './usage-reports.service.js';

const cell = (v: string | number | null | undefined): string => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};

/** A report as CSV (RFC 4180): a header row, then one line per row — or one line of totals when ungrouped. */
export function usageCsv(r: UsageReport): string {
  const keys: string[] = [...r.group_by];
  if (r.group_by.includes('tenant')) keys.splice(keys.indexOf('tenant') + 1, 0, 'tenant_name');
  const sums = ['calls', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost', 'currency', 'unpriced_calls'];
  const lines = [[...keys, ...sums].join(',')];
  const rows = r.group_by.length ? r.rows : [r.totals];
  for (const row of rows) {
    const k = row as unknown as Record<string, string | number | undefined>;
    lines.push(
      [
        ...keys.map((key) => cell(k[key])),
        cell(row.calls),
        cell(row.input_tokens),
        cell(row.output_tokens),
        cell(row.cached_tokens),
        cell(row.cost.amount),
        cell(row.cost.currency),
        cell(row.unpriced_calls),
      ].join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}
