import unittest

from cart import Cart


class CartTest(unittest.TestCase):
    def test_total(self):
        cart = Cart()
        cart.add("tea", 3.5, 2)
        cart.add("mug", 8.0)
        self.assertEqual(cart.total(), 15.0)
        self.assertEqual(len(cart), 3)

    def test_carts_are_independent(self):
        first = Cart()
        first.add("tea", 3.5)
        second = Cart()
        self.assertEqual(len(second), 0)
        self.assertEqual(second.total(), 0)

    def test_starting_items(self):
        cart = Cart([("pen", 1.25, 4)])
        self.assertEqual(cart.total(), 5.0)


if __name__ == "__main__":
    unittest.main()
