// Drives the rest of OpenAI's API through wasmgate with the official Node SDK, `openai`: one call
// of each kind (a moderation, a streamed completion, a transcription, speech read as a stream).
// Each request carries the `x-request-id` `node-<scenario>`, so that the test can read its record.
//
//   node openai_api.mjs --node-modules DIR --base-url URL --api-key KEY [--only a,b]
//
// Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not.

import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    only: { type: 'string', default: 'moderation,completion_stream,transcription,speech' },
  },
});
for (const name of ['node-modules', 'base-url', 'api-key']) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}
const sdk = await import(pathToFileURL(join(args['node-modules'], 'openai/index.mjs')).href);
const client = new sdk.OpenAI({ baseURL: args['base-url'], apiKey: args['api-key'], maxRetries: 0, timeout: 30_000 });
const TEXT = 'Hello there. General Kenobi.';
const rid = (name) => ({ headers: { 'x-request-id': `node-${name}` } });

function check(condition, what, got) {
  if (!condition) throw new Error(`${what} (got: ${JSON.stringify(got)})`);
}

const scenarios = {
  async moderation() {
    const result = await client.moderations.create({ model: 'openai/omni-moderation-latest', input: 'I like cats.' }, rid('moderation'));
    check(result.results.length === 1 && result.results[0].flagged === false, 'one unflagged result', result);
  },
  async completion_stream() {
    const stream = await client.completions.create(
      { model: 'openai/gpt-3.5-turbo-instruct', prompt: 'Tell me a story', max_tokens: 5, stream: true, stream_options: { include_usage: true } },
      rid('completion_stream'));
    let text = '';
    let usage = null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) text += choice.text;
      usage = chunk.usage ?? usage;
    }
    check(text === ' Once upon a time', 'the streamed text', text);
    check(usage?.completion_tokens === 20, 'the usage chunk', usage);
  },
  async transcription() {
    const file = await sdk.toFile(Buffer.alloc(16384, 3), 'speech.mp3', { type: 'audio/mpeg' });
    const srt = await client.audio.transcriptions.create({ model: 'openai/whisper-1', file, response_format: 'srt' }, rid('transcription'));
    check(typeof srt === 'string' && srt.startsWith('1\n00:00:00,000 --> 00:00:03,200\nHello there.'), 'the srt', srt);
  },
  async speech() {
    const response = await client.audio.speech.create({ model: 'openai/tts-1', voice: 'alloy', input: 'Hello from wasmgate.' }, rid('speech'));
    check(response.headers.get('content-type') === 'audio/mpeg', 'audio/mpeg', response.headers.get('content-type'));
    let length = 0;
    let last = -1;
    for await (const chunk of response.body) {
      length += chunk.length;
      last = chunk[chunk.length - 1];
    }
    check(length === 8 * 4096 && last === 7, 'the audio as sent', length);
  },
};

for (const name of args.only.split(',')) {
  try {
    await scenarios[name]();
  } catch (e) {
    console.log(`FAILED ${name}: ${e?.stack ?? e}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
