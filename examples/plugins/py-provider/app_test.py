import json
import unittest

import app
from wasmgate_plugin.provider import (CanonicalRequest, HttpResponse, Operation, PassthroughCall,
                                      ProviderConfig, RequestInfo)
from componentize_py_types import Err


def config(options="{}", key="sk-1"):
    return ProviderConfig("local", "http://llm.local/v1/", key, [], options)


def chat(body='{"model":"m","messages":[]}', stream=False):
    return CanonicalRequest(Operation.CHAT_COMPLETIONS, "m", body, stream, [], None)


class ProviderTest(unittest.TestCase):
    def test_chat_goes_to_the_host_with_the_key_and_headers(self):
        http = app.Provider().prepare(config('{"headers": {"x-org": "o1"}}'), chat()).value
        self.assertEqual(http.url, "http://llm.local/v1/chat/completions")
        self.assertIn(("authorization", "Bearer sk-1"), http.headers)
        self.assertIn(("x-org", "o1"), http.headers)

    def test_model_prefix_and_output_cap(self):
        http = app.Provider().prepare(config('{"model_prefix": "acct/"}'), chat()).value
        self.assertEqual(json.loads(http.body)["model"], "acct/m")
        with self.assertRaises(Err) as refused:
            app.Provider().prepare(config('{"max_output_tokens": 10}'), chat('{"model":"m","max_tokens":50}'))
        self.assertEqual(refused.exception.value.param, "max_tokens")

    def test_errors_and_usage_are_read(self):
        info = RequestInfo(Operation.CHAT_COMPLETIONS, "m", False, None)
        ok = HttpResponse(200, [], b'{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}')
        self.assertEqual(app.Provider().parse_response(config(), info, ok).usage.output_tokens, 4)
        with self.assertRaises(Err) as failed:
            app.Provider().parse_response(config(), info, HttpResponse(429, [], b'{"error":{"message":"slow down"}}'))
        self.assertEqual(failed.exception.value.message, "slow down")

    def test_reasoning_tokens_are_read(self):
        info = RequestInfo(Operation.CHAT_COMPLETIONS, "m", False, None)
        body = b'{"usage":{"prompt_tokens":3,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":32}}}'
        usage = app.Provider().parse_response(config(), info, HttpResponse(200, [], body)).usage
        self.assertEqual((usage.output_tokens, usage.reasoning_tokens), (40, 32))

    def test_it_describes_its_default_base_url(self):
        described = app.Provider().describe(ProviderConfig("local", None, None, [], "{}"))
        self.assertEqual((described.default_base_url, described.system), ("http://127.0.0.1:8000/v1", None))
        http = app.Provider().prepare(ProviderConfig("local", None, "sk-1", [], "{}"), chat()).value
        self.assertEqual(http.url, "http://127.0.0.1:8000/v1/chat/completions")

    def test_auth_header_sends_the_bare_key(self):
        http = app.Provider().prepare(config('{"auth_header": "api-key"}'), chat()).value
        self.assertIn(("api-key", "sk-1"), http.headers)
        self.assertNotIn("authorization", [name for name, _ in http.headers])

    def test_bad_header_is_refused(self):
        with self.assertRaises(Err) as refused:
            app.Provider().validate(config('{"headers": {"x-a": "1\\r\\nx-b: 2"}}'))
        self.assertEqual(refused.exception.value.key, "headers.x-a")

    def test_pass_through_gets_the_key_and_reads_usage(self):
        call = PassthroughCall("POST", "/chat/completions", [])
        auth = app.Provider().passthrough(config('{"auth_header": "api-key", "headers": {"x-org": "o1"}}'), call)
        self.assertEqual((auth.headers, auth.query), ([("api-key", "sk-1"), ("x-org", "o1")], []))
        tail = b'lta":{}}\n\ndata: {"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\ndata: [DONE]\n\n'
        read = app.Provider().passthrough_usage(config(), call, HttpResponse(200, [], tail), False)
        self.assertEqual((read.model, read.usage.input_tokens, read.usage.output_tokens), ("m", 5, 7))
        refused = HttpResponse(400, [], b'{"usage":{"prompt_tokens":5}}')
        self.assertIsNone(app.Provider().passthrough_usage(config(), call, refused, True))


if __name__ == "__main__":
    unittest.main()
