import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CONFIG_REFERENCE_PATH, readSettingDocs, renderConfigReference } from '../../scripts/config-reference.js';
import { settingsOf } from '../../src/config/settings/setting-registry.js';
import { SETTINGS_AREAS } from '../../src/config/settings/settings-areas.js';

describe('configuration reference (docs/configuration.md)', () => {
  it('every setting and every area has a doc comment', () => {
    const docs = readSettingDocs();
    for (const { schema } of SETTINGS_AREAS) {
      assert.ok(docs.get(schema.name)?.text, `${schema.name} has no doc comment`);
      for (const spec of settingsOf(schema)) {
        assert.ok(
          docs.get(`${schema.name}.${spec.key}`)?.text,
          `${spec.env} (${schema.name}.${spec.key}) has no doc comment`,
        );
      }
    }
  });

  it('lists every variable and flag with its default and range', async () => {
    const page = await renderConfigReference();
    for (const { schema } of SETTINGS_AREAS) {
      for (const spec of settingsOf(schema)) assert.ok(page.includes(`| \`${spec.env}\``), spec.env);
    }
    assert.match(page, /\| `PORT` \/ `--port N` +\| `8080` +\| integer 0–65535 +\| Listening port/);
    assert.match(page, /\| `ARBITER_HOME` +\| `~\/\.arbiter` +\|/, 'no machine-specific default');
    assert.match(page, /\| `OPENAI_API_KEY` .*Secret: never logged or shown\. +\|/);
  });

  it('is up to date: run `npm run docs:config` after changing a setting', async () => {
    const committed = readFileSync(CONFIG_REFERENCE_PATH, 'utf8');
    assert.ok(committed === (await renderConfigReference()), 'docs/configuration.md is stale: run npm run docs:config');
  });
});
