import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, settlement } from 'wasmgate-plugin/limiter';
import { limiter } from './app.js';

const options = '{"daily_tokens": 1000}';

test('a user over the quota is refused with a friendly message, others are not', () => {
  const alice = request({ userId: 'alice', estimatedInputTokens: 100, maxOutputTokens: 300 });
  assert.equal(limiter.check(options, alice).tag, 'allow');
  limiter.settle(options, alice, settlement({ inputTokens: 100, outputTokens: 700 }));
  assert.equal(limiter.check(options, alice).tag, 'deny');
  const denied = limiter.check(options, alice);
  assert.equal(denied.val.code, 'insufficient-quota');
  assert.match(denied.val.message, /800 of your 1000 tokens for today/);
  assert.equal(limiter.check(options, request({ userId: 'bob', estimatedInputTokens: 10, maxOutputTokens: 100 })).tag, 'allow');
});

test('a failed request gives its reservation back', () => {
  const carol = request({ userId: 'carol', estimatedInputTokens: 500, maxOutputTokens: 400 });
  assert.equal(limiter.check(options, carol).tag, 'allow');
  limiter.settle(options, carol, settlement({ succeeded: false }));
  assert.equal(limiter.check(options, carol).tag, 'allow');
});

test('the quota must be positive', () => {
  assert.throws(() => limiter.validate('{"daily_tokens": 0}'), (e) => e.payload.key === 'daily_tokens');
});
