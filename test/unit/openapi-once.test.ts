import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { once } from '../../src/openapi/openapi.js';

describe('the OpenAPI document is built once (src/openapi/openapi.ts)', () => {
  it('its first build is kept, and a build that failed is not tried again: each call throws the same error', () => {
    let builds = 0;
    const doc = once(() => ({ n: ++builds }));
    assert.deepEqual([doc(), doc(), doc()], [{ n: 1 }, { n: 1 }, { n: 1 }]);
    assert.equal(builds, 1);

    let tries = 0;
    const broken = new Error('a DTO without a schema');
    const failing = once(() => {
      tries++;
      throw broken;
    });
    for (let i = 0; i < 3; i++) assert.throws(failing, (err) => err === broken);
    assert.equal(tries, 1);
  });
});
