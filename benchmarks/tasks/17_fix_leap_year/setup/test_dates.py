import unittest

from dates import days_in_month, days_in_year, is_leap


class LeapYearTest(unittest.TestCase):
    def test_common_years(self):
        self.assertTrue(is_leap(2024))
        self.assertFalse(is_leap(2023))

    def test_centuries(self):
        self.assertFalse(is_leap(1900))
        self.assertTrue(is_leap(2000))

    def test_february(self):
        self.assertEqual(days_in_month(1900, 2), 28)
        self.assertEqual(days_in_month(2000, 2), 29)
        self.assertEqual(days_in_year(2100), 365)


if __name__ == "__main__":
    unittest.main()
