import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freshDatabase, seedEmbeddedDatabase } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { portForProgram } from '../helpers/ports.js';
import { tempHome } from '../helpers/server.js';

/**
 * The documentation's examples, run as written. A fenced block right after
 * a `<!-- doc-test -->` line is a shell block; `<!-- doc-test: save as
 * <file> -->` saves the block as that file (a later shell block runs it).
 * A page's blocks run in order, in one bash session (so a variable one block
 * sets, the next one uses), in a directory of the project's (so
 * `@a2a-js/sdk` resolves as in a user's project), with `HOME` a fresh
 * directory: `~/.arbiter` is the server's home, as on a first start (the
 * README's walkthrough is one; the other pages' servers find the run's
 * migrated embedded database copied there, as every test server does).
 *
 * A page whose server needs settings shows the command that starts it, in a
 * marked block: one line `NAME=value … npm start` (at most one a page). The
 * test starts its server with those settings.
 *
 * What differs from a user's terminal, all said here: the server is the one
 * this test starts (the lines `npm ci && npm start` and `… npm start` are left
 * out), and it listens on a free port, which replaces `8080` in
 * `localhost:8080`; a loopback port named in the page's server settings
 * (`127.0.0.1:8888`, or a `…_PORT=8081` setting) is replaced by a free one
 * too, wherever that number stands on its own in the settings and the page's
 * blocks (so a fake the page starts on it and the server agree). `curl` fails
 * on an HTTP error status, so an example that gets a 4xx or 5xx fails the test.
 *
 * And every shell block of the pages is marked: a fence whose info string
 * is a shell's (`sh`, `bash`, …) must run, and every fence says what it holds
 * (`json`, `text`, `ini` … are shown, not run).
 */
interface DocBlock {
  line: number;
  kind: 'shell' | 'file';
  file?: string;
  text: string;
}

const MARK = /^<!-- doc-test(?:: save as ([\w.-]+))? -->$/;
/** A start line: settings, then `npm start` (`npm ci && npm start` is the README's, with none). */
const START_LINE = /^((?:[A-Z][A-Z0-9_]*=\S*\s+)+)npm start$/;
const SHELLS = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);

/** The pages: the README, the root's other guides, and every page under docs/. */
const ROOT_PAGES = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'];

export function docBlocks(markdown: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const mark = MARK.exec(lines[i]);
    if (!mark) continue;
    // The block follows the mark, perhaps after a blank line (as Prettier leaves it).
    let open = i + 1;
    while (lines[open] === '') open++;
    const fence = /^(`{3,})\w*$/.exec(lines[open] ?? '');
    assert.ok(fence, `line ${i + 1}: a doc-test mark must be followed by a fenced block`);
    const end = lines.findIndex((l, j) => j > open && l === fence[1]);
    assert.ok(end > 0, `line ${open + 1}: the fenced block is not closed`);
    blocks.push({
      line: open + 1,
      kind: mark[1] ? 'file' : 'shell',
      ...(mark[1] ? { file: mark[1] } : {}),
      text: lines.slice(open + 1, end).join('\n'),
    });
    i = end;
  }
  return blocks;
}

/** Fences that break the rule above: no info string, or a shell's without a mark. `line: why` each. */
export function unmarkedFences(markdown: string): string[] {
  const lines = markdown.split('\n');
  const problems: string[] = [];
  let marked = false;
  for (let i = 0; i < lines.length; i++) {
    if (MARK.test(lines[i])) {
      marked = true;
      continue;
    }
    const fence = /^\s*(`{3,})(\S*)\s*$/.exec(lines[i]);
    if (!fence) {
      if (lines[i].trim() !== '') marked = false;
      continue;
    }
    const info = fence[2].toLowerCase();
    if (info === '') problems.push(`line ${i + 1}: a fence without an info string (say json, text, ini … or mark it)`);
    else if (SHELLS.has(info) && !marked) problems.push(`line ${i + 1}: a ${info} block without a doc-test mark`);
    // Skip to the fence's end: what is inside is content.
    const close = lines.findIndex((l, j) => j > i && l.trim() === fence[1]);
    i = close === -1 ? lines.length : close;
    marked = false;
  }
  return problems;
}

/** The settings a page's server starts with (its start line, in a marked block). */
export function serverSettings(markdown: string): Record<string, string> {
  const starts = docBlocks(markdown)
    .filter((b) => b.kind === 'shell')
    .flatMap((b) => b.text.split('\n'))
    .filter((l) => /\bnpm start\b/.test(l) && !/^npm ci && npm start\b/.test(l));
  // Any other way of starting (a quoted value, `npm start -- …`) would run the page on a server without it.
  for (const l of starts) assert.match(l, START_LINE, `a page starts its server with one line NAME=value … npm start`);
  const lines = starts;
  assert.ok(lines.length <= 1, 'a page starts its server once');
  if (lines.length === 0) return {};
  const settings: Record<string, string> = {};
  for (const pair of START_LINE.exec(lines[0])![1].trim().split(/\s+/)) {
    const m = /^([A-Z][A-Z0-9_]*)=(\S*)$/.exec(pair);
    assert.ok(m, `the start line: '${pair}' is not NAME=value`);
    settings[m[1]] = m[2];
  }
  return settings;
}

function allPages(): string[] {
  const docs = existsSync('docs')
    ? readdirSync('docs')
        .filter((f) => f.endsWith('.md'))
        .map((f) => join('docs', f))
    : [];
  return [...ROOT_PAGES.filter((p) => existsSync(p)), ...docs];
}

/** The pages with runnable examples (`DOC_TEST_PAGE=docs/push.md` runs one of them). */
function pages(): string[] {
  const only = process.env.DOC_TEST_PAGE;
  return allPages()
    .filter((p) => !only || p === only)
    .filter((p) => docBlocks(readFileSync(p, 'utf8')).length > 0);
}

/**
 * `TEST_DOCS=off` leaves the pages' examples out (the checks of their marks still run): `.ci/run` runs the suite
 * twice, once per database, and the examples run in the embedded pass, on the database a reader's `npm start` uses.
 */
const SKIP_PAGES = process.env.TEST_DOCS === 'off' ? 'documentation examples off (TEST_DOCS=off)' : false;

/** What a page's output must show besides running to its end. */
const EXPECTED: Record<string, RegExp[]> = {
  'README.md': [
    /\{"status":"ok"\}/,
    /"id":"research"/,
    /sent: TASK_STATE_COMPLETED "hello"/,
    /got: true TASK_STATE_COMPLETED/,
  ],
  'docs/a2a.md': [
    /TASK_STATE_CANCELED/,
    /the same task: /,
    /report\.zip application\/zip true/,
    /grpc: TASK_STATE_COMPLETED/,
    /\{"keys":\[\]\}/,
  ],
  'docs/push.md': [/received: TASK_STATE_SUBMITTED/, /received: TASK_STATE_COMPLETED/, /"state":"active"/],
  'docs/agents-and-tools.md': [/"tool":"\/a2a","ok":true,"args":"call researcher/, /Echo: hello/, /Result for A2A/],
  'docs/native-api.md': [/Idempotent-Replayed: true/i, /"error_code":"cancelled"/],
  'docs/api.md': [
    /\{"kind":"admin","role":"admin","actor":"root"/,
    /"required_scopes":\["agents:read","agents:write"\]/,
    /tenant disabled: 401/,
  ],
  'docs/operating.md': [/send \d: 429/, /arbiter_http_requests_total\{/],
  'docs/stats.md': [
    /"window":"15m","from"/,
    /"window":"24h"/,
    /"field":"window"/,
    /"budgets":\{"currency":[^,]*,"warn_at_percent":\d+,"tenant":\{"limits":\{"tokens_per_day":null,"tokens_per_month":500000,/,
  ],
};

/** Runs a bash script to its end, then ends what it left running; a generous bound only keeps a hung example from hanging the suite. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    // Its own process group, so that a fake an example left in the background ends with it.
    const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // nothing was left running
      }
      resolve({ code, out });
    });
  });
}

describe('the documentation’s examples, run as written', () => {
  it('marks are found: the README walkthrough, the JSON-RPC example and the SDK client', () => {
    const blocks = docBlocks(readFileSync('README.md', 'utf8'));
    assert.ok(blocks.length >= 4, `${blocks.length} blocks`);
    assert.ok(blocks.some((b) => b.file === 'a2a-client.mjs'));
    assert.ok(blocks[0].text.includes('npm ci && npm start'), 'the walkthrough comes first');
    for (const page of Object.keys(EXPECTED)) {
      assert.ok(docBlocks(readFileSync(page, 'utf8')).length > 0, `${page} has runnable examples`);
    }
  });

  it('every shell block of every page is marked to run, and every fence says what it holds', () => {
    const problems = allPages().flatMap((p) => unmarkedFences(readFileSync(p, 'utf8')).map((x) => `${p} ${x}`));
    assert.deepEqual(problems, []);
  });

  for (const page of pages()) {
    it(`${page}: every marked example runs, in order`, { skip: SKIP_PAGES }, async () => {
      const markdown = readFileSync(page, 'utf8');
      const settings = serverSettings(markdown);
      // Loopback ports the settings name get free ones, in the settings and in the blocks alike.
      const ports = new Map<string, string>();
      for (const [name, value] of Object.entries(settings)) {
        const named = [...value.matchAll(/(?:127\.0\.0\.1|localhost):(\d{4,5})\b/g)].map((m) => m[1]);
        if (/_PORT$/.test(name) && /^\d{4,5}$/.test(value)) named.push(value);
        for (const port of named) {
          if (port !== '8080' && !ports.has(port)) ports.set(port, String(await portForProgram()));
        }
      }
      const withPorts = (text: string) =>
        [...ports].reduce((t, [from, to]) => t.replace(new RegExp(`\\b${from}\\b`, 'g'), to), text);
      const env = Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, withPorts(v)]));

      const home = tempHome();
      const db = await freshDatabase();
      // The README's walkthrough is a first start: the server creates its embedded database. The other pages start
      // from a copy of the run's migrated one, as every other test server does (creating one costs seconds of CPU).
      if (page !== 'README.md') seedEmbeddedDatabase(join(home, '.arbiter'));
      mkdirSync('test-artifacts', { recursive: true });
      const work = mkdtempSync(join(process.cwd(), 'test-artifacts', 'docs-'));
      let server: ServerProcess | undefined;
      try {
        server = await startServerProcess({ HOME: home, ...env, ...(db.url ? { DATABASE_URL: db.url } : {}) });
        const port = new URL(server.url).port;
        if (env.ARBITER_GRPC_PORT) {
          // The start-up line names where gRPC listens too (the page tells the reader so).
          assert.match(
            server.stdout(),
            new RegExp(`listening on \\S+ and gRPC on 127\\.0\\.0\\.1:${env.ARBITER_GRPC_PORT}\\b`),
          );
        }
        const local = (text: string) => withPorts(text.replaceAll('localhost:8080', `localhost:${port}`));
        let script = [
          'set -euo pipefail',
          // An HTTP error status fails the example (and shows the answer's body).
          'curl() { command curl --fail-with-body "$@"; }',
        ].join('\n');
        for (const block of docBlocks(markdown)) {
          if (block.kind === 'file') {
            writeFileSync(join(work, block.file!), local(block.text));
            continue;
          }
          const body = block.text
            .split('\n')
            .filter((l) => !/^npm ci && npm start\b/.test(l) && !START_LINE.test(l))
            .join('\n');
          script += `\necho "::: ${page}:${block.line}"\n${local(body)}\n`;
        }
        const { code, out } = await bash(script, work, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home });
        if (process.env.DOC_TEST_SHOW) console.log(out);
        assert.equal(code, 0, `the examples stopped (the last '::: file:line' is the block):\n${out}`);
        for (const expected of EXPECTED[page] ?? []) assert.match(out, expected);
      } finally {
        // Stopped before its database goes: a server left running on a dropped database spends the rest of the
        // file reconnecting, beside every later page.
        await server?.stop('SIGTERM');
        rmSync(work, { recursive: true, force: true });
        rmSync(home, { recursive: true, force: true });
        await db.drop();
      }
    });
  }
});
