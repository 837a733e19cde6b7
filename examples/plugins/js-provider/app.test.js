import assert from 'node:assert/strict';
import { test } from 'node:test';
import { provider } from './app.js';

const config = (options = '{}') => ({ name: 'js', baseUrl: 'http://llm.local/v1', apiKey: 'sk-1', models: [], options });
const call = (path, headers = []) => ({ method: 'GET', path, headers });
const encoder = new TextEncoder();

test('chat goes upstream with the key', () => {
  const request = { operation: 'chat-completions', model: 'm', body: '{"model":"m","messages":[]}', stream: false };
  const http = provider.prepare(config('{"headers": {"x-org": "o1"}}'), request).val;
  assert.equal(http.url, 'http://llm.local/v1/chat/completions');
  assert.deepEqual(http.headers.slice(1), [['authorization', 'Bearer sk-1'], ['x-org', 'o1']]);
});

test('a pass-through call gets the key, and the beta header where the upstream wants it', () => {
  assert.deepEqual(provider.passthrough(config(), call('/fine_tuning/jobs')).headers, [['authorization', 'Bearer sk-1']]);
  const stores = provider.passthrough(config('{"beta": "assistants=v9"}'), call('/vector_stores/vs_1'));
  assert.deepEqual(stores.headers, [['authorization', 'Bearer sk-1'], ['openai-beta', 'assistants=v9']]);
  // The client's own beta header wins; the host sends it on.
  const own = provider.passthrough(config(), call('/vector_stores', [['openai-beta', 'assistants=v1']]));
  assert.deepEqual(own.headers, [['authorization', 'Bearer sk-1']]);
});

test('a pass-through answer\'s usage is read whole or from a stream\'s tail', () => {
  const whole = encoder.encode('{"model":"gpt","usage":{"prompt_tokens":12,"completion_tokens":3}}');
  const read = provider.passthroughUsage(config(), call('/x'), { status: 200, headers: [], body: whole }, true);
  assert.equal(read.model, 'gpt');
  assert.equal(read.usage.inputTokens, 12n);
  const tail = encoder.encode('lta":{}}\n\ndata: {"model":"gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\ndata: [DONE]\n\n');
  assert.equal(provider.passthroughUsage(config(), call('/x'), { status: 200, headers: [], body: tail }, false).usage.outputTokens, 7n);
  assert.equal(provider.passthroughUsage(config(), call('/x'), { status: 404, headers: [], body: whole }, true), undefined);
});
