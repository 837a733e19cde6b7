import json
import unittest

import app
from wasmgate_plugin.cache_key import KeyDecision_Bypass, KeyDecision_Keep, request, validate

BODY = {"messages": [{"role": "user", "content": "hi"}]}


class CacheKeyTest(unittest.TestCase):
    def test_a_model_never_cached_bypasses(self):
        decision = app.CacheKey().key('{"never": ["m"]}', request(BODY, model="m"))
        self.assertIsInstance(decision, KeyDecision_Bypass)

    def test_temperature_zero_is_left_out(self):
        decision = app.CacheKey().key("{}", request({**BODY, "temperature": 0}))
        self.assertEqual(json.loads(decision.value), BODY)
        self.assertIsInstance(app.CacheKey().key("{}", request(BODY)), KeyDecision_Keep)

    def test_unknown_options_are_refused(self):
        self.assertEqual(validate(app.CacheKey, '{"nver": []}').key, "nver")


if __name__ == "__main__":
    unittest.main()
