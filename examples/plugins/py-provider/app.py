"""py-provider: any OpenAI-compatible host (vLLM, Ollama, LM Studio, a hosted API). Bodies pass
through; the plugin names the URL and adds a `model_prefix` the host may want. The SDK adds the
key and the entry's `headers` option (every provider takes it), and reads answers and streams
in OpenAI's format by default."""

import json
from dataclasses import dataclass

from wasmgate_plugin.provider import Operation, PluginError, Provider, export, get, post_json, upstream

PATHS = {
    Operation.CHAT_COMPLETIONS: "chat/completions",
    Operation.EMBEDDINGS: "embeddings",
    Operation.IMAGE_GENERATIONS: "images/generations",
    Operation.LIST_MODELS: "models",
}


@dataclass
class Options:
    # Prepended to the model name upstream, e.g. `accounts/fireworks/models/`.
    model_prefix: str = ""
    # Refuse requests whose `max_tokens` is above this.
    max_output_tokens: int | None = None


class Compatible(Provider):
    Options = Options
    default_base_url = "http://127.0.0.1:8000/v1"

    def prepare(self, entry, request):
        url = entry.url(PATHS[request.operation])
        if request.operation == Operation.LIST_MODELS:
            return upstream(get(url))
        body = request.body
        limit = entry.options.max_output_tokens
        if entry.options.model_prefix or limit is not None:
            parsed = json.loads(body)
            if limit is not None and (parsed.get("max_tokens") or 0) > limit:
                raise PluginError.invalid_request(f"max_tokens is above {limit}", "max_tokens")
            parsed["model"] = entry.options.model_prefix + request.model
            body = parsed
        return upstream(post_json(url, body))


export(Compatible)
