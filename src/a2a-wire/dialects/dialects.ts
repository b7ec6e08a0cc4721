import type { Operation, WireDialect } from './dialect.js';
import { V03Dialect } from './v03.dialect.js';
import { V1Dialect } from './v1.dialect.js';

/** The two wire dialects (stateless: one of each serves every request). */
export const V1: WireDialect = new V1Dialect();
export const V03: WireDialect = new V03Dialect();

/** The dialect of a `Dialect` name. */
export const dialectOf = (version: '1.0' | '0.3'): WireDialect => (version === '1.0' ? V1 : V03);

/** The proto's method name of each operation: one `a2a_method` vocabulary for REST and gRPC in logs and metrics. */
export const PROTO_METHOD_OF = Object.fromEntries(Object.entries(V1.methods).map(([name, op]) => [op, name])) as Record<
  Operation,
  string
>;
