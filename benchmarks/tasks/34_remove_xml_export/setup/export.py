"""Export the records of a JSON file (a list of flat objects) as json, csv or xml on stdout."""

import argparse
import csv
import io
import json

from xml_export import to_xml


def to_csv(records):
    if not records:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue().rstrip("\n")


FORMATS = {
    "json": lambda records: json.dumps(records, indent=2, sort_keys=True),
    "csv": to_csv,
    "xml": to_xml,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("source", help="a JSON file holding a list of objects")
    parser.add_argument("--format", choices=sorted(FORMATS), default="json")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as handle:
        records = json.load(handle)
    print(FORMATS[args.format](records))


if __name__ == "__main__":
    main()
