import '../helpers/quiet.js';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RegistryFile, type RegistryContent } from '../../src/common/registry-file/registry-file.js';
import {
  readEntries,
  readEntry,
  RegistryFileError,
  resolveEnvRefs,
} from '../../src/common/registry-file/registry-fields.js';

interface Note {
  name: string;
  text: string;
}

/** The smallest registry: `{ "notes": { "<name>": { "text" } | { "text_env" } } }`, as a new registry would be built. */
class NoteRegistry extends RegistryFile<Note> {
  constructor(path: string, env: NodeJS.ProcessEnv) {
    super(
      { logger: 'NoteRegistry', registry: 'note registry', entries: 'note', entry: 'note', none: 'no notes' },
      () => path,
      env,
    );
  }

  protected parse(text: string, env: NodeJS.ProcessEnv): RegistryContent<Note> {
    const entries = new Map<string, Note>();
    const warnings: string[] = [];
    for (const [name, value] of Object.entries(readEntries(text, 'notes'))) {
      const entry = readEntry(name, value, `notes.${name}`, /^[a-z]+$/);
      if (typeof entry.text_env === 'string') {
        const { values, missing } = resolveEnvRefs({ text: entry.text_env }, env);
        for (const [, variable] of missing) warnings.push(`notes.${name}: ${variable} is not set`);
        entries.set(name, { name, text: values.text ?? '' });
        continue;
      }
      if (typeof entry.text !== 'string') throw new RegistryFileError(`notes.${name}.text must be a string`);
      entries.set(name, { name, text: entry.text });
    }
    return { entries, warnings };
  }
}

describe('registry files: the loader', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'arbiter-registry-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const fresh = (name: string, env: NodeJS.ProcessEnv = {}) => {
    const path = join(dir, `${name}.json`);
    return {
      path,
      registry: new NoteRegistry(path, env),
      write: (doc: unknown) => writeFileSync(path, JSON.stringify(doc)),
    };
  };

  it('a missing file is an empty registry, not an error', () => {
    const { registry } = fresh('missing');
    assert.deepEqual(registry.list(), []);
    assert.equal(registry.lastError, null);
  });

  it('an edit is seen on the next use, without a restart; entries are listed by name', () => {
    const { registry, write } = fresh('edit');
    write({ notes: { b: { text: 'two' }, a: { text: 'one' } } });
    assert.deepEqual(
      registry.list().map((n) => n.name),
      ['a', 'b'],
    );
    write({ notes: { c: { text: 'three, longer' } } });
    assert.equal(registry.get('a'), undefined);
    assert.deepEqual(registry.get('c'), { name: 'c', text: 'three, longer' });
  });

  it('a malformed file keeps the last good content in force and says which field is bad, until it is fixed', () => {
    const { path, registry, write } = fresh('bad');
    write({ notes: { a: { text: 'good' } } });
    assert.equal(registry.get('a')?.text, 'good');
    write({ notes: { a: { text: 42 } } });
    assert.equal(registry.get('a')?.text, 'good', 'the last good registry stays');
    assert.equal(registry.lastError, `${path}: notes.a.text must be a string`);
    write({ notes: { 'Bad!': {} } });
    assert.equal(registry.list().length, 1);
    assert.equal(registry.lastError, `${path}: notes.Bad!: a name must match [a-z]+`);
    write({ notes: { a: { text: 'fixed' } } });
    assert.equal(registry.get('a')?.text, 'fixed');
    assert.equal(registry.lastError, null);
  });

  it('a file that is not JSON names the position, never the text (a secret may be there)', () => {
    const { path, registry } = fresh('syntax');
    writeFileSync(path, '{"notes": {"a": {"text": "sk_SECRET_value" oops}}}');
    assert.deepEqual(registry.list(), []);
    assert.match(registry.lastError ?? '', /^.*syntax\.json: not valid JSON/);
    assert.ok(!registry.lastError?.includes('SECRET'), registry.lastError ?? '');
  });

  it('a file that cannot be read is reported without its error text, and the last good content stays', () => {
    const { path, registry, write } = fresh('unreadable');
    write({ notes: { a: { text: 'good' } } });
    assert.equal(registry.list().length, 1);
    rmSync(path);
    mkdirSync(path); // stat works, reading fails (EISDIR)
    assert.equal(registry.list().length, 1);
    assert.equal(registry.lastError, `${path}: cannot read it`);
    rmSync(path, { recursive: true });
    assert.deepEqual(registry.list(), [], 'a removed file empties the registry');
    assert.equal(registry.lastError, null);
  });

  it('a path that cannot be looked up says why (its code)', () => {
    const { path, write } = fresh('lookup');
    write({ notes: {} });
    const under = new NoteRegistry(join(path, 'inner.json'), {});
    assert.deepEqual(under.list(), []);
    assert.equal(under.lastError, `${join(path, 'inner.json')}: cannot read it (ENOTDIR)`);
  });

  it('*_env references read the environment given; an unset one is a warning, not a failure', () => {
    const { registry, write } = fresh('env', { NOTE_TEXT: 'from the environment', EMPTY: '' });
    write({ notes: { a: { text_env: 'NOTE_TEXT' }, b: { text_env: 'EMPTY' }, c: { text_env: 'NOT_SET' } } });
    assert.deepEqual(
      registry.list().map((n) => n.text),
      ['from the environment', '', ''],
    );
    assert.equal(registry.lastError, null);
    assert.deepEqual(resolveEnvRefs({ x: 'A', y: 'B' }, { A: '1' }), { values: { x: '1' }, missing: [['y', 'B']] });
  });
});
