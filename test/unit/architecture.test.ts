import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

/**
 * The shape of src/, checked: modules in layers, each importing only from
 * its own layer or the ones below (docs/architecture.md draws the same map),
 * no import cycle between modules or between files, and files of a size a
 * reader takes in at once.
 */
const LAYERS: string[][] = [
  ['version.ts', 'config', 'tracing'],
  ['common'],
  ['database', 'metrics', 'secrets', 'usage'],
  ['tenants', 'outbound-auth', 'tenant-registry'],
  ['registry', 'a2a-outbound', 'mcp', 'health'],
  ['orchestrator', 'budgets', 'stats'],
  ['tasks'],
  ['a2a-wire', 'push', 'quotas'],
  ['a2a-inbound', 'native-api', 'admin', 'openapi', 'console'],
  ['app.module.ts', 'app.factory.ts', 'entities.ts', 'main.ts', 'tracing.ts', 'cli'],
];
/** The most lines a file in src/ may have. */
const MAX_LINES = 330;

const SRC = resolve('src');

function sources(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** The module a file belongs to: its first folder under src/, or the file's own name at the top. */
const moduleOf = (file: string): string => relative(SRC, file).split('/')[0];

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
}

function imports(files: string[]): Import[] {
  return files.flatMap((from) =>
    [...readFileSync(from, 'utf8').matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'(\.[^']+)'/gm)].map(
      (m) => ({ from, to: resolve(dirname(from), m[2]).replace(/\.js$/, '.ts'), typeOnly: Boolean(m[1]) }),
    ),
  );
}

/** The cycles of a directed graph (each as a path that returns to its start), by depth-first search. */
function cycles(edges: Map<string, Set<string>>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    path.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') found.push([...path.slice(path.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    path.pop();
    state.set(n, 'done');
  };
  for (const n of edges.keys()) if (!state.has(n)) visit(n);
  return found;
}

describe('the shape of src/', () => {
  const files = sources();
  const all = imports(files);
  const layerOf = new Map(LAYERS.flatMap((mods, i) => mods.map((m) => [m, i] as const)));

  it('every module has a layer', () => {
    const unknown = [...new Set(files.map(moduleOf))].filter((m) => !layerOf.has(m));
    assert.deepEqual(unknown, [], 'add these to LAYERS (and to docs/architecture.md)');
  });

  it('no module imports from a layer above its own', () => {
    const up = all
      .filter((i) => (layerOf.get(moduleOf(i.to)) ?? 0) > (layerOf.get(moduleOf(i.from)) ?? 0))
      .map((i) => `${relative(SRC, i.from)} → ${relative(SRC, i.to)}`);
    assert.deepEqual(up, []);
  });

  it('no import cycle between modules, nor between files', () => {
    const byModule = new Map<string, Set<string>>();
    const byFile = new Map<string, Set<string>>();
    for (const i of all) {
      const [a, b] = [moduleOf(i.from), moduleOf(i.to)];
      if (a !== b) byModule.set(a, (byModule.get(a) ?? new Set()).add(b));
      // A cycle of type-only imports costs nothing at run time.
      if (!i.typeOnly) byFile.set(i.from, (byFile.get(i.from) ?? new Set()).add(i.to));
    }
    assert.deepEqual(cycles(byModule), [], 'modules');
    assert.deepEqual(
      cycles(byFile).map((c) => c.map((f) => relative(SRC, f))),
      [],
      'files',
    );
  });

  it(`no file over ${MAX_LINES} lines`, () => {
    const long = files
      .map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([, n]) => n > MAX_LINES);
    assert.deepEqual(long, []);
  });
});

describe('the event log’s integrity without a foreign key', () => {
  it('every statement that inserts events inserts them only for the task rows it writes itself, in a CTE `t`', () => {
    const inserts: string[] = [];
    for (const file of sources()) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/insert\s+into\s+"?task_events"?/gi)) {
        const where = `${relative(SRC, file)}:${text.slice(0, m.index).split('\n').length}`;
        inserts.push(where);
        // The INSERT's own SELECT up to the end of its CTE, and the nearest CTE `t` above it.
        const body = text.slice(m.index).split(/\n\s*\)|`/)[0];
        const t = text.slice(0, m.index).lastIndexOf('t AS (');
        assert.match(body, /\bFROM t\b/, `${where}: events are selected from the rows \`t\` wrote`);
        assert.ok(t >= 0, `${where}: no CTE \`t\` above it`);
        assert.match(text.slice(t + 6), /^\s*(?:INSERT INTO|UPDATE) a2a_tasks\b/, `${where}: \`t\` writes a2a_tasks`);
      }
      // Nor through the ORM: the entity is only registered.
      if (!file.endsWith('entities.ts') && !file.endsWith('task-event.entity.ts')) {
        assert.doesNotMatch(text, /\bTaskEventEntity\b/, `${relative(SRC, file)} uses TaskEventEntity`);
      }
    }
    // A new place that writes events is looked at here first (see migration TaskEventsCascade).
    assert.deepEqual(inserts.map((w) => w.split(':')[0]).sort(), [
      'tasks/statements/append.sql.ts',
      'tasks/statements/continue.sql.ts',
      'tasks/statements/create.sql.ts',
      'tasks/statements/end.sql.ts',
    ]);
  });
});

describe('statements', () => {
  it('build JSON arrays with to_jsonb(array_agg(…)), never jsonb_agg (quadratic in an object’s keys when embedded)', () => {
    // The embedded database runs in the server's process: a message whose metadata had 80,000 keys held every other
    // request for 5 s in jsonb_agg, and for 0.1 s in to_jsonb(array_agg(…)). Migrations run before the server serves.
    const uses = sources()
      .filter((f) => !relative(SRC, f).startsWith('database/migrations/'))
      .flatMap((f) =>
        [...readFileSync(f, 'utf8').matchAll(/\bjsonb_agg\s*\(/gi)].map((m) => `${relative(SRC, f)}@${m.index}`),
      );
    assert.deepEqual(uses, []);
  });
});

describe('libraries a server may never use are loaded on first use', () => {
  /** Loaded only when configured or first needed: gRPC (`ARBITER_GRPC_PORT`, a gRPC upstream), the MCP client. */
  const LATER = [/^@grpc\//, /^@nestjs\/microservices/, /^@a2a-js\/sdk\/client\/grpc/, /^@modelcontextprotocol\//];

  it('nothing the application imports at start reaches them (the compiled program, static imports only)', () => {
    const DIST = resolve('dist/src');
    const seen = new Set<string>();
    const packages = new Map<string, string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/^(?:import|export)\s[^'";]*?from\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
        const spec = m[1] ?? m[2];
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
        else if (!spec.startsWith('node:')) packages.set(spec, relative(DIST, file));
      }
    };
    visit(join(DIST, 'app.factory.js'));
    visit(join(DIST, 'main.js'));
    assert.ok(packages.has('@nestjs/core') && seen.size > 100, 'the walk follows the program');
    const early = [...packages].filter(([spec]) => LATER.some((re) => re.test(spec)));
    assert.deepEqual(early, [], 'imported at start (make it a dynamic import where it is first needed)');
  });
});
