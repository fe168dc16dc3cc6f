#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
printf 'CURRENCY = "EUR"\n' >> settings.py
sed -i 's/^from settings import SHOP_NAME, TAX_RATE$/from settings import CURRENCY, SHOP_NAME, TAX_RATE/; s/ \${price:.2f}/ {price:.2f} {CURRENCY}/; s/ \${total:.2f}/ {total:.2f} {CURRENCY}/' invoice.py
sed -i 's/^from settings import SHOP_NAME$/from settings import CURRENCY, SHOP_NAME/; s/\${paid:.2f}/{paid:.2f} {CURRENCY}/; s/\${change:.2f}/{change:.2f} {CURRENCY}/' receipt.py
