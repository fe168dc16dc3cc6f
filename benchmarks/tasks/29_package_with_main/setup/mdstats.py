"""Print how many headings, links and code blocks a Markdown file has."""

import re
import sys

LINK = re.compile(r"\[[^\]]*\]\([^)]*\)")


def stats(text):
    headings = links = blocks = 0
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            blocks += in_code
            continue
        if in_code:
            continue
        if re.match(r"#{1,6} ", line):
            headings += 1
        links += len(LINK.findall(line))
    return {"headings": headings, "links": links, "code blocks": blocks}


def main(argv):
    if len(argv) != 1:
        print("usage: mdstats FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        for name, count in stats(handle.read()).items():
            print(f"{name}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
