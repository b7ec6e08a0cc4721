import type { TestEvent } from 'node:test/reporters';
import { relative } from 'node:path';
import { skippedFrom } from './skip-summary.js';

/**
 * The run's own reporter for Node's test runner (`--test-reporter`, beside `spec`), one JSON line per event of
 * interest, for `scripts/run-tests.mjs` to summarise after the run:
 * - per skipped suite or test, its file, name and reason (`{"file","name","suite","reason"}`: `skip-summary.ts`);
 * - per top-level suite or test, its file and how long it ran (`{"file","ms"}`: `slowestFiles` below), so that the suite's time stays visible as it grows.
 * One reporter for both: with a third beside `spec`, Node's runner adds an eleventh `end` listener to its stream
 * and prints a `MaxListenersExceededWarning` at the top of every run.
 */
export default async function* runReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.type === 'test:pass') {
      const skipped = skippedFrom(event.data);
      if (skipped) yield `${JSON.stringify(skipped)}\n`;
    }
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
      const { file, ms } = JSON.parse(line) as { file: string; ms?: number };
      if (typeof ms !== 'number') continue; // a skip's line
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
