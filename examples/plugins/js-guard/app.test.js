import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text } from 'wasmgate-plugin/guard';
import { guard } from './app.js';

const OPTIONS = '{"projects": ["OPS", "SEC"]}';

const released = (verdicts) =>
  verdicts
    .map((v) => {
      assert.equal(v.tag, 'release');
      return v.val.events.map((e) => e.val.text).join('');
    })
    .join('');

test('ticket keys in a request are rewritten before it leaves', () => {
  const request = JSON.stringify({ messages: [{ role: 'user', content: 'Is OPS-1234 fixed, or SEC-7? MOPS-1 is not ours.' }] });
  const verdict = guard.checkRequest(OPTIONS, request);
  assert.equal(verdict.tag, 'rewrite');
  const body = JSON.parse(verdict.val.body);
  assert.equal(body.messages[0].content, 'Is [ticket] fixed, or [ticket]? MOPS-1 is not ours.');
  assert.deepEqual(verdict.val.findings, [{ kind: 'ticket', count: 2 }]);
  assert.equal(guard.checkRequest(OPTIONS, '{"messages": [{"role": "user", "content": "Hi"}]}').tag, 'allow');
});

test('a key split over deltas is masked and nothing else changes', () => {
  const answer = new guard.AnswerGuard(OPTIONS, '{}');
  const verdicts = [answer.push([text('See OP')]), answer.push([text('S-12')]), answer.push([text('34 today.')]), answer.finish()];
  assert.equal(released(verdicts), 'See [ticket] today.');
});

test('what is held stays within the declared bound', () => {
  const answer = new guard.AnswerGuard(OPTIONS, '{}');
  const verdict = answer.push([text('x'.repeat(300))]);
  assert.ok(verdict.val.heldChars <= guard.validate(OPTIONS).maxHoldChars);
  assert.equal(released([verdict, answer.finish()]), 'x'.repeat(300));
});

test('no projects is refused', () => {
  assert.throws(() => guard.validate('{"projects": []}'), (e) => e.payload.key === 'projects');
});
