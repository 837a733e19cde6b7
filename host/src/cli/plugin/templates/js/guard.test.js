import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text } from 'wasmgate-plugin/guard';
import { guard } from './app.js';

const OPTIONS = '{"words": ["falcon"]}';

test('requests that mention a word are refused', () => {
  const request = JSON.stringify({ messages: [{ role: 'user', content: 'About Falcon?' }] });
  assert.equal(guard.checkRequest(OPTIONS, request).tag, 'refuse');
  assert.equal(guard.checkRequest(OPTIONS, '{"messages": [{"role": "user", "content": "Hi"}]}').tag, 'allow');
});

test('a word split over deltas stops the answer', () => {
  const answer = new guard.AnswerGuard(OPTIONS, '{}');
  const first = answer.push([text('the fal')]);
  assert.equal(first.tag, 'release');
  assert.ok(first.val.heldChars <= guard.validate(OPTIONS).maxHoldChars);
  assert.equal(answer.push([text('con flies')]).tag, 'stop');
});

test('an answer without the word comes out whole', () => {
  const answer = new guard.AnswerGuard(OPTIONS, '{}');
  const released = [answer.push([text('the fal')]), answer.push([text('l of rain')]), answer.finish()];
  assert.ok(released.every((v) => v.tag === 'release'));
  assert.equal(released.flatMap((v) => v.val.events.map((e) => e.val.text)).join(''), 'the fall of rain');
});

test('no words is refused', () => {
  assert.throws(() => guard.validate('{"words": []}'), (e) => e.payload.key === 'words');
});
