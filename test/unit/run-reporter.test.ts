import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { slowestFiles } from '../helpers/run-reporter.js';

describe('the slowest files after npm test (test/helpers/run-reporter.ts)', () => {
  it('sums the top-level suites of each file, longest first, and ignores the lines of skips and broken ones', () => {
    const lines = [
      { file: 'dist/test/e2e/a.e2e.test.js', ms: 1500 },
      { file: 'dist/test/unit/b.test.js', ms: 20 },
      { file: 'dist/test/e2e/a.e2e.test.js', ms: 2500 },
      { file: 'dist/test/e2e/c.e2e.test.js', ms: 3000 },
      { file: 'test/e2e/c.e2e.test.ts', name: 'needs pg', suite: true, reason: 'needs a PostgreSQL server' },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');
    assert.deepEqual(slowestFiles(`${lines}\n{"file":"cut`, 2), [
      '     4.0 s  test/e2e/a.e2e.test.ts',
      '     3.0 s  test/e2e/c.e2e.test.ts',
    ]);
  });
});
