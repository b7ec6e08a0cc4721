import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyConstitution,
  CONSTITUTION_DEFAULTS,
  ConstitutionDto,
  descriptiveSkills,
  toolGrants,
} from '../../src/registry/constitution.js';
import { DomainError } from '../../src/common/errors.js';
import { validateAs } from '../../src/common/validation.js';
import { decodeCursor, encodeCursor } from '../../src/common/cursor.js';

describe('constitution', () => {
  it('fills defaults, name falls back to the id', () => {
    const c = applyConstitution('helper', {}, {});
    assert.deepEqual(c, { name: 'helper', ...CONSTITUTION_DEFAULTS });
  });

  it('a patch replaces given fields, null resets, absent keeps', () => {
    const base = applyConstitution('a', {}, { role: 'r', goal: 'g', temperature: 1.2 });
    const next = applyConstitution('a', base, { goal: 'g2', temperature: null, name: null });
    assert.equal(next.role, 'r');
    assert.equal(next.goal, 'g2');
    assert.equal(next.temperature, CONSTITUTION_DEFAULTS.temperature);
    assert.equal(next.name, 'a');
  });

  it('descriptive capabilities never restrict tools', () => {
    const c = applyConstitution('a', {}, { capabilities: ['summarising', 'legal review'] });
    assert.deepEqual(toolGrants(c), []);
    assert.deepEqual(descriptiveSkills(c), ['summarising', 'legal review']);
    const d = applyConstitution('a', {}, { capabilities: ['/fetch', 'research'] });
    assert.deepEqual(toolGrants(d), ['/fetch']);
  });

  it('validation names nested fields with the prefix', async () => {
    await assert.rejects(validateAs(ConstitutionDto, { temperature: 'hot', extra: 1 }, 'agent_def'), (err) => {
      assert.ok(err instanceof DomainError);
      assert.deepEqual(err.details?.map((d) => d.field).sort(), ['agent_def.extra', 'agent_def.temperature']);
      return true;
    });
  });
});

describe('cursors', () => {
  it('round-trip, and refuse anything not issued here', () => {
    const c = encodeCursor({ after: 'abc' });
    assert.deepEqual(decodeCursor(c, ['after']), { after: 'abc' });
    assert.equal(decodeCursor(undefined, ['after']), undefined);
    for (const bad of [
      '%%%',
      encodeCursor({ other: 'x' }),
      Buffer.from('[1]').toString('base64url'),
      'a'.repeat(600),
    ]) {
      assert.throws(() => decodeCursor(bad, ['after']), DomainError);
    }
  });
});
