"""A shopping cart."""


class Cart:
    def __init__(self, items=[]):
        self.items = items

    def add(self, name, price, quantity=1):
        self.items.append((name, price, quantity))

    def total(self):
        return round(sum(price * quantity for _, price, quantity in self.items), 2)

    def __len__(self):
        return sum(quantity for _, _, quantity in self.items)
