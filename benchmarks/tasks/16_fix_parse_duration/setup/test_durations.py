import unittest

from durations import format_duration, parse_duration


class ParseDurationTest(unittest.TestCase):
    def test_single_units(self):
        self.assertEqual(parse_duration("5s"), 5)
        self.assertEqual(parse_duration("2m"), 120)
        self.assertEqual(parse_duration("1h"), 3600)

    def test_several_digits(self):
        self.assertEqual(parse_duration("1h30m"), 5400)
        self.assertEqual(parse_duration("90s"), 90)

    def test_round_trip(self):
        for seconds in (0, 59, 61, 3600, 7507):
            self.assertEqual(parse_duration(format_duration(seconds)), seconds)

    def test_garbage(self):
        with self.assertRaises(ValueError):
            parse_duration("soon")


if __name__ == "__main__":
    unittest.main()
