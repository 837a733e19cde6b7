import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'wasmgate-plugin/cache_key';
import { cacheKey } from './app.js';

const body = { messages: [{ role: 'user', content: 'hi' }] };

test('a model never cached bypasses', () => {
  assert.deepEqual(cacheKey.key('{"never": ["m"]}', request(body, { model: 'm' })), { tag: 'bypass' });
});

test('temperature 0 is left out', () => {
  const decision = cacheKey.key('{}', request({ ...body, temperature: 0 }));
  assert.deepEqual(JSON.parse(decision.val), body);
  assert.deepEqual(cacheKey.key('{}', request(body)), { tag: 'keep' });
});

test('unknown options are refused', () => {
  assert.throws(() => cacheKey.validate('{"nver": []}'), (e) => e.payload.key === 'nver');
});
