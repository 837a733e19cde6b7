// {{name}}: a wasmgate provider for an OpenAI-compatible upstream.
import { o } from 'wasmgate-plugin/options';
import { defineProvider, get, joinUrl, postJson, upstream } from 'wasmgate-plugin/provider';

const PATHS = {
  'chat-completions': 'chat/completions', embeddings: 'embeddings',
  'image-generations': 'images/generations', 'list-models': 'models',
  completions: 'completions', moderations: 'moderations', rerank: 'rerank',
};

export const provider = defineProvider({
  options: o.object({ headers: o.optional(o.map(o.string()), {}) }),
  defaultBaseUrl: 'http://127.0.0.1:8000/v1',
  prepare(entry, request) {
    const url = joinUrl(entry.baseUrl, PATHS[request.operation]);
    const headers = [...entry.bearer(), ...Object.entries(entry.options.headers)];
    if (request.operation === 'list-models') return upstream(get(url, headers));
    return upstream(postJson(url, request.body, headers));
  },
});
