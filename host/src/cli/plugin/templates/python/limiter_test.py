import unittest

import app
from wasmgate_plugin.limiter import Decision_Deny, request, reset_counters, validate


class LimiterTest(unittest.TestCase):
    def setUp(self):
        reset_counters()

    def test_the_request_over_the_limit_is_refused(self):
        limiter = app.Limiter()
        decisions = [limiter.check('{"per_minute": 2}', request("user:u1")) for _ in range(3)]
        self.assertIsInstance(decisions[2], Decision_Deny)
        self.assertNotIsInstance(decisions[1], Decision_Deny)
        self.assertNotIsInstance(limiter.check('{"per_minute": 2}', request("user:u2")), Decision_Deny)

    def test_zero_is_refused(self):
        self.assertEqual(validate(app.Limiter, '{"per_minute": 0}').key, "per_minute")


if __name__ == "__main__":
    unittest.main()
