import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freshDatabase } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { tempHome } from '../helpers/server.js';

/**
 * The documentation's examples, run as written. A fenced block right after
 * a `<!-- doc-test -->` line is a shell block; `<!-- doc-test: save as
 * <file> -->` saves the block as that file (a later shell block runs it).
 * A page's blocks run in order, in one bash session (so a variable one block
 * sets, the next one uses), in a directory of the project's (so
 * `@a2a-js/sdk` resolves as in a user's project), with `HOME` a fresh
 * directory: `~/.arbiter` is the server's home, as on a first start.
 *
 * Two things differ from a user's terminal, both said here: the server is
 * the one this test starts (the line `npm ci && npm start` is left out), and
 * it listens on a free port, which replaces `8080` in `localhost:8080`.
 * `curl` fails on an HTTP error status, so an example that gets a 4xx or
 * 5xx fails the test.
 */
interface DocBlock {
  line: number;
  kind: 'shell' | 'file';
  file?: string;
  text: string;
}

const MARK = /^<!-- doc-test(?:: save as ([\w.-]+))? -->$/;

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

/** The pages with runnable examples: the README and every page under docs/. */
function pages(): string[] {
  const docs = readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs].filter((p) => docBlocks(readFileSync(p, 'utf8')).length > 0);
}

/** Runs a bash script to its end; a generous bound only keeps a hung example from hanging the suite. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('the documentation’s examples, run as written', () => {
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.stop('SIGTERM');
  });

  it('marks are found: the README walkthrough, the JSON-RPC and REST examples and the SDK client', () => {
    const blocks = docBlocks(readFileSync('README.md', 'utf8'));
    assert.ok(blocks.length >= 5, `${blocks.length} blocks`);
    assert.ok(blocks.some((b) => b.file === 'a2a-client.mjs'));
    assert.ok(blocks[0].text.includes('npm ci && npm start'), 'the walkthrough comes first');
  });

  for (const page of pages()) {
    it(`${page}: every marked example runs, in order`, async () => {
      const home = tempHome();
      const db = await freshDatabase();
      mkdirSync('test-artifacts', { recursive: true });
      const work = mkdtempSync(join(process.cwd(), 'test-artifacts', 'docs-'));
      try {
        const server = await startServerProcess({ HOME: home, ...(db.url ? { DATABASE_URL: db.url } : {}) });
        servers.push(server);
        const port = new URL(server.url).port;
        const local = (text: string) => text.replaceAll('localhost:8080', `localhost:${port}`);
        let script = [
          'set -euo pipefail',
          // An HTTP error status fails the example (and shows the answer's body).
          'curl() { command curl --fail-with-body "$@"; }',
        ].join('\n');
        for (const block of docBlocks(readFileSync(page, 'utf8'))) {
          if (block.kind === 'file') {
            writeFileSync(join(work, block.file!), local(block.text));
            continue;
          }
          const body = block.text
            .split('\n')
            .filter((l) => !/^npm ci && npm start\b/.test(l))
            .join('\n');
          script += `\necho "::: ${page}:${block.line}"\n${local(body)}\n`;
        }
        const { code, out } = await bash(script, work, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home });
        assert.equal(code, 0, `the examples stopped (the last '::: file:line' is the block):\n${out}`);
        if (page === 'README.md') {
          assert.match(out, /\{"status":"ok"\}/);
          assert.match(out, /"id":"research"/);
          assert.match(out, /sent: TASK_STATE_COMPLETED "hello"/);
          assert.match(out, /got: true TASK_STATE_COMPLETED/);
          assert.match(out, /TASK_STATE_CANCELED/);
        }
      } finally {
        rmSync(work, { recursive: true, force: true });
        rmSync(home, { recursive: true, force: true });
        await db.drop();
      }
    });
  }
});
