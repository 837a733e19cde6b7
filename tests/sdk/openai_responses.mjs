// Drives the Responses API's compaction (`POST /v1/responses/compact`) through wasmgate with the
// official Node SDK, `openai`'s `client.responses.compact()`, as tests/sdk/openai_responses.py's
// `compact` scenario does with the Python SDK:
//
// - `compact`: a conversation compacted on `--model` (a `response.compaction` whose last item is
//   a `compaction` and whose messages are the user's, in order, with usage), then a turn taking
//   its output as input on `--model` and one on `--other-model`; nothing to compact, and input
//   that is not a conversation, refused in OpenAI's error shape.
//
// Each request carries an `x-request-id` (`sdk-compact`, `sdk-compact-turn-<n>`) so that the
// test can read its record.
//
//   node openai_responses.mjs --node-modules DIR --base-url URL --api-key KEY --model M
//                             --other-model M2 [--only compact]
//
// Prints `ok <scenario>` for each scenario that holds; exits 1 at the first that does not.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    model: { type: 'string' },
    'other-model': { type: 'string' },
    // Taken for the Python script's sake (the same arguments drive both); no scenario here
    // reasons.
    'reasoning-model': { type: 'string' },
    only: { type: 'string', default: 'compact' },
  },
});
for (const name of ['node-modules', 'base-url', 'api-key', 'model']) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}
const sdk = await import(pathToFileURL(join(args['node-modules'], 'openai/index.mjs')).href);
const client = new sdk.OpenAI({ baseURL: args['base-url'], apiKey: args['api-key'], maxRetries: 0, timeout: 30_000 });
const rid = (id) => ({ headers: { 'x-request-id': id } });

function check(condition, what, got) {
  if (!condition) throw new Error(`${what} (got: ${JSON.stringify(got)})`);
}

function checkUsage(usage, where) {
  check(usage && usage.input_tokens > 0 && usage.output_tokens > 0, `${where}: usage counted`, usage);
  check(usage.total_tokens === usage.input_tokens + usage.output_tokens, `${where}: total = input + output`, usage);
}

/** An output item as the next request's input item: what the server sets alone goes. */
function asInput(item) {
  const copy = Object.fromEntries(Object.entries(item).filter(([, value]) => value !== null && value !== undefined));
  if (copy.type === 'reasoning') delete copy.status;
  return copy;
}

const scenarios = {
  async compact() {
    const conversation = [
      { role: 'user', content: 'My name is Ada.' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello Ada.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'I live in Paris.' }] },
    ];
    const compacted = await client.responses.compact(
      { model: args.model, input: conversation, instructions: 'You are terse.' }, rid('sdk-compact'));
    check(compacted.object === 'response.compaction' && compacted.id, 'a compaction object', compacted);
    const last = compacted.output.at(-1);
    check(last.type === 'compaction' && last.encrypted_content, 'a compaction item last', compacted.output);
    const kept = compacted.output.filter((item) => item.type === 'message').flatMap((item) => item.content.map((part) => part.text));
    check(JSON.stringify(kept) === JSON.stringify(['My name is Ada.', 'I live in Paris.']), 'the user messages kept, in order', kept);
    checkUsage(compacted.usage, 'compact');
    // The next turn takes the compacted output, then its new message, on this target and another.
    for (const [n, model] of [args.model, args['other-model'] ?? args.model].entries()) {
      const following = [...compacted.output.map(asInput), { role: 'user', content: 'Where do I live?' }];
      const answer = await client.responses.create({ model, input: following }, rid(`sdk-compact-turn-${n}`));
      check(answer.status === 'completed' && answer.output_text, `a turn after the compaction on ${model}`, answer.output);
    }
    // Nothing to compact, and input that is not a conversation, are refused in OpenAI's error shape.
    for (const bad of [[], 42]) {
      let refused = null;
      try {
        await client.responses.compact({ model: args.model, input: bad });
      } catch (error) {
        refused = error;
      }
      check(refused instanceof sdk.BadRequestError, `a compaction of ${JSON.stringify(bad)} refused with 400`, refused?.status);
      const body = refused.error;
      check(body?.message && body?.type === 'invalid_request_error', "OpenAI's error shape", body);
    }
  },
};

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
