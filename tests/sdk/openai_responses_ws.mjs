// Drives the Responses API's WebSocket mode (wasmgate's `GET /v1/responses` upgraded) with the
// official Node SDK, `openai`'s `ResponsesWS`: one turn on the socket, its events read to
// `response.completed`, the text streamed in deltas.
//
//   node openai_responses_ws.mjs --node-modules DIR --base-url URL --api-key KEY --model M
//
// Prints `ok turn` if it holds; exits 1 if it does not.

import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    model: { type: 'string' },
  },
});
for (const name of ['node-modules', 'base-url', 'api-key', 'model']) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}
const modules = args['node-modules'];
const sdk = await import(pathToFileURL(join(modules, 'openai/index.mjs')).href);
const { ResponsesWS } = await import(pathToFileURL(join(modules, 'openai/resources/responses/ws.mjs')).href);
const client = new sdk.OpenAI({ baseURL: args['base-url'], apiKey: args['api-key'], maxRetries: 0 });

function check(condition, what, got) {
  if (!condition) throw new Error(`${what} (got: ${JSON.stringify(got)})`);
}

async function turn() {
  const socket = new ResponsesWS(client);
  const kinds = [];
  const deltas = [];
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no response.completed in 30 s: ${kinds}`)), 30_000);
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('event', (event) => {
      kinds.push(event.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      if (event.type === 'response.completed') {
        clearTimeout(timer);
        resolve(event.response);
      }
    });
  });
  socket.send({ type: 'response.create', model: args.model, input: 'Say hello.' });
  const response = await done;
  socket.close();
  check(kinds[0] === 'response.created', 'created first', kinds);
  const text = response.output.flatMap((item) => item.content ?? []).map((part) => part.text ?? '').join('');
  check(deltas.length > 1 && deltas.join('') === text, 'the text streamed in deltas', { deltas, text });
  check(response.usage && response.usage.input_tokens > 0, 'usage counted', response.usage);
}

const scenarios = { turn };
for (const [name, run] of Object.entries(scenarios)) {
  try {
    await run();
  } catch (error) {
    console.log(`FAILED ${name}: ${error?.stack ?? error}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
