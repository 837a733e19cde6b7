"""{{name}}: a wasmgate provider for an OpenAI-compatible upstream.

The SDK reads the config entry for every call: ``Options`` from its ``options`` (a misspelt key
fails when the config loads, naming it), the base URL (the entry's, else ``default_base_url``),
and the ``headers`` and ``auth_header`` options every provider takes. It adds the key and those
headers to the request ``prepare`` returns, and reads OpenAI-format answers by default."""

from dataclasses import dataclass

from wasmgate_plugin.provider import Provider, export, get, post_json, upstream

PATHS = {"chat-completions": "chat/completions", "embeddings": "embeddings",
         "image-generations": "images/generations", "list-models": "models",
         "completions": "completions", "moderations": "moderations", "rerank": "rerank"}


@dataclass
class Options:
    pass


class Plugin(Provider):
    Options = Options
    default_base_url = "http://127.0.0.1:8000/v1"

    def prepare(self, entry, request):
        url = entry.url(PATHS[request.operation.name.lower().replace("_", "-")])
        if request.operation.name == "LIST_MODELS":
            return upstream(get(url))
        return upstream(post_json(url, request.body))


export(Plugin)
