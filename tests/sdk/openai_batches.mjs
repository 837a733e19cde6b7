// Drives OpenAI's Files and Batch APIs through wasmgate with the official Node SDK, `openai`:
// one call of each kind (upload, list, retrieve, content, delete; create, retrieve to the end,
// list, cancel).
//
//   node openai_batches.mjs --node-modules DIR --base-url URL --api-key KEY
//
// Prints `ok <scenario>` for each scenario that holds, `batch <id>` for the batch that ran;
// exits 1 at the first that does not hold.

import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
  },
});
const sdk = await import(pathToFileURL(join(args['node-modules'], 'openai/index.mjs')).href);
const client = new sdk.OpenAI({ baseURL: args['base-url'], apiKey: args['api-key'], maxRetries: 0, timeout: 60_000 });

function check(condition, what, got) {
  if (!condition) throw new Error(`${what} (got: ${JSON.stringify(got)})`);
}

function lines(n) {
  return Array.from({ length: n }, (_, i) => JSON.stringify({
    custom_id: `node-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model: 'openai/gpt-4o', max_tokens: 1 + i, messages: [{ role: 'user', content: `q${i}` }] },
  })).join('\n') + '\n';
}

async function upload(n, name) {
  return client.files.create({ file: await sdk.toFile(Buffer.from(lines(n)), name), purpose: 'batch' });
}

const state = {};
const scenarios = {
  async files() {
    const file = await upload(4, 'node.jsonl');
    check(file.id.startsWith('file-') && file.purpose === 'batch', 'uploaded', file);
    check((await client.files.retrieve(file.id)).filename === 'node.jsonl', 'retrieved', file);
    const page = await client.files.list();
    check(page.data.some((f) => f.id === file.id), 'listed', page.data);
    const text = await (await client.files.content(file.id)).text();
    check(text.split('\n').filter(Boolean).length === 4, 'the content, as sent upstream', text);
    check(JSON.parse(text.split('\n')[0]).body.model === 'gpt-4o', 'the upstream model', text);
    state.file = file.id;
  },
  async batch() {
    let batch = await client.batches.create({ input_file_id: state.file, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const seen = [batch.status];
    while (!['completed', 'failed', 'cancelled', 'expired'].includes(batch.status) && seen.length < 10) {
      batch = await client.batches.retrieve(batch.id);
      if (seen[seen.length - 1] !== batch.status) seen.push(batch.status);
    }
    check(seen.join(',') === 'validating,in_progress,finalizing,completed', 'the lifecycle', seen);
    const output = await (await client.files.content(batch.output_file_id)).text();
    check(output.split('\n').filter(Boolean).length === 4, 'four output lines', output);
    const listed = [];
    for await (const b of client.batches.list({ limit: 1 })) listed.push(b.id);
    check(listed.includes(batch.id), 'listed, page by page', listed);
    console.log(`batch ${batch.id}`);
  },
  async cancel() {
    const file = await upload(2, 'cancel.jsonl');
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const cancelled = await client.batches.cancel(batch.id);
    check(cancelled.status === 'cancelling', 'cancelling', cancelled);
  },
  async delete() {
    const deleted = await client.files.delete(state.file);
    check(deleted.deleted === true && deleted.id === state.file, 'deleted', deleted);
    try {
      await client.files.retrieve(state.file);
    } catch (e) {
      check(e.status === 404, 'not found', e.status);
      return;
    }
    throw new Error('a deleted file was found');
  },
};

for (const [name, run] of Object.entries(scenarios)) {
  try {
    await run();
  } catch (e) {
    console.error(`FAILED ${name}: ${e.stack || e}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
