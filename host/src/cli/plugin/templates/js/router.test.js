import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, target } from 'wasmgate-plugin/router';
import { router } from './app.js';

const targets = [target('a/big', { inputPrice: 5 }), target('b/small', { inputPrice: 0.1 })];

test('premium users keep config order', () => {
  assert.deepEqual([...router.route('{}', request({ userTags: ['premium'] }), targets)], [0, 1]);
});

test('others get the cheapest first', () => {
  assert.deepEqual([...router.route('{}', request(), targets)], [1, 0]);
});

test('unknown options are refused', () => {
  assert.throws(() => router.validate('{"premium": "x"}', []), (e) => e.payload.key === 'premium');
});
