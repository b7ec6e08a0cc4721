import { relative } from 'node:path';

/**
 * What `npm test` did not run, and how to run it. The test runner's own
 * summary only counts skips ("skipped 4"), and a suite skipped as a whole
 * (every suite that needs a PostgreSQL server, without `DATABASE_URL`) is
 * one of them however many tests it holds. `run-reporter.ts` writes one
 * line per skipped suite or test (among its timing lines); `scripts/run-tests.mjs` prints
 * `summariseSkips` of them after the run.
 */
export interface Skipped {
  /** The source file, relative to the project (`test/e2e/leases.e2e.test.ts`). */
  file: string;
  /** The suite's or test's name. */
  name: string;
  suite: boolean;
  /** The reason the test gave (`{ skip: '…' }`), or '' when it gave none. */
  reason: string;
}

/** What a skip reason asks for, and the prefix of the command that runs those tests (the first match wins). */
const HINTS: { pattern: RegExp; needs: string; prefix: string }[] = [
  {
    pattern: /needs a PostgreSQL server/,
    needs:
      'DATABASE_URL naming a PostgreSQL server where its user may create databases (each file makes and drops its own)',
    prefix: 'DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres ',
  },
  { pattern: /embedded only/, needs: 'the embedded database: DATABASE_URL unset', prefix: 'env -u DATABASE_URL ' },
  { pattern: /TEST_BROWSER=off/, needs: 'TEST_BROWSER unset', prefix: 'env -u TEST_BROWSER ' },
  { pattern: /TEST_DOCS=off/, needs: 'TEST_DOCS unset', prefix: 'env -u TEST_DOCS ' },
  { pattern: /Chromium/, needs: 'Chromium at /usr/bin/chromium (Debian: apt-get install chromium)', prefix: '' },
  { pattern: /nginx/, needs: 'nginx (Debian: apt-get install nginx-light)', prefix: '' },
  {
    pattern: /reference a2a/,
    needs: 'the A2A reference documents beside the project (../shared/reference)',
    prefix: '',
  },
];

/** How to run the tests skipped for `reason`: what they need (when known), and the command. */
export function howToRun(reason: string, files: string[]): string[] {
  const hint = HINTS.find((h) => h.pattern.test(reason));
  const command = `${hint?.prefix ?? ''}npm test -- ${files.join(' ')}`;
  return hint
    ? [`they need ${hint.needs}; run them with:`, `  ${command}`]
    : ['run them (once that holds) with:', `  ${command}`];
}

/** One skip as the reporter records it: from a `test:pass` event's data that carries `skip`. */
export function skippedFrom(
  data: { name: string; file?: string; skip?: string | boolean; details?: { type?: string } },
  cwd = process.cwd(),
): Skipped | undefined {
  if (data.skip === undefined || data.skip === false) return undefined;
  return {
    file: sourceOf(data.file ?? '?', cwd),
    name: data.name,
    suite: data.details?.type === 'suite',
    reason: typeof data.skip === 'string' ? data.skip : '',
  };
}

/** `…/dist/test/e2e/x.test.js` → `test/e2e/x.test.ts`: the file a reader opens. */
function sourceOf(file: string, cwd: string): string {
  const rel = file.startsWith('/') ? relative(cwd, file) : file;
  return rel.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

/** Parses the reporter's lines (one JSON `Skipped` each); blank or broken lines are ignored. */
export function parseSkipped(text: string): Skipped[] {
  const out: Skipped[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const entry = JSON.parse(line) as Partial<Skipped>;
      if (typeof entry.reason === 'string') out.push(entry as Skipped); // not a timing line
    } catch {
      // a line cut off by a killed run: the rest still counts
    }
  }
  return out;
}

/** The `npm test -- …` filter that selects `file` (`test/e2e/leases.e2e.test.ts` → `e2e/leases`). */
function filterOf(file: string): string {
  return file.replace(/^test\//, '').replace(/\.[^/]*$/, '');
}

/** The lines to print: nothing when nothing was skipped; else each reason, its suites and tests, and how to run them. */
export function summariseSkips(skipped: Skipped[]): string[] {
  if (skipped.length === 0) return [];
  const byReason = new Map<string, Skipped[]>();
  for (const s of skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s]);
  const suites = skipped.filter((s) => s.suite).length;
  const lines = [
    `skipped: ${count(suites, 'suite')} (none of their tests ran) and ${count(skipped.length - suites, 'test')}, by reason:`,
  ];
  for (const [reason, items] of [...byReason].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${reason || '(no reason given)'}`);
    for (const s of [...items].sort((a, b) => a.file.localeCompare(b.file) || a.name.localeCompare(b.name)))
      lines.push(`    ${s.suite ? 'suite' : 'test'} "${s.name}" (${s.file})`);
    const files = [...new Set(items.map((s) => filterOf(s.file)))].sort();
    lines.push(...howToRun(reason, files).map((l) => `    ${l}`));
  }
  return lines;
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
