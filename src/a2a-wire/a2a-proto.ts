import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Where `a2a.proto` is: beside this module — `npm run build` copies it into
 * `dist/` (scripts/copy-assets.mjs), which is all the image ships — else in
 * the source tree, for output compiled without that step (the tests'
 * `tsc`). The first that exists.
 */
export const A2A_PROTO_CANDIDATES: readonly string[] = [
  fileURLToPath(new URL('./a2a.proto', import.meta.url)),
  fileURLToPath(new URL('../../../src/a2a-wire/a2a.proto', import.meta.url)),
];

function readProto(): string {
  const path = A2A_PROTO_CANDIDATES.find((p) => existsSync(p));
  if (!path) throw new Error(`a2a.proto not found (looked in ${A2A_PROTO_CANDIDATES.join(', ')})`);
  return readFileSync(path, 'utf8');
}

/**
 * The normative `a2a.proto` of A2A v1.0 (spec §10.1, package `lf.a2a.v1`),
 * comments left out: `a2a.proto` beside this module. A unit test
 * (test/unit/grpc-codec.test.ts) checks that it defines exactly what the
 * reference copy in ../shared/reference does.
 */
export const A2A_PROTO: string = readProto();
