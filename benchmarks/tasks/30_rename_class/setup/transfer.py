from bank import Acct, InsufficientFunds


def transfer(source: Acct, target: Acct, amount):
    """Move amount from source to target; False (and nothing moved) when source cannot pay."""
    try:
        source.withdraw(amount)
    except InsufficientFunds:
        return False
    target.deposit(amount)
    return True


def open_accounts(owners):
    return {owner: Acct(owner) for owner in owners}
