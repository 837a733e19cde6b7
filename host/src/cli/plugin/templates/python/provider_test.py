import unittest

import app
from wasmgate_plugin.provider import CanonicalRequest, Operation, ProviderConfig


class ProviderTest(unittest.TestCase):
    def test_chat_goes_to_the_base_url_with_the_key(self):
        config = ProviderConfig("p", "https://llm.example/v1/", "sk-1", [], "{}")
        body = '{"model":"m","messages":[]}'
        prepared = app.Provider().prepare(config, CanonicalRequest(Operation.CHAT_COMPLETIONS, "m", body, False, [], None))
        self.assertEqual(prepared.value.url, "https://llm.example/v1/chat/completions")
        self.assertIn(("authorization", "Bearer sk-1"), prepared.value.headers)
        self.assertEqual(prepared.value.body, body.encode())

    def test_it_describes_its_default_base_url(self):
        described = app.Provider().describe(ProviderConfig("p", None, None, [], "{}"))
        self.assertEqual(described.default_base_url, "http://127.0.0.1:8000/v1")


if __name__ == "__main__":
    unittest.main()
