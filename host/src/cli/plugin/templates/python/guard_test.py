import unittest

import app
from wasmgate_plugin.guard import RequestVerdict_Refuse, StreamVerdict_Stop, answer, text, validate

OPTIONS = '{"words": ["falcon"]}'


class GuardTest(unittest.TestCase):
    def test_requests_that_mention_a_word_are_refused(self):
        request = '{"messages": [{"role": "user", "content": "About Falcon?"}]}'
        self.assertIsInstance(app.Guard().check_request(OPTIONS, request), RequestVerdict_Refuse)

    def test_a_word_split_over_deltas_stops_the_answer(self):
        guard = answer(app.Words, OPTIONS)
        self.assertNotIsInstance(guard.push([text("the fal")]), StreamVerdict_Stop)
        self.assertIsInstance(guard.push([text("con flies")]), StreamVerdict_Stop)

    def test_no_words_is_refused(self):
        self.assertEqual(validate(app.Guard, '{"words": []}').key, "words")


if __name__ == "__main__":
    unittest.main()
