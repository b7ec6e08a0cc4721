import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { basename, dirname } from 'node:path';
import { describe, it } from 'node:test';
import { tempHome } from '../helpers/server.js';

describe('the test run keeps its temporary files (scripts/run-tests.mjs)', () => {
  it('in a directory of its own, which it removes at the end, not loose in the system temporary directory', () => {
    // `npm test` sets TMPDIR to `<run>/tmp`, where <run> is the runner's `arbiter-tests-…` directory.
    assert.equal(basename(tmpdir()), 'tmp');
    assert.match(basename(dirname(tmpdir())), /^arbiter-tests-/);
    assert.ok(tempHome().startsWith(`${tmpdir()}/`), 'a test home is made there too');
  });
});
