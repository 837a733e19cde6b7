// {{name}}: a wasmgate provider for an OpenAI-compatible upstream.
//
// The SDK reads the config entry for every call: the options with `options`' schema (a misspelt
// key fails when the config loads, naming it), the base URL (the entry's, else `defaultBaseUrl`),
// and the `headers` and `auth_header` options every provider takes. It adds the key and those
// headers to the request `prepare` returns, and reads OpenAI-format answers by default.
import { o } from 'wasmgate-plugin/options';
import { defineProvider, get, postJson, upstream } from 'wasmgate-plugin/provider';

const PATHS = {
  'chat-completions': 'chat/completions', embeddings: 'embeddings',
  'image-generations': 'images/generations', 'list-models': 'models',
  completions: 'completions', moderations: 'moderations', rerank: 'rerank',
};

export const provider = defineProvider({
  options: o.object({}),
  defaultBaseUrl: 'http://127.0.0.1:8000/v1',
  prepare(entry, request) {
    const url = entry.url(PATHS[request.operation]);
    if (request.operation === 'list-models') return upstream(get(url));
    return upstream(postJson(url, request.body));
  },
});
