import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EgressError } from '../../src/common/net/egress.js';
import { RemoteCallError } from '../../src/a2a-outbound/egress-fetch.js';
import { describeCardError, transientCardError, unusableCard } from '../../src/a2a-outbound/remote-errors.js';

describe('a card no client can be built from', () => {
  it('is the card’s fault for a refused address or no interface, and not retried', () => {
    for (const err of [
      new EgressError('blocked', '10.0.0.1 is a private address (blocked)'),
      new EgressError('bad_url', 'scheme ftp is not allowed for gRPC'),
      new Error('No compatible transport found, available transports: JSONRPC,HTTP+JSON,GRPC'),
    ]) {
      const out = unusableCard(err);
      assert.ok(out instanceof RemoteCallError);
      assert.equal(out.message, `no usable interface in the card (${err.message})`);
      assert.equal(transientCardError(out), false, err.message);
    }
    assert.equal(
      describeCardError(unusableCard(new EgressError('blocked', '10.0.0.1 is a private address (blocked)'))),
      'ERR: card fetch failed: no usable interface in the card (10.0.0.1 is a private address (blocked))',
    );
  });

  it('is the moment’s when a gRPC host cannot be resolved now or times out: kept as it is, and retryable', () => {
    for (const err of [
      new EgressError('dns', 'cannot resolve upstream.example'),
      new EgressError('timeout', 'timed out'),
      new EgressError('transport', 'connection reset'),
    ]) {
      assert.equal(unusableCard(err), err);
      assert.equal(transientCardError(unusableCard(err)), true, err.message);
    }
    assert.equal(
      describeCardError(unusableCard(new EgressError('dns', 'cannot resolve upstream.example'))),
      'ERR: card fetch failed: cannot resolve upstream.example',
    );
  });
});
