from settings import SHOP_NAME, TAX_RATE

ITEMS = [("Keyboard", 49.0), ("Mouse", 19.5), ("Cable", 4.25)]


def invoice_lines(items):
    lines = [SHOP_NAME]
    for name, price in items:
        lines.append(f"{name:<10} ${price:.2f}")
    total = sum(price for _, price in items) * (1 + TAX_RATE)
    lines.append(f"{'Total':<10} ${total:.2f}")
    return lines


if __name__ == "__main__":
    print("\n".join(invoice_lines(ITEMS)))
