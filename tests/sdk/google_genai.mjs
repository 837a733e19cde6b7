// Drives Google's GenAI API (the Gemini mock upstream, or wasmgate's GenAI routes) with the
// official Node SDK, @google/genai, and checks what comes back: generate, stream, a function
// calling round trip, count tokens and embeddings.
//
//   node google_genai.mjs --node-modules DIR --base-url URL --api-key KEY --model M --embedding-model E [--only a,b]
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
    'embedding-model': { type: 'string' },
    only: { type: 'string', default: 'generate,stream,tools,count_tokens,embed' },
  },
});
for (const name of ['node-modules', 'base-url', 'api-key', 'model', 'embedding-model']) {
  if (!args[name]) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
}
const sdk = pathToFileURL(join(args['node-modules'], '@google/genai/dist/node/index.mjs')).href;
const { GoogleGenAI, Type } = await import(sdk);
const ai = new GoogleGenAI({ apiKey: args['api-key'], httpOptions: { baseUrl: args['base-url'], timeout: 30_000 } });
const model = args.model;

const weather = {
  functionDeclarations: [{
    name: 'get_weather',
    description: 'Get the current weather in a given city',
    parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
  }],
};

class Failed extends Error {}
function check(condition, what, got) {
  if (!condition) throw new Failed(`${what} (got: ${JSON.stringify(got)})`);
}

const scenarios = {
  async generate() {
    const response = await ai.models.generateContent({
      model, contents: 'Tell me a one-line story about a backpack.', config: { systemInstruction: 'Be brief.' },
    });
    check(response.text, 'the answer has text', response);
    check(response.candidates[0].finishReason === 'STOP', 'it stopped', response.candidates[0]);
    check(response.usageMetadata?.promptTokenCount > 0, 'prompt tokens counted', response.usageMetadata);
  },
  async stream() {
    const chunks = [];
    for await (const chunk of await ai.models.generateContentStream({ model, contents: 'Tell me a story.' })) {
      chunks.push(chunk);
    }
    check(chunks.length >= 2, 'several chunks', chunks.length);
    check(chunks.map((c) => c.text ?? '').join(''), 'the chunks carry text', chunks);
    check(chunks.at(-1).candidates[0].finishReason === 'STOP', 'the last chunk stops', chunks.at(-1));
  },
  async tools() {
    const config = { tools: [weather] };
    const question = { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] };
    const first = await ai.models.generateContent({ model, contents: [question], config });
    const calls = first.functionCalls ?? [];
    check(calls.length > 0 && calls[0].name === 'get_weather', 'the model calls the declared function', first);
    check(calls[0].args && Object.keys(calls[0].args).length > 0, 'with its arguments', calls[0]);
    const answers = calls.map((call) => ({ functionResponse: { name: call.name, response: { temperature: 21 } } }));
    const contents = [question, first.candidates[0].content, { role: 'user', parts: answers }];
    const second = await ai.models.generateContent({ model, contents, config });
    check(second.text, 'the model answers with the result', second);
  },
  async count_tokens() {
    const counted = await ai.models.countTokens({ model, contents: 'How many tokens is this sentence?' });
    check(counted.totalTokens > 0, 'tokens counted', counted);
  },
  async embed() {
    const batch = await ai.models.embedContent({ model: args['embedding-model'], contents: ['first', 'second'] });
    check(batch.embeddings?.length === 2 && batch.embeddings.every((e) => e.values?.length), 'two embeddings', batch);
  },
};

for (const name of args.only.split(',')) {
  try {
    await scenarios[name]();
  } catch (error) {
    console.error(`FAIL ${name}: ${error?.constructor?.name}: ${error?.message}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
