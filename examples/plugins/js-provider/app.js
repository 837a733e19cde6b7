// js-provider: any OpenAI-compatible host, with its pass-through routes. Bodies pass through;
// the SDK adds the key and the entry's `headers` option to every upstream request, pass-through
// ones included, and reads answers, streams and pass-through usage in OpenAI's format.
import { o } from 'wasmgate-plugin/options';
import { PluginError, defineProvider, get, postJson, upstream, withDefault } from 'wasmgate-plugin/provider';

const PATHS = {
  'chat-completions': 'chat/completions', embeddings: 'embeddings', 'list-models': 'models',
};

// OpenAI's Assistants-era endpoints want this header; the official SDKs send it themselves,
// a raw client may not.
const BETA = ['/assistants', '/threads', '/vector_stores'];

export const provider = defineProvider({
  options: o.object({
    // Sent as `openai-beta` on pass-through calls to the Assistants-era endpoints.
    beta: o.optional(o.string(), 'assistants=v2'),
  }),
  defaultBaseUrl: 'http://127.0.0.1:8000/v1',
  prepare(entry, request) {
    const path = PATHS[request.operation];
    if (!path) throw new PluginError('invalid-request', `${request.operation} is not served here`);
    const url = entry.url(path);
    if (request.operation === 'list-models') return upstream(get(url));
    return upstream(postJson(url, request.body));
  },
  // The default adds the key and the entry's headers; this adds the beta header where the
  // upstream wants it, unless the client sent its own.
  passthrough(entry, call) {
    const auth = entry.passthroughAuth();
    if (!BETA.some((prefix) => call.path === prefix || call.path.startsWith(`${prefix}/`))) return auth;
    return withDefault(auth, call, 'openai-beta', entry.options.beta);
  },
});
