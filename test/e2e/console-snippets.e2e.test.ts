import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import { agentSnippets, type AgentSnippet } from '../../src/console/agent-snippets.js';
import { answerOf } from '../helpers/a2a.js';
import { newAgent, newTenant, type TestTenant } from '../helpers/factories.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Runs a program to its end (bounded: a snippet that hangs fails the test) with only `TOKEN` and `PATH` set. */
function run(file: string, args: string[], token: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TOKEN: token }, timeout: 60_000, maxBuffer: 4 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The `data:` payloads of an SSE body, parsed. */
const sseData = (body: string): any[] =>
  body
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)));

/** Type errors of a TypeScript file as a user's project (strict, Node types, the installed packages) sees them. */
function typeErrors(file: string): string[] {
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    .filter((m) => m.length > 0);
}

const CURL = '/usr/bin/curl';
// Outside CI a machine without curl skips the curl snippets; in CI a missing curl fails them.
const noCurl = !process.env.CI && !existsSync(CURL) ? `no curl at ${CURL}` : false;

/**
 * The console's agent page shows copyable snippets (`agentSnippets`, the very text the page renders — the
 * browser test checks that). Each one is run here as a user would: the curl ones with bash, the TypeScript one
 * type-checked and run with the pinned `@a2a-js/sdk`, against a real server, with only `$TOKEN` set.
 */
describe('the console agent snippets, run as written', () => {
  let server: TestServer;
  let tenant: TestTenant;
  let dir: string;
  let snippets: AgentSnippet[];

  before(async () => {
    server = await startTestServer({ env: { ARBITER_DEFAULT_MODEL: 'echo' } });
    tenant = await newTenant(server, 'snippets');
    await newAgent(tenant, { id: 'helper' });
    snippets = agentSnippets(server.url, 'helper');
    // Inside the project, so `@a2a-js/sdk` resolves from its node_modules as in a user's project.
    mkdirSync(join(process.cwd(), 'test-artifacts'), { recursive: true });
    dir = mkdtempSync(join(process.cwd(), 'test-artifacts', 'snippets-'));
  });

  after(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  const byLabel = (label: string): AgentSnippet => {
    const s = snippets.find((x) => x.label === label);
    assert.ok(s, `a snippet labelled ${label}`);
    return s;
  };

  it('every snippet is one this test runs, and none holds a token', () => {
    assert.deepEqual(
      snippets.map((s) => [s.label, s.lang]),
      [
        ['curl: JSON-RPC SendMessage (v1.0)', 'bash'],
        ['curl: REST message:stream (SSE)', 'bash'],
        ['TypeScript: @a2a-js/sdk', 'typescript'],
      ],
    );
    for (const s of snippets) assert.ok(!s.text.includes(tenant.token), s.label);
  });

  it('curl: JSON-RPC SendMessage answers with the completed task', { skip: noCurl }, async () => {
    const r = await run('bash', ['-c', byLabel('curl: JSON-RPC SendMessage (v1.0)').text], tenant.token);
    assert.equal(r.code, 0, r.stderr);
    const body = JSON.parse(r.stdout);
    assert.equal(body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', r.stdout);
    assert.equal(answerOf(body.result.task), 'hello');
    // Run again as written: a new message (a new messageId), so a new task, not an error.
    const again = await run('bash', ['-c', byLabel('curl: JSON-RPC SendMessage (v1.0)').text], tenant.token);
    const second = JSON.parse(again.stdout);
    assert.equal(second.result?.task?.status?.state, 'TASK_STATE_COMPLETED', again.stdout);
    assert.notEqual(second.result.task.id, body.result.task.id);
  });

  it('curl: REST message:stream streams the task to completion', { skip: noCurl }, async () => {
    const r = await run('bash', ['-c', byLabel('curl: REST message:stream (SSE)').text], tenant.token);
    assert.equal(r.code, 0, r.stderr);
    const frames = sseData(r.stdout);
    assert.ok(frames[0]?.task, r.stdout);
    const last = frames[frames.length - 1];
    assert.equal(last?.statusUpdate?.status?.state, 'TASK_STATE_COMPLETED', r.stdout);
    const text = frames
      .filter((f) => f.artifactUpdate?.artifact?.name === 'response')
      .flatMap((f) => f.artifactUpdate.artifact.parts.map((p: { text?: string }) => p.text ?? ''))
      .join('');
    assert.equal(text, 'hello');
  });

  it('TypeScript: type-checks against the pinned @a2a-js/sdk and sends a ROLE_USER text message', async () => {
    const source = byLabel('TypeScript: @a2a-js/sdk').text;
    const file = join(dir, 'snippet.mts');
    writeFileSync(file, source);
    assert.deepEqual(typeErrors(file), []);
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    const out = join(dir, 'snippet.mjs');
    writeFileSync(out, js);
    const r = await run(process.execPath, [out], tenant.token);
    assert.equal(r.code, 0, r.stderr);
    const task = JSON.parse(r.stdout);
    assert.equal(task.status?.state, 'TASK_STATE_COMPLETED', r.stdout);
    assert.equal(answerOf(task), 'hello');
    // What the server received: the user's message as written (the role and the text part survived the SDK).
    const stored = await tenant.client.get(`/v1/requests/${task.id}`);
    const first = stored.body.history.find((m: { role: string }) => m.role === 'ROLE_USER');
    assert.deepEqual(
      first?.parts.map((p: { text?: string }) => p.text),
      ['hello'],
    );
  });
});
