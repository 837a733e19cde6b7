import time
import unittest
from unittest import mock

import app
from wasmgate_plugin.router import CircuitState, request, route, target, validate

TARGETS = [target("openai/gpt-4o", latency_ms=900.0), target("openai/mini", latency_ms=300.0),
           target("groq/llama", latency_ms=120.0)]
OPTIONS = '{"rules": [{"tags": ["premium"], "targets": ["openai/gpt-4o"], "from_hour": 8, "to_hour": 18}], "max_latency_ms": 500}'


def at_hour(h):
    return mock.patch.object(time, "gmtime", return_value=time.struct_time((2026, 1, 1, h, 0, 0, 3, 1, 0)))


class RouterTest(unittest.TestCase):
    def test_premium_in_office_hours_get_the_big_model(self):
        with at_hour(10):
            self.assertEqual(route(app.Router, OPTIONS, request(user_tags=["premium"]), TARGETS), [0])

    def test_premium_at_night_and_others_get_the_fastest(self):
        with at_hour(22):
            self.assertEqual(route(app.Router, OPTIONS, request(user_tags=["premium"]), TARGETS), [2, 1, 0])
        with at_hour(10):
            self.assertEqual(route(app.Router, OPTIONS, request(), TARGETS), [2, 1, 0])

    def test_open_circuits_go_last(self):
        targets = [target("a/x", latency_ms=10.0, circuit=CircuitState.OPEN), target("b/y", latency_ms=50.0)]
        self.assertEqual(route(app.Router, "{}", request(), targets), [1, 0])

    def test_options_are_checked(self):
        bad = validate(app.Router, '{"rules": [{"tags": ["x"], "targets": ["no/such"]}]}', ["a/b"])
        self.assertEqual(bad.key, "rules[0].targets")
        self.assertEqual(validate(app.Router, '{"rules": [{"tags": [], "targets": [], "to_hour": 25}]}', []).key,
                         "rules[0].to_hour")


if __name__ == "__main__":
    unittest.main()
