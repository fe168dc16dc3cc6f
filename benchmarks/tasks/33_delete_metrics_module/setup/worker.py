from metrics import count


def process(orders):
    """The ids of the orders with something to ship, in order."""
    shipped = []
    for order in orders:
        if order["qty"] <= 0:
            count("skipped")
            continue
        shipped.append(order["id"])
        count("shipped")
    return shipped


if __name__ == "__main__":
    print(process([{"id": 7, "qty": 1}, {"id": 8, "qty": -1}]))
