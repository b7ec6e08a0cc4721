import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { instructionTable, readPart } from '../../bench/instructions.bench.js';

describe('bench: instructions per send', () => {
  it("reads a dump's totals per thread: the main thread's apart, every thread's summed, other parts ignored; a missing or cut dump is an error", () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-instr-'));
    try {
      const dump = (name: string, totals: number) =>
        writeFileSync(join(dir, name), `version: 1\ncreator: callgrind-3.19.0\nevents: Ir\n\ntotals: ${totals}\n`);
      dump('cg.42.2-01', 600_000);
      dump('cg.42.2-02', 5);
      dump('cg.42.2-05', 120_000);
      dump('cg.42.1-01', 999_999); // another window
      dump('cg.4.2-01', 777); // another process
      assert.deepEqual(readPart(dir, 42, 2), { main: 600_000, all: 720_005 });
      assert.throws(() => readPart(dir, 42, 3), /no dump of the main thread/);
      writeFileSync(join(dir, 'cg.42.3-01'), 'version: 1\n'); // cut short
      assert.throws(() => readPart(dir, 42, 3), /no totals line/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pairs each c=1 window with the c=16 window of its own pass', () => {
    const table = instructionTable([
      {
        name: 'arbiter-pg',
        windows: [
          { concurrency: 16, main: 600_000, all: 900_000 },
          { concurrency: 1, main: 660_000, all: 950_000 },
          { concurrency: 16, main: 500_000, all: 800_000 },
          { concurrency: 1, main: 600_000, all: 850_000 },
        ],
      },
    ]);
    assert.match(table, /\| arbiter-pg \| 600k, 500k \| 660k, 600k \| 1\.10, 1\.20 \| 900k, 800k \| 950k, 850k \|/);
  });
});
