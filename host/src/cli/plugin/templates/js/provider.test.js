import assert from 'node:assert/strict';
import { test } from 'node:test';
import { provider } from './app.js';

test('chat goes to the base url with the key', () => {
  const config = { name: 'p', baseUrl: 'https://llm.example/v1/', apiKey: 'sk-1', models: [], options: '{}' };
  const body = '{"model":"m","messages":[]}';
  const prepared = provider.prepare(config, { operation: 'chat-completions', model: 'm', body, stream: false });
  assert.equal(prepared.val.url, 'https://llm.example/v1/chat/completions');
  assert.deepEqual(prepared.val.headers.at(-1), ['authorization', 'Bearer sk-1']);
  assert.equal(new TextDecoder().decode(prepared.val.body), body);
});

test('it describes its default base url', () => {
  const described = provider.describe({ name: 'p', models: [], options: '{}' });
  assert.equal(described.defaultBaseUrl, 'http://127.0.0.1:8000/v1');
});
