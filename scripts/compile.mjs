#!/usr/bin/env node
// Compiles the project, its tests and benchmarks into dist/ (`tsc -p tsconfig.json`) — unless nothing tsc reads
// has changed since its last successful run here. tsc's incremental build finds nothing to do then too, but only
// after reading and hashing every file (about 6 s on a two-core machine, before every `npm test`). What counts as a
// change: any file or folder under src/, test/, bench/ or scripts/ added, removed, resized or touched, or the
// TypeScript configuration, ormconfig.ts or the installed packages (package-lock.json files). Run as a command
// (`node scripts/compile.mjs`, exit code tsc's) or imported (`compile()`).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOTS = ['src', 'test', 'bench', 'scripts'];
const FILES = ['tsconfig.json', 'ormconfig.ts', 'package.json', 'package-lock.json', 'node_modules/.package-lock.json'];
const BUILD_INFO = 'dist/.tsbuildinfo-all';
const STAMP = `${BUILD_INFO}.inputs`;

/** Path, size and modification time of every input (folders too: an added or removed file changes its folder). */
function inputs() {
  const lines = [];
  const add = (p) => {
    if (!existsSync(p)) return lines.push(`${p}\t-`);
    const s = statSync(p);
    lines.push(`${p}\t${s.isDirectory() ? 'd' : s.size}\t${s.mtimeMs}`);
    if (s.isDirectory()) for (const name of readdirSync(p).sort()) add(join(p, name));
  };
  for (const p of [...ROOTS, ...FILES]) add(p);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/** Compiles when needed; returns tsc's exit code (0 when nothing needed compiling). */
export function compile() {
  const before = inputs();
  if (existsSync(BUILD_INFO) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === before) return 0;
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], {
    stdio: 'inherit',
  });
  // The inputs as they were when tsc began: a file changed while it ran is compiled next time.
  if (tsc.status === 0) writeFileSync(STAMP, before);
  return tsc.status ?? 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(compile());
