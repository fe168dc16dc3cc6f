"""Show the items of a todo file: one item per line, "[ ] open item" or "[x] finished item"."""

import argparse


def read_items(path):
    items = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith(("[ ] ", "[x] ")):
                items.append((line[1] == "x", line[4:]))
    return items


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", help="the todo file")
    parser.add_argument("--done", action="store_true", help="show finished items instead of open ones")
    args = parser.parse_args(argv)
    shown = [text for done, text in read_items(args.file) if done == args.done]
    for number, text in enumerate(shown, 1):
        print(f"{number}. {text}")


if __name__ == "__main__":
    main()
