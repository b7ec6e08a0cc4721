import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parseSkipped, skippedFrom, summariseSkips, type Skipped } from '../helpers/skip-summary.js';

const CWD = '/work/arbiter';
const pg = (file: string, name: string, suite = true): Skipped => ({
  file,
  name,
  suite,
  reason: 'needs a PostgreSQL server',
});

describe('what npm test skipped, and how to run it (scripts/run-tests.mjs)', () => {
  it('records a skipped suite or test from the runner event, with its source file and reason', () => {
    const data = {
      name: 'database outage',
      file: `${CWD}/dist/test/e2e/db-outage.e2e.test.js`,
      skip: 'needs a PostgreSQL server',
      details: { type: 'suite' },
    };
    assert.deepEqual(skippedFrom(data, CWD), {
      file: 'test/e2e/db-outage.e2e.test.ts',
      name: 'database outage',
      suite: true,
      reason: 'needs a PostgreSQL server',
    });
    assert.deepEqual(skippedFrom({ name: 'bare', file: `${CWD}/dist/test/unit/x.test.js`, skip: true }, CWD), {
      file: 'test/unit/x.test.ts',
      name: 'bare',
      suite: false,
      reason: '',
    });
    assert.equal(skippedFrom({ name: 'ran', file: 'x', details: {} }, CWD), undefined);
    assert.equal(skippedFrom({ name: 'ran', file: 'x', skip: false }, CWD), undefined);
  });

  it('nothing skipped: nothing printed', () => {
    assert.deepEqual(summariseSkips([]), []);
  });

  it('groups by reason, names every suite and test, and says what they need and the command that runs them', () => {
    const lines = summariseSkips([
      pg('test/e2e/replicas.e2e.test.ts', 'two replicas on one PostgreSQL'),
      pg('test/e2e/db-outage.e2e.test.ts', 'database outage'),
      pg('test/e2e/process.e2e.test.ts', 'DATABASE_URL naming a database that does not exist', false),
      {
        file: 'test/e2e/console.e2e.test.ts',
        name: 'web console',
        suite: true,
        reason: 'no Chromium at /usr/bin/chromium',
      },
      { file: 'test/unit/odd.test.ts', name: 'odd', suite: false, reason: '' },
    ]);
    assert.deepEqual(lines, [
      'skipped: 3 suites (none of their tests ran) and 2 tests, by reason:',
      '  (no reason given)',
      '    test "odd" (test/unit/odd.test.ts)',
      '    run them (once that holds) with:',
      '      npm test -- unit/odd',
      '  needs a PostgreSQL server',
      '    suite "database outage" (test/e2e/db-outage.e2e.test.ts)',
      '    test "DATABASE_URL naming a database that does not exist" (test/e2e/process.e2e.test.ts)',
      '    suite "two replicas on one PostgreSQL" (test/e2e/replicas.e2e.test.ts)',
      '    they need DATABASE_URL naming a PostgreSQL server where its user may create databases (each file makes and drops its own); run them with:',
      '      DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm test -- e2e/db-outage e2e/process e2e/replicas',
      '  no Chromium at /usr/bin/chromium',
      '    suite "web console" (test/e2e/console.e2e.test.ts)',
      '    they need Chromium at /usr/bin/chromium (Debian: apt-get install chromium); run them with:',
      '      npm test -- e2e/console',
    ]);
  });

  it('tests skipped on PostgreSQL are run without DATABASE_URL', () => {
    const lines = summariseSkips([
      { file: 'test/e2e/process.e2e.test.ts', name: 'one process', suite: false, reason: 'embedded only' },
    ]);
    assert.equal(lines.at(-1), '      env -u DATABASE_URL npm test -- e2e/process');
  });

  it('the reporter, in this Node, records what a real run skips: whole suites, tests, and tests skipped at run time', () => {
    const dir = mkdtempSync(join(tmpdir(), 'arbiter-skips-'));
    try {
      const fixture = join(dir, 'fixture.mjs');
      writeFileSync(
        fixture,
        [
          "import { describe, it } from 'node:test';",
          "describe('needs pg', { skip: 'needs a PostgreSQL server' }, () => { it('never runs', () => {}); });",
          "describe('mixed', () => {",
          "  it('runs', () => {});",
          "  it('skipped', { skip: 'embedded only' }, () => {});",
          "  it('skipped inside', (t) => t.skip('decided at run time'));",
          '});',
        ].join('\n'),
      );
      const out = join(dir, 'skipped.jsonl');
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env.NODE_TEST_CONTEXT; // a run of its own, not a subtest of this one
      const run = spawnSync(
        process.execPath,
        [
          '--test',
          `--test-reporter=${resolve('dist/test/helpers/run-reporter.js')}`,
          `--test-reporter-destination=${out}`,
          fixture,
        ],
        { cwd: dir, env, encoding: 'utf8' },
      );
      assert.equal(run.status, 0, run.stderr);
      const skipped = parseSkipped(readFileSync(out, 'utf8'));
      assert.deepEqual(
        skipped.map((s) => [s.name, s.suite, s.reason]),
        [
          ['needs pg', true, 'needs a PostgreSQL server'],
          ['skipped', false, 'embedded only'],
          ['skipped inside', false, 'decided at run time'],
        ],
      );
      assert.ok(skipped.every((s) => s.file.endsWith('fixture.mjs')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a line cut off by a killed run is ignored; the others count', () => {
    const good = JSON.stringify(pg('test/e2e/leases.e2e.test.ts', 'leases'));
    assert.equal(parseSkipped(`${good}\n{"file":"test/e2e/x\n\n`).length, 1);
  });
});
