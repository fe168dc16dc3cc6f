"""Delete the leftover .tmp and .bak files of a folder (not of its sub-folders)."""

import argparse
from pathlib import Path

JUNK = (".tmp", ".bak")


def junk_files(folder):
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix in JUNK)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", help="the folder to clean")
    args = parser.parse_args()
    for path in junk_files(args.folder):
        path.unlink()
        print(f"removed {path.name}")


if __name__ == "__main__":
    main()
