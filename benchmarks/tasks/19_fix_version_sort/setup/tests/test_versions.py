import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from versions import is_newer, latest, sort_versions  # noqa: E402


class VersionsTest(unittest.TestCase):
    def test_numeric_order(self):
        self.assertEqual(sort_versions(["1.10.0", "1.9.2", "1.2.0"]), ["1.2.0", "1.9.2", "1.10.0"])

    def test_latest(self):
        self.assertEqual(latest(["2.0.0", "10.0.1", "9.9.9"]), "10.0.1")
        self.assertIsNone(latest([]))

    def test_is_newer(self):
        self.assertTrue(is_newer("1.10.0", "1.9.0"))
        self.assertFalse(is_newer("1.2.3", "1.2.3"))


if __name__ == "__main__":
    unittest.main()
