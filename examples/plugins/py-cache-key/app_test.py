import json
import unittest

import app
from wasmgate_plugin.cache_key import KeyDecision_Keep, KeyDecision_Replace, request, validate

OPTIONS = "{}"
REMINDER = "<system-reminder>\nToday's date is 2026-11-26.\n</system-reminder>\n"


def turn(*texts):
    return {"model": "claude", "max_tokens": 64, "messages": [
        {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}]}


def decided(fields):
    return app.CacheKey().key(OPTIONS, request(fields, "anthropic.messages"))


class DropRemindersTest(unittest.TestCase):
    def test_a_reminder_block_is_dropped_and_the_rest_kept(self):
        decision = decided(turn(REMINDER, "Fix the failing test."))
        self.assertIsInstance(decision, KeyDecision_Replace)
        self.assertEqual(json.loads(decision.value), turn("Fix the failing test."))

    def test_a_reminder_inside_a_text_is_cut_out(self):
        decision = decided({"system": "You are helpful.\n" + REMINDER + "Be brief.",
                            "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(json.loads(decision.value)["system"], "You are helpful.\nBe brief.")

    def test_two_turns_differing_only_in_reminders_key_alike(self):
        a = decided(turn(REMINDER, "Run it."))
        b = decided(turn(REMINDER.replace("26", "27"), "Run it."))
        self.assertEqual(a.value, b.value)

    def test_a_request_without_reminders_is_kept(self):
        self.assertIsInstance(decided(turn("Plain.")), KeyDecision_Keep)

    def test_tags_must_be_names(self):
        self.assertEqual(validate(app.CacheKey, '{"tags": []}').key, "tags")
        self.assertEqual(validate(app.CacheKey, '{"tags": ["a>b"]}').key, "tags.0")
        self.assertIsNone(validate(app.CacheKey, '{"tags": ["system-reminder", "env"]}'))


if __name__ == "__main__":
    unittest.main()
