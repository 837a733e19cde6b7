// Drives the Responses API's WebSocket mode (wasmgate's `GET /v1/responses` upgraded) with the
// official Node SDK, `openai`'s `ResponsesWS`, as tests/sdk/openai_responses_ws.py does with the
// Python SDK:
//
// - `turn`: one turn on the socket, its events read to `response.completed`, the text streamed
//   in deltas.
// - `tool_chain`: one socket, three turns. The first asks with a function tool and gets a
//   `function_call`; the second sends only `previous_response_id` and the call's output and gets
//   the answer; the third sends only `previous_response_id` and a new user message.
//
//   node openai_responses_ws.mjs --node-modules DIR --base-url URL --api-key KEY --model M
//                                [--mock] [--only turn,tool_chain]
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
    model: { type: 'string' },
    only: { type: 'string', default: 'turn,tool_chain' },
    // Also checks what only the OpenAI mock promises (its input tokens grow with the history).
    mock: { type: 'boolean', default: false },
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

const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather in a given city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
  strict: true,
};

/** Sends one `response.create` on `socket` and reads its events to the last: the final response,
 * the kinds of every event seen, and the text deltas. */
function send(socket, create) {
  const kinds = [];
  const deltas = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no last event in 30 s: ${kinds}`)), 30_000);
    const onEvent = (event) => {
      kinds.push(event.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
      if (['response.completed', 'response.failed', 'response.incomplete', 'error'].includes(event.type)) {
        clearTimeout(timer);
        socket.off('event', onEvent);
        resolve({ response: event.response ?? event, kinds, deltas });
      }
    };
    socket.on('event', onEvent);
    socket.send({ type: 'response.create', ...create });
  });
}

function completed({ response, kinds }, where) {
  check(response.status === 'completed', `${where}: a completed response`, response);
  check(kinds[0] === 'response.created' && kinds.at(-1) === 'response.completed', `${where}: created first, completed last`, kinds);
  const usage = response.usage;
  check(usage && usage.input_tokens > 0 && usage.output_tokens > 0, `${where}: usage counted`, usage);
}

const outputText = (response) =>
  response.output.filter((item) => item.type === 'message').flatMap((item) => item.content).map((part) => part.text ?? '').join('');

async function tool_chain() {
  const socket = new ResponsesWS(client);
  // Only a transport failure: a turn's `error` event is read as its last event.
  socket.on('error', (error) => { if (!error.error) console.log(`socket error: ${error}`); });
  try {
    const first = await send(socket, { model: args.model, input: 'What is the weather in Paris?', tools: [WEATHER_TOOL] });
    completed(first, 'first turn');
    const calls = first.response.output.filter((item) => item.type === 'function_call');
    check(calls.length && calls[0].name === 'get_weather' && JSON.parse(calls[0].arguments), 'a call of get_weather', first.response.output);
    check(first.kinds.includes('response.function_call_arguments.delta'), 'the arguments streamed', first.kinds);
    // Only the new input: the call itself is the previous response's.
    const outputs = calls.map((call) => ({ type: 'function_call_output', call_id: call.call_id, output: '18 degrees, cloudy' }));
    const second = await send(socket, { model: args.model, previous_response_id: first.response.id, input: outputs, tools: [WEATHER_TOOL] });
    completed(second, 'second turn');
    check(second.response.previous_response_id === first.response.id, "the chain's link", second.response.previous_response_id);
    const answer = outputText(second.response);
    check(answer && !second.response.output.some((item) => item.type === 'function_call'), "an answer after the call's output", second.response.output);
    check(second.deltas.length > 1 && second.deltas.join('') === answer, 'the text streamed in deltas', second.deltas);
    // The history holds a tool call, so the tool is offered again (a Messages upstream wants
    // it), not to be called.
    const third = await send(socket, {
      model: args.model, previous_response_id: second.response.id,
      input: [{ role: 'user', content: 'And what should I wear?' }], tools: [WEATHER_TOOL], tool_choice: 'none',
    });
    completed(third, 'third turn');
    check(outputText(third.response), 'a text answer', third.response.output);
    check(!args.mock || third.response.usage.input_tokens > second.response.usage.input_tokens, 'the third turn sees the ones before',
      [second.response.usage, third.response.usage]);
  } finally {
    socket.close();
  }
}

const scenarios = { turn, tool_chain };
for (const name of args.only.split(',')) {
  try {
    check(name in scenarios, `a scenario named ${name}`, Object.keys(scenarios));
    await scenarios[name]();
  } catch (error) {
    console.log(`FAILED ${name}: ${error?.stack ?? error}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
