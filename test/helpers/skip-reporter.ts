import type { TestEvent } from 'node:test/reporters';
import { skippedFrom } from './skip-summary.js';

/**
 * A reporter for Node's test runner (`--test-reporter`, beside `spec`):
 * writes one JSON line per skipped suite or test — file, name, reason — for
 * `scripts/run-tests.mjs` to summarise after the run (`skip-summary.ts`).
 */
export default async function* skipReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass') continue;
    const skipped = skippedFrom(event.data);
    if (skipped) yield `${JSON.stringify(skipped)}\n`;
  }
}
