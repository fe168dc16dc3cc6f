from settings import SHOP_NAME


def receipt(paid, total):
    change = paid - total
    return f"{SHOP_NAME}: paid ${paid:.2f}, change ${change:.2f}"


if __name__ == "__main__":
    print(receipt(100, 87.3))
