import bank
from transfer import open_accounts, transfer

if __name__ == "__main__":
    accounts = open_accounts(["ann", "bo"])
    accounts["ann"].deposit(100)
    print(transfer(accounts["ann"], accounts["bo"], 30), transfer(accounts["bo"], accounts["ann"], 50))
    savings = bank.Acct("ann-savings", 500)
    print(sorted(accounts.values(), key=lambda a: a.owner), savings)
