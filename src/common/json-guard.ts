import { getLocation, parse as parseTolerant, printParseErrorCode, type ParseError } from 'jsonc-parser';

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
  // Almost every value is clean: checked first without building a path for every member.
  if (maxDepth <= MAX_JSON_DEPTH && isClean(value, 0, maxDepth)) return undefined;
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

/** Whether `findJsonProblem` finds nothing, without allocating (recursive: at most `maxDepth`, ≤ 64, deep). */
function isClean(v: unknown, depth: number, maxDepth: number): boolean {
  if (typeof v === 'string') return v.isWellFormed() && !v.includes('\u0000');
  if (v === null || typeof v !== 'object') return true;
  if (depth >= maxDepth) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (i in v && !isClean(v[i], depth + 1, maxDepth)) return false;
    return true;
  }
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (!k.isWellFormed() || k.includes('\u0000')) return false;
    if (!isClean((v as Record<string, unknown>)[k], depth + 1, maxDepth)) return false;
  }
  return true;
}

/** Where a JSON text went wrong: a 0-based offset, and 1-based line and column as an editor shows them. */
export interface JsonTextPosition {
  offset: number;
  line: number;
  column: number;
}

/**
 * A JSON text that cannot be taken: not JSON (`syntax`), or nested deeper
 * than allowed (`depth`: `path` names the value that went too deep, as
 * `findJsonProblem` would). The message says why and where, never what the
 * text holds (a secret may sit beside the fault).
 */
export class JsonTextError extends Error {
  constructor(
    readonly kind: 'syntax' | 'depth',
    readonly reason: string,
    readonly at: JsonTextPosition,
    readonly path?: string,
  ) {
    super(
      path === undefined
        ? `${reason} at line ${at.line}, column ${at.column}`
        : `${path} ${reason} (line ${at.line}, column ${at.column})`,
    );
    this.name = 'JsonTextError';
  }
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Strings at least this long may be file bytes; `JsonScan.besidesLongStrings` leaves them out. */
export const LONG_STRING = 64;

/** What one pass over a JSON text found, before any parsing. */
export interface JsonScan {
  /** The offset of the first `[` or `{` (outside strings) that opens level `maxDepth + 1`, or -1. */
  deepAt: number;
  /** The characters of the text besides the content of strings of `LONG_STRING` characters or more. */
  besidesLongStrings: number;
}

/**
 * One pass over the characters of a JSON text, no allocation: it runs before
 * `JSON.parse`, whose cost grows with the number of values and with nesting
 * (8 MiB of `[` held V8 for seconds before it failed), so that what is
 * refused for depth or size is refused in linear time, at a few ns a
 * character. It does not check syntax; a text it passes still goes through
 * `JSON.parse`. Stops at the first level too deep.
 */
export function scanJson(text: string, maxDepth = MAX_JSON_DEPTH): JsonScan {
  let depth = 0;
  let inLong = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: to the next quote not escaped by a backslash.
      const start = i;
      i = closingQuote(text, i + 1);
      const length = i - start - 1;
      if (length >= LONG_STRING) inLong += length;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return { deepAt: i, besidesLongStrings: n - inLong };
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return { deepAt: -1, besidesLongStrings: n - inLong };
}

/** The offset of the quote that closes a string whose content starts at `from` (the text's length if none). */
function closingQuote(text: string, from: number): number {
  for (let q = text.indexOf('"', from); q !== -1; q = text.indexOf('"', q + 1)) {
    // Escaped when an odd number of backslashes precede it.
    let b = q - 1;
    while (b >= from && text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q;
  }
  return text.length;
}

/** `scanJson`'s depth answer alone: the offset of the first value too deep, or -1. */
export const tooDeepAt = (text: string, maxDepth = MAX_JSON_DEPTH): number => scanJson(text, maxDepth).deepAt;

/**
 * Parses a JSON text from outside (a request body, a provider's or a remote's
 * answer, a registry file): nesting deeper than `maxDepth` is refused before
 * parsing, in linear time, naming the value (`root` is the document's own
 * name in that path: `body`, or '' when its members are named alone); a
 * syntax error names its line and column. Throws `JsonTextError`. A `scan`
 * the caller already made is not made again.
 */
export function parseJsonText(text: string, opts: { maxDepth?: number; root?: string; scan?: JsonScan } = {}): unknown {
  const maxDepth = opts.maxDepth ?? MAX_JSON_DEPTH;
  const deepAt = (opts.scan ?? scanJson(text, maxDepth)).deepAt;
  if (deepAt !== -1) throw tooDeep(text, deepAt, maxDepth, opts.root ?? 'body');
  try {
    return JSON.parse(text);
  } catch {
    throw syntaxError(text);
  }
}

/** The error for a value that opens one level too many at `offset`, named by its path (read up to there only). */
export function tooDeep(text: string, offset: number, maxDepth: number, root = 'body'): JsonTextError {
  // getLocation reads the text only up to `offset`, so it never goes deeper than maxDepth + 1.
  const segments = getLocation(text, offset).path;
  return new JsonTextError(
    'depth',
    `is nested deeper than ${maxDepth} levels`,
    positionOf(text, offset),
    formatPath(root, segments),
  );
}

/** The most path segments an error names (the rest as `…`), and the longest key it repeats. */
const MAX_SEGMENTS = 12;
const MAX_KEY = 64;

/** `root.a.b[3].c` as `findJsonProblem` names paths; long paths and keys shortened. */
function formatPath(root: string, segments: (string | number)[]): string {
  let out = root;
  for (const seg of segments.slice(0, MAX_SEGMENTS)) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const key = seg.length > MAX_KEY ? `${seg.slice(0, MAX_KEY)}…` : seg;
      out += out === '' ? key : `.${key}`;
    }
  }
  if (segments.length > MAX_SEGMENTS) out += '…';
  return out || root;
}

/** Why and where a text that `JSON.parse` refused is not JSON (its nesting already bounded). */
function syntaxError(text: string): JsonTextError {
  const errors: ParseError[] = [];
  parseTolerant(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  // The two parsers agree on JSON; should they not, the end of the text is the honest answer.
  if (!first) return new JsonTextError('syntax', 'not valid JSON', positionOf(text, text.length));
  return new JsonTextError(
    'syntax',
    `not valid JSON: ${SYNTAX_REASONS[printParseErrorCode(first.error)] ?? 'unexpected input'}`,
    positionOf(text, first.offset),
  );
}

/** jsonc-parser's error codes in words. */
const SYNTAX_REASONS: Partial<Record<ReturnType<typeof printParseErrorCode>, string>> = {
  InvalidSymbol: 'unexpected token',
  InvalidNumberFormat: 'malformed number',
  PropertyNameExpected: 'property name (a double-quoted string) expected',
  ValueExpected: 'value expected',
  ColonExpected: "':' expected",
  CommaExpected: "',' expected",
  CloseBraceExpected: "'}' expected",
  CloseBracketExpected: "']' expected",
  EndOfFileExpected: 'end of input expected',
  InvalidCommentToken: 'comments are not JSON',
  UnexpectedEndOfComment: 'comments are not JSON',
  UnexpectedEndOfString: 'unterminated string',
  UnexpectedEndOfNumber: 'malformed number',
  InvalidUnicode: 'malformed \\u escape',
  InvalidEscapeCharacter: 'malformed escape',
  InvalidCharacter: 'control character in a string',
};

/** 1-based line and column of an offset (UTF-16 code units, as editors count columns). */
export function positionOf(text: string, offset: number): JsonTextPosition {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { offset, line, column: offset - lineStart + 1 };
}

/**
 * Why a text is not JSON, without quoting it: V8's `SyntaxError` message
 * repeats the text around the fault (a registry file's secret, say), so only
 * the position is kept.
 */
export function jsonSyntaxProblem(err: unknown): string {
  if (err instanceof JsonTextError) return err.message;
  const at = /position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
  return at ? `not valid JSON (near position ${at})` : 'not valid JSON';
}
