"""Bank accounts."""


class InsufficientFunds(Exception):
    pass


class Acct:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(f"{self.owner} has only {self.balance}")
        self.balance -= amount

    def __repr__(self):
        return f"{type(self).__name__}({self.owner!r}, {self.balance})"
