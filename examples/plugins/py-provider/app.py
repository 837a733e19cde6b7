"""py-provider: any OpenAI-compatible host (vLLM, Ollama, LM Studio, a hosted API). Bodies pass
through; the plugin adds the URL and headers, and a `model_prefix` the host may want."""

import json
from dataclasses import dataclass, field

from wasmgate_plugin.provider import (ConfigError, Operation, PluginError, Provider, check_header,
                                      export, get, join_url, post_json, upstream)

PATHS = {
    Operation.CHAT_COMPLETIONS: "chat/completions",
    Operation.EMBEDDINGS: "embeddings",
    Operation.IMAGE_GENERATIONS: "images/generations",
    Operation.LIST_MODELS: "models",
}


@dataclass
class Options:
    # Extra headers for every request (e.g. an organisation id).
    headers: dict[str, str] = field(default_factory=dict)
    # Prepended to the model name upstream, e.g. `accounts/fireworks/models/`.
    model_prefix: str = ""
    # Refuse requests whose `max_tokens` is above this.
    max_output_tokens: int | None = None


class Compatible(Provider):
    Options = Options
    default_base_url = "http://127.0.0.1:8000/v1"

    def validate(self, entry):
        for name, value in entry.options.headers.items():
            problem = check_header(name, value)
            if problem:
                raise ConfigError(problem, f"headers.{name}")

    def prepare(self, entry, request):
        url = join_url(entry.base_url, PATHS[request.operation])
        headers = entry.bearer() + list(entry.options.headers.items())
        if request.operation == Operation.LIST_MODELS:
            return upstream(get(url, headers))
        body = request.body
        limit = entry.options.max_output_tokens
        if entry.options.model_prefix or limit is not None:
            parsed = json.loads(body)
            if limit is not None and (parsed.get("max_tokens") or 0) > limit:
                raise PluginError.invalid_request(f"max_tokens is above {limit}", "max_tokens")
            parsed["model"] = entry.options.model_prefix + request.model
            body = parsed
        return upstream(post_json(url, body, headers))


export(Compatible)
