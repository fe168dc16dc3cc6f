"""Carts share nothing, whatever the order of use."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from cart import Cart  # noqa: E402

rng = random.Random(18)
carts = [Cart() for _ in range(5)]
start = [("pen", 1.25, 4)]
carts.append(Cart(start))
mine = [[] for _ in carts]
mine[-1] = list(start)
for _ in range(100):
    i = rng.randrange(len(carts))
    item = (rng.choice(["tea", "mug", "pen"]), rng.choice([0.5, 1.25, 3.0]), rng.randint(1, 3))
    carts[i].add(*item)
    mine[i].append(item)
for cart, items in zip(carts, mine):
    if len(cart) != sum(q for _, _, q in items) or cart.total() != round(sum(p * q for _, p, q in items), 2):
        sys.exit(1)
sys.exit(0 if len(Cart()) == 0 else 1)
