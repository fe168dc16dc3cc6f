"""Count the lines, words and characters of a text file, like a small wc."""

import argparse


def count(text):
    return len(text.splitlines()), len(text.split()), len(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", help="the file to count")
    args = parser.parse_args()
    with open(args.path, encoding="utf-8") as handle:
        lines, words, chars = count(handle.read())
    print(f"lines: {lines}")
    print(f"words: {words}")
    print(f"chars: {chars}")


if __name__ == "__main__":
    main()
