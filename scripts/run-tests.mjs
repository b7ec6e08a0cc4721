#!/usr/bin/env node
// Compiles the project and its tests with tsc (when anything changed: scripts/compile.mjs), then runs every *.test.js
// under dist/test with Node's built-in test runner. Without DATABASE_URL it
// first builds one migrated embedded database for the test servers to copy
// (test/helpers/database.ts). At the end it lists what was skipped, why, and
// how to run it (test/helpers/skip-summary.ts), and the slowest files, from the lines of its reporter
// (test/helpers/run-reporter.ts). Every temporary file of the run is made under one directory (TMPDIR), removed
// at the end.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile } from './compile.mjs';

const compiled = compile();
if (compiled !== 0) process.exit(compiled);

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return p.endsWith('.test.js') ? [p] : [];
  });
}

const filters = process.argv.slice(2);
// Only compiled tests whose source still exists (a deleted test's output may linger in dist/).
const files = find('dist/test')
  .filter((f) => existsSync(f.replace(/^dist\//, '').replace(/\.js$/, '.ts')))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const work = mkdtempSync(join(tmpdir(), 'arbiter-tests-'));
// The run's temporary files — test homes, embedded databases, keys, browser profiles, whatever a test or a server
// it starts makes in the system's temporary directory — go under this run's directory, removed at the end, so a
// test that does not clean up after itself, or a run stopped with Ctrl-C, leaves nothing in /tmp.
const runTmp = join(work, 'tmp');
mkdirSync(runTmp);
// Ctrl-C reaches the test runner too; this process waits for it to stop, then still cleans up and reports.
process.on('SIGINT', () => undefined);
const reportFile = join(work, 'report.jsonl');
const env = {
  ...process.env,
  NODE_ENV: 'test',
  TMPDIR: runTmp,
  // Node 22 and later keep the modules they compile here, so the test files' processes and the servers they
  // start compile each module once per run, not once each (Node 20 ignores it).
  NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(work, 'compile-cache'),
};
let status = 1;
try {
  // Unit tests start no server: no database to prepare for them.
  if (!process.env.DATABASE_URL && files.some((f) => !f.includes('/unit/'))) {
    const { buildPgdataTemplate } = await import('../dist/test/helpers/pgdata-template.js');
    const { PGDATA_TEMPLATE_ENV } = await import('../dist/test/helpers/database.js');
    env[PGDATA_TEMPLATE_ENV] = await buildPgdataTemplate(join(work, 'template'));
  }
  const { TEST_NODE_FLAGS } = await import('../dist/test/helpers/runtime-flags.js');
  const concurrency = process.env.TEST_CONCURRENCY ?? '2';
  const run = spawnSync(
    process.execPath,
    [
      // Every test process refuses connections off loopback, and runs with baseline compilers: runtime-flags.ts.
      ...TEST_NODE_FLAGS,
      '--test',
      `--test-concurrency=${concurrency}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      // One reporter of our own beside spec, not two: with three, Node warns of a listener leak at the start.
      '--test-reporter=./dist/test/helpers/run-reporter.js',
      `--test-reporter-destination=${reportFile}`,
      ...files,
    ],
    { stdio: 'inherit', env },
  );
  status = run.status ?? 1;
  const report = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : undefined;
  if (report !== undefined) {
    const { parseSkipped, summariseSkips } = await import('../dist/test/helpers/skip-summary.js');
    const lines = summariseSkips(parseSkipped(report));
    if (lines.length) console.log(`\n${lines.join('\n')}`);
  }
  if (report !== undefined && files.length > 1) {
    const { slowestFiles } = await import('../dist/test/helpers/run-reporter.js');
    const lines = slowestFiles(report);
    if (lines.length) console.log(`\nslowest files:\n${lines.join('\n')}`);
  }
} finally {
  // Retried: after a Ctrl-C, a server a test started may still be writing its database here as it stops.
  try {
    rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  } catch (err) {
    console.error(`could not remove ${work}: ${err.message}`);
  }
}
process.exit(status);
