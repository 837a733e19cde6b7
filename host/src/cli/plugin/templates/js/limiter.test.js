import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'wasmgate-plugin/limiter';
import { limiter } from './app.js';

test('the request over the limit is refused', () => {
  const tags = [1, 2, 3].map(() => limiter.check('{"per_minute": 2}', request({ scopeKey: 'user:u1' })).tag);
  assert.deepEqual(tags, ['allow', 'allow', 'deny']);
  assert.equal(limiter.check('{"per_minute": 2}', request({ scopeKey: 'user:u2' })).tag, 'allow');
});

test('zero is refused', () => {
  assert.throws(() => limiter.validate('{"per_minute": 0}'), (e) => e.payload.key === 'per_minute');
});
