/** Limits for any JSON document taken from outside. */
export const MAX_JSON_DEPTH = 64;

export interface JsonProblem {
  path: string;
  problem: string;
  kind: 'depth' | 'encoding';
}

/**
 * Finds the first thing in a parsed JSON value that the rest of the system
 * cannot take safely: nesting deeper than `maxDepth` (recursive validators
 * would overflow the stack) or a string with an unpaired UTF-16 surrogate
 * or a NUL character (PostgreSQL's text and jsonb refuse both). Iterative, so depth itself cannot crash it.
 */
export function findJsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH, root = 'body'): JsonProblem | undefined {
  const stack: [unknown, string, number][] = [[value, root, 0]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return { path, problem: 'contains an unpaired UTF-16 surrogate', kind: 'encoding' };
      if (v.includes('\u0000')) return { path, problem: 'contains a NUL character', kind: 'encoding' };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= maxDepth) return { path, problem: `is nested deeper than ${maxDepth} levels`, kind: 'depth' };
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push([item, `${path}[${i}]`, depth + 1]));
    } else {
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
        if (!k.isWellFormed() || k.includes('\u0000')) {
          return { path, problem: 'has a key with an unpaired UTF-16 surrogate or a NUL character', kind: 'encoding' };
        }
        stack.push([item, `${path}.${k}`, depth + 1]);
      }
    }
  }
  return undefined;
}

/**
 * Why a text is not JSON, without quoting it: V8's `SyntaxError` message
 * repeats the text around the fault (a registry file's secret, say), so only
 * the position is kept.
 */
export function jsonSyntaxProblem(err: unknown): string {
  const at = /position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
  return at ? `not valid JSON (near position ${at})` : 'not valid JSON';
}
