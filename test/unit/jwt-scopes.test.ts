import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopesOf } from '../../src/tenants/identity/jwt-principals.service.js';
import type { TrustedIssuer } from '../../src/tenants/identity/trusted-issuer.js';

const issuer = {
  scopeMap: { 'agents.read': ['agents:read'], invoke: ['a2a:invoke', 'tasks:read'] },
} as unknown as TrustedIssuer;

describe("a JWT's scopes", () => {
  it('are the scope names it carries and what the issuer maps, in the order of the scope list', () => {
    assert.deepEqual(scopesOf({ scope: 'invoke agents.read' }, issuer), ['a2a:invoke', 'agents:read', 'tasks:read']);
    assert.deepEqual(scopesOf({ scp: ['agents:write', 'unknown'] }, issuer), ['agents:write']);
  });

  it("a scope named like one of an object's own members maps to nothing instead of failing the request", () => {
    for (const scope of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
      assert.deepEqual(scopesOf({ scope: `${scope} invoke` }, issuer), ['a2a:invoke', 'tasks:read'], scope);
    }
  });
});
