/**
 * How Node runs every test process (`scripts/run-tests.mjs`; the test runner passes them on to each file's
 * process) and every server a test starts (`process.ts`):
 * - `loopback-only.js`: any connection off loopback is refused and fails the test (see that file);
 * - `wasm-baseline.js`: the embedded database's WebAssembly runs on V8's baseline compiler only (see that file);
 * - `--no-opt`: JavaScript is not optimised by TurboFan. A test process lives seconds and runs most of its code a
 *   few times; on Node 20 TurboFan's background compiles cost more CPU than they save (measured on the unit tier:
 *   51 → 44 CPU-seconds; the service and integration tiers 103 → 88; a server's start 2.5 → 2.0 s of CPU). On
 *   Node 24, whose Maglev still optimises, it changes nothing measurable. Behaviour is the same either way; only
 *   `npm run bench` measures speed, and it runs without these flags.
 */
export const TEST_NODE_FLAGS = [
  '--import',
  './dist/test/helpers/loopback-only.js',
  '--import',
  './dist/test/helpers/wasm-baseline.js',
  '--no-opt',
];
