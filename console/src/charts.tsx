import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Series colours: distinct, and at 3:1 or more against white (WCAG's contrast for graphics). */
export const COLORS = ['#1a56db', '#047857', '#b91c1c', '#6b7280', '#b45309', '#7c3aed', '#0e7490', '#be185d'];

export interface Series {
  label: string;
  values: (number | null)[];
}

/** A chart's card: its title, a text summary (what a screen reader hears), the chart, and its data as a table. */
export function ChartCard(props: {
  title: string;
  summary: string;
  columns: string[];
  rows: (string | number)[][];
  children: ComponentChildren;
  testid: string;
}) {
  const [table, setTable] = useState(false);
  const id = useId();
  return (
    <section class="chart-card" aria-labelledby={`${id}-t`} data-testid={props.testid}>
      <div class="chart-head">
        <h2 id={`${id}-t`}>{props.title}</h2>
        <button
          type="button"
          class="small"
          aria-expanded={table}
          aria-controls={`${id}-d`}
          onClick={() => setTable((t) => !t)}
        >
          {table ? 'Show chart' : 'Show table'}
        </button>
      </div>
      <p class="chart-summary" data-testid="summary">
        {props.summary}
      </p>
      <div id={`${id}-d`}>
        {table ? (
          <div class="chart-table">
            <table>
              <caption class="sr-only">{props.title}</caption>
              <thead>
                <tr>
                  {props.columns.map((c) => (
                    <th scope="col" key={c}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {props.rows.map((r, i) => (
                  <tr key={i}>{r.map((v, k) => (k === 0 ? <th scope="row">{v}</th> : <td class="num">{v}</td>))}</tr>
                ))}
              </tbody>
            </table>
            {props.rows.length === 0 && <p class="muted">No data in this window.</p>}
          </div>
        ) : (
          props.children
        )}
      </div>
    </section>
  );
}

/**
 * A time chart (uPlot, drawn on a canvas): `x` in seconds since the epoch, one line per series. Sized to its
 * container and redrawn on new data without being rebuilt; hidden from screen readers (the card's summary and
 * table say what it shows).
 */
export function TimeChart(props: {
  x: number[];
  series: Series[];
  /** How a value is shown (axis, legend); default: the number. */
  format?: (v: number) => string;
  /** Counts: whole-number ticks only. */
  integer?: boolean;
  height?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = props.series.map((s) => s.label).join('\n');
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const fmt = (v: number | null): string => (v === null ? '—' : (props.format ?? round)(v));
    const opts: uPlot.Options = {
      width: Math.max(el.clientWidth, 200),
      height: props.height ?? 150,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [
        {},
        {
          values: (_u, ticks) => ticks.map((t) => fmt(t)),
          size: 64,
          ...(props.integer ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000] } : {}),
        },
      ],
      series: [
        {},
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          value: (_u: uPlot, v: number | null) => fmt(v),
          // Sparse series (run times, errors) have lone points: draw every point, not only lines between them.
          points: { show: !props.integer, size: 5 },
          spanGaps: false,
        })),
      ],
    };
    const u = new uPlot(opts, [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 200), height: u.height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, props.integer]);
  useEffect(() => {
    plot.current?.setData([props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData);
  }, [props.x, props.series]);
  return <div class="chart" ref={box} aria-hidden="true" />;
}

/** A number as the charts and tables show it: at most three significant decimals. */
export const round = (v: number): string => {
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
};

/** Horizontal bars as `<meter>`s (native, accessible, no inline style): one per row, against the largest. */
export function Bars(props: { rows: { label: string; value: number; text: string }[]; max?: number }) {
  const max = props.max ?? Math.max(1, ...props.rows.map((r) => r.value));
  if (props.rows.length === 0) return <p class="muted">Nothing in this window.</p>;
  return (
    <ul class="bars">
      {props.rows.map((r) => (
        <li key={r.label}>
          <span class="bar-label">{r.label}</span>
          <meter min={0} max={max} value={r.value} aria-label={`${r.label}: ${r.text}`} />
          <span class="bar-value">{r.text}</span>
        </li>
      ))}
    </ul>
  );
}
