import { setFlagsFromString } from 'node:v8';

/**
 * Loaded into every test process and every server a test starts (`--import`, beside the loopback tripwire):
 * WebAssembly runs on V8's baseline compiler only. The embedded database is PostgreSQL compiled to
 * WebAssembly, and optimising its hot functions costs each process about a second of CPU in background
 * threads — more than a test server's short life gains from it (measured: opening a copy of the test database
 * and running 300 queries, 1.9–2.1 s of CPU without, 0.8–0.9 s with). Production servers keep V8's default.
 * It must run before the first WebAssembly module is compiled.
 */
setFlagsFromString('--liftoff-only');
