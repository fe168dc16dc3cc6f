"""Apply every plugin to each argument: python3 app.py WORD..."""

import sys

from plugins import PLUGINS


def apply_all(text):
    return {name: transform(text) for name, transform in sorted(PLUGINS.items())}


if __name__ == "__main__":
    for word in sys.argv[1:] or ["hello"]:
        for name, result in apply_all(word).items():
            print(f"{name}: {result}")
