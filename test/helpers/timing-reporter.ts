import type { TestEvent } from 'node:test/reporters';
import { relative } from 'node:path';

/**
 * A reporter for Node's test runner (`--test-reporter`, beside `spec`):
 * writes one JSON line per top-level suite or test — its file and how long it
 * ran — for `scripts/run-tests.mjs` to print the slowest files after the run
 * (`slowestFiles`), so that the suite's time stays visible as it grows.
 */
export default async function* timingReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { nesting, file, details } = event.data;
    if (nesting !== 0 || !file || typeof details.duration_ms !== 'number') continue;
    yield `${JSON.stringify({ file: relative(process.cwd(), file), ms: Math.round(details.duration_ms) })}\n`;
  }
}

/** The `top` files that ran longest (the time of their top-level suites and tests, summed), from the reporter's lines. */
export function slowestFiles(text: string, top = 10): string[] {
  const perFile = new Map<string, number>();
  for (const line of text.split('\n')) {
    try {
      const { file, ms } = JSON.parse(line) as { file: string; ms: number };
      const source = file.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      perFile.set(source, (perFile.get(source) ?? 0) + ms);
    } catch {
      // blank or cut-off line
    }
  }
  return [...perFile]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([file, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
}
