// Drives the Realtime API (wasmgate's `GET /v1/realtime?model=` upgraded) with the official Node
// SDK, `openai`'s `OpenAIRealtimeWS` (over the `ws` package), and checks what comes back, as
// tests/sdk/openai_realtime.py does with the Python SDK:
//
// - `text_turn`: `session.update` to text output, a user message, `response.create`: the text
//   deltas make the answer, and `response.done` reports its usage.
// - `audio_turn`: pcm16 audio appended and committed, `response.create` with audio output: audio
//   deltas (base64 pcm16) and their transcript come back, and `response.done` reports audio
//   tokens.
//
// The Node SDK only speaks `wss://` to the Realtime API (it sets the URL's scheme whatever the
// base URL says), and the gateway serves plain HTTP behind whatever terminates TLS in front of
// it. So the script puts a TLS terminator of its own in front of the gateway, as a deployment
// would: a self-signed certificate for 127.0.0.1 (made by `openssl`), handed to the socket as
// its only trusted CA, and each TLS connection piped to the gateway's port.
//
//   node openai_realtime.mjs --node-modules DIR --base-url http://127.0.0.1:PORT/v1 --api-key KEY
//                            --model M [--only text_turn,audio_turn]
//
// Prints `ok <scenario>` for each scenario that holds, then `usage <json>` with each response's
// usage (the ledger's records are checked against it); exits 1 at the first that does not hold.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    model: { type: 'string' },
    only: { type: 'string', default: 'text_turn,audio_turn' },
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
const { OpenAIRealtimeWS } = await import(pathToFileURL(join(modules, 'openai/realtime/ws.mjs')).href);

// The most events one response may take before the scenario gives up on it.
const MAX_EVENTS = 500;

function check(condition, what, got) {
  if (!condition) throw new Error(`${what} (got: ${JSON.stringify(got)})`);
}

/** A TLS terminator on 127.0.0.1 in front of `upstream` (`http://HOST:PORT/...`); its CA's PEM. */
async function terminator(upstream) {
  const dir = mkdtempSync(join(tmpdir(), 'wasmgate-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ], { stdio: 'ignore' });
    const key = readFileSync(join(dir, 'key.pem'));
    const cert = readFileSync(join(dir, 'cert.pem'));
    const target = new URL(upstream);
    const server = tls.createServer({ key, cert }, (client) => {
      const gateway = net.connect(Number(target.port), target.hostname);
      client.pipe(gateway).pipe(client);
      const end = () => { client.destroy(); gateway.destroy(); };
      client.on('error', end);
      gateway.on('error', end);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    server.unref();
    const url = new URL(upstream);
    url.protocol = 'https:';
    url.port = String(server.address().port);
    return { baseURL: url.toString().replace(/\/$/, ''), ca: cert, server };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `samples` of a 440 Hz tone, pcm16 at 24 kHz, little-endian. */
function tone(samples) {
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    pcm.writeInt16LE(Math.trunc(Math.sin((i / 24000) * 440 * 2 * Math.PI) * 8000), i * 2);
  }
  return pcm;
}

/** Reads every event into a queue, so that a scenario can wait for the next one. */
function events(rt) {
  const queue = [];
  const waiting = [];
  const deliver = (item) => (waiting.length ? waiting.shift()(item) : queue.push(item));
  rt.on('event', (event) => deliver({ event }));
  // An `error` event arrives on 'event' too; only a transport failure needs its own entry.
  rt.on('error', (error) => { if (!error.error) deliver({ failure: error }); });
  rt.socket.on('close', (code) => deliver({ failure: new Error(`the socket closed (${code})`) }));
  return async function next() {
    const item = queue.length
      ? queue.shift()
      : await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no event in 10 s')), 10_000);
        waiting.push((got) => { clearTimeout(timer); resolve(got); });
      });
    if (item.failure) throw item.failure;
    return item.event;
  };
}

/** The events of one response, up to its `response.done` (or an `error`). */
async function untilDone(next) {
  const seen = [];
  for (let i = 0; i < MAX_EVENTS; i++) {
    const event = await next();
    seen.push(event);
    if (event.type === 'response.done' || event.type === 'error') return seen;
  }
  throw new Error('no response.done');
}

async function text_turn(rt, next, usages) {
  rt.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'], instructions: 'Answer briefly.' } });
  rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello' }] },
  });
  rt.send({ type: 'response.create' });
  const seen = await untilDone(next);
  const last = seen.at(-1);
  check(last.type === 'response.done', 'the response completed', last);
  const text = seen.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  check(text.trim() !== '', 'text deltas came back', seen.map((e) => e.type));
  const usage = last.response.usage;
  check(usage && usage.output_tokens > 0, 'response.done reports usage', usage);
  usages.push(usage);
}

async function audio_turn(rt, next, usages) {
  const pcm = tone(4800);
  for (let start = 0; start < pcm.length; start += 3200) {
    rt.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(start, start + 3200).toString('base64') });
  }
  rt.send({ type: 'input_audio_buffer.commit' });
  rt.send({ type: 'response.create', response: { output_modalities: ['audio'] } });
  const seen = await untilDone(next);
  const last = seen.at(-1);
  check(last.type === 'response.done', 'the response completed', last);
  const audio = Buffer.concat(seen.filter((e) => e.type === 'response.output_audio.delta').map((e) => Buffer.from(e.delta, 'base64')));
  check(audio.length > 0 && audio.length % 2 === 0, 'pcm16 audio deltas came back', audio.length);
  const transcript = seen.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.delta).join('');
  check(transcript.trim() !== '', 'a transcript came back', seen.map((e) => e.type));
  const usage = last.response.usage;
  check(usage?.output_token_details?.audio_tokens > 0, 'audio output tokens are reported', usage);
  usages.push(usage);
}

const scenarios = { text_turn, audio_turn };

const front = await terminator(args['base-url']);
const client = new sdk.OpenAI({ baseURL: front.baseURL, apiKey: args['api-key'], maxRetries: 0 });
const rt = new OpenAIRealtimeWS({ model: args.model, options: { ca: front.ca } }, client);
const next = events(rt);
const usages = [];
try {
  const first = await next();
  check(first.type === 'session.created', 'the first event is session.created', first.type);
} catch (error) {
  console.log(`FAILED session: ${error?.stack ?? error}`);
  process.exit(1);
}
for (const name of args.only.split(',')) {
  try {
    check(name in scenarios, `a scenario named ${name}`, Object.keys(scenarios));
    await scenarios[name](rt, next, usages);
  } catch (error) {
    console.log(`FAILED ${name}: ${error?.stack ?? error}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
rt.close();
front.server.close();
console.log(`usage ${JSON.stringify(usages)}`);
process.exit(0);
