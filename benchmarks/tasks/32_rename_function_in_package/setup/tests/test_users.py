import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from api import get_usr  # noqa: E402
from api.routes import handle  # noqa: E402


class UsersTest(unittest.TestCase):
    def test_get_usr(self):
        self.assertEqual(get_usr(1)["name"], "Ada")
        self.assertIsNone(get_usr(42))

    def test_route(self):
        self.assertEqual(handle("/users/1")[0], 200)
        self.assertEqual(handle("/users/42"), (404, None))


if __name__ == "__main__":
    unittest.main()
