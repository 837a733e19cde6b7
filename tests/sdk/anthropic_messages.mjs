// Drives an Anthropic Messages API (the mock upstream, or wasmgate's /v1/messages) with the
// official Node SDK, @anthropic-ai/sdk, and checks what comes back: create, stream, and a tool
// round trip (plain and streamed).
//
//   node anthropic_messages.mjs --node-modules DIR --base-url URL --api-key KEY --model M [--only a,b]
//
// `--node-modules` is where the pinned SDK is installed (scripts/sdk-clients.sh: target/sdk-clients/js/node_modules).
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
    only: { type: 'string', default: 'create,stream,tools' },
  },
});
for (const name of ['node-modules', 'base-url', 'api-key', 'model']) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}
const sdk = pathToFileURL(join(args['node-modules'], '@anthropic-ai/sdk/index.mjs')).href;
const { default: Anthropic } = await import(sdk);
const client = new Anthropic({ baseURL: args['base-url'], apiKey: args['api-key'], maxRetries: 0, timeout: 30_000 });
const model = args.model;

const weatherTool = {
  name: 'get_weather',
  description: 'Get the current weather in a given location',
  input_schema: {
    type: 'object',
    properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location'],
  },
};
const question = { role: 'user', content: 'What is the weather like in San Francisco?' };

class Failed extends Error {}
function check(condition, what, got) {
  if (!condition) throw new Failed(`${what} (got: ${JSON.stringify(got)})`);
}
const textOf = (message) => message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

async function create() {
  const message = await client.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] });
  check(message.type === 'message' && message.role === 'assistant', 'a message from the assistant', message);
  check(textOf(message), 'text in the answer', message.content);
  check(message.stop_reason === 'end_turn', 'stop_reason end_turn', message.stop_reason);
  check(message.usage.input_tokens > 0 && message.usage.output_tokens > 0, 'usage counted', message.usage);
}

async function stream() {
  const texts = [];
  const events = [];
  const run = client.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] });
  run.on('text', (text) => texts.push(text));
  let started;
  run.on('streamEvent', (event) => {
    events.push(event.type);
    if (event.type === 'message_start') started = { ...event.message.usage }; // a copy: the SDK updates the snapshot
  });
  const final = await run.finalMessage();
  check(started && started.input_tokens > 0, 'input usage in message_start', started);
  check(events[0] === 'message_start' && events.at(-1) === 'message_stop', 'message_start first, message_stop last', events);
  check(texts.length > 1 && texts.join('') === textOf(final), 'finalMessage() holds the streamed text', { texts, final });
  check(final.usage.input_tokens > 0 && final.usage.output_tokens > 0, 'usage counted', final.usage);
}

async function answerTools(first) {
  const uses = first.content.filter((b) => b.type === 'tool_use');
  check(first.stop_reason === 'tool_use' && uses.length > 0, 'a tool_use turn', first.content);
  // The input as an object (the mock Anthropic API asks for a location; a translated target's mock may ask otherwise).
  const input = uses[0].input;
  check(uses[0].name === 'get_weather' && input && typeof input === 'object' && Object.keys(input).length > 0,
    'the call and its input', uses[0]);
  const results = uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: '15 degrees, sunny' }));
  const next = await client.messages.create({
    model, max_tokens: 1024, tools: [weatherTool],
    messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: results }],
  });
  check(next.stop_reason === 'end_turn' && textOf(next), 'an answer after the tool result', next.content);
}

async function tools() {
  await answerTools(await client.messages.create({ model, max_tokens: 1024, tools: [weatherTool], messages: [question] }));
  const partials = [];
  const run = client.messages.stream({ model, max_tokens: 1024, tools: [weatherTool], messages: [question] });
  run.on('inputJson', (partial) => partials.push(partial));
  const final = await run.finalMessage();
  check(partials.filter(Boolean).length > 1, 'the streamed input in more than one piece', partials);
  await answerTools(final);
}

const scenarios = { create, stream, tools };
for (const name of args.only.split(',')) {
  try {
    if (!scenarios[name]) throw new Failed(`no scenario ${name}; there are ${Object.keys(scenarios)}`);
    await scenarios[name]();
  } catch (error) {
    console.error(`FAIL ${name}: ${error.constructor.name}: ${error.message}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
