import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { slowestFiles } from '../helpers/timing-reporter.js';

describe('the slowest files after npm test (test/helpers/timing-reporter.ts)', () => {
  it('sums the top-level suites of each file, longest first, and ignores broken lines', () => {
    const lines = [
      { file: 'dist/test/e2e/a.e2e.test.js', ms: 1500 },
      { file: 'dist/test/unit/b.test.js', ms: 20 },
      { file: 'dist/test/e2e/a.e2e.test.js', ms: 2500 },
      { file: 'dist/test/e2e/c.e2e.test.js', ms: 3000 },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');
    assert.deepEqual(slowestFiles(`${lines}\n{"file":"cut`, 2), [
      '     4.0 s  test/e2e/a.e2e.test.ts',
      '     3.0 s  test/e2e/c.e2e.test.ts',
    ]);
  });
});
