import unittest

import app
from wasmgate_plugin.router import request, route, target, validate


class RouterTest(unittest.TestCase):
    targets = [target("a/big", input_price=5.0), target("b/small", input_price=0.1)]

    def test_premium_users_keep_config_order(self):
        order = route(app.Router, "{}", request(user_tags=["premium"]), self.targets)
        self.assertEqual(order, [0, 1])

    def test_others_get_the_cheapest_first(self):
        self.assertEqual(route(app.Router, "{}", request(), self.targets), [1, 0])

    def test_unknown_options_are_refused(self):
        self.assertEqual(validate(app.Router, '{"premium": "x"}', []).key, "premium")


if __name__ == "__main__":
    unittest.main()
