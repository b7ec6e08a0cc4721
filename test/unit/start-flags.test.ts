import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ARBITER_NODE_FLAGS } from '../../bench/targets.js';

const SERVER = '--import ./dist/src/tracing.js dist/src/main.js';
const started = `node ${ARBITER_NODE_FLAGS.join(' ')} ${SERVER}`;

describe("the server's Node flags (docs/operating.md, start-up)", () => {
  it('npm start, npm run start:prod and the image start the server with them, as the bench does', () => {
    const { scripts } = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    assert.equal(scripts.start, started);
    assert.equal(scripts['start:prod'], started);
    const cmd = readFileSync('Dockerfile', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('CMD '));
    assert.ok(cmd?.includes(`exec ${started}"`), cmd);
    assert.deepEqual(ARBITER_NODE_FLAGS, ['--no-memory-reducer']);
  });

  it('this Node accepts them (an unknown V8 flag would stop the server at start)', () => {
    const run = spawnSync(process.execPath, [...ARBITER_NODE_FLAGS, '-e', 'process.exit(0)'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const bad = spawnSync(process.execPath, ['--no-such-v8-flag-here', '-e', 'process.exit(0)'], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
  });
});
