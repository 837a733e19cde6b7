import unittest

import app
from wasmgate_plugin.guard import (
    RequestVerdict_Allow,
    RequestVerdict_Refuse,
    StreamVerdict_Release,
    answer,
    text,
    validate,
)

OPTIONS = '{"domains": ["corp.example"]}'


def released(verdicts) -> str:
    out = ""
    for verdict in verdicts:
        assert isinstance(verdict, StreamVerdict_Release), verdict
        out += "".join(e.value.text for e in verdict.value.events)
    return out


class InternalHostsTest(unittest.TestCase):
    def test_a_request_naming_an_internal_host_is_refused(self):
        bad = '{"messages": [{"role": "user", "content": "Why is DB1.Corp.Example slow?"}]}'
        good = '{"messages": [{"role": "user", "content": "Why is example.com slow?"}]}'
        self.assertIsInstance(app.Guard().check_request(OPTIONS, bad), RequestVerdict_Refuse)
        self.assertIsInstance(app.Guard().check_request(OPTIONS, good), RequestVerdict_Allow)

    def test_a_host_split_over_deltas_is_masked_and_nothing_else_changes(self):
        guard = answer(app.InternalHosts, OPTIONS)
        verdicts = [guard.push([text("Try db1.co")]), guard.push([text("rp.example or ")])]
        verdicts.append(guard.push([text("example.com.")]))
        verdicts.append(guard.finish())
        self.assertEqual(released(verdicts), "Try [internal host] or example.com.")
        self.assertEqual(verdicts[1].value.findings[0].count, 1)

    def test_what_is_held_stays_within_the_declared_bound(self):
        guard = answer(app.InternalHosts, OPTIONS)
        verdict = guard.push([text("x" * 300)])
        self.assertLessEqual(verdict.value.held_chars, app.HOLD)
        self.assertEqual(released([verdict, guard.finish()]), "x" * 300)

    def test_no_domains_is_refused(self):
        self.assertEqual(validate(app.Guard, '{"domains": []}').key, "domains")


if __name__ == "__main__":
    unittest.main()
