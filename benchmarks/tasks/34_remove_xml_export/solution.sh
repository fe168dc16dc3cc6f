#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
rm xml_export.py
sed -i '/^from xml_export import to_xml$/,+1d; /^    "xml": to_xml,$/d; s/as json, csv or xml on stdout/as json or csv on stdout/' export.py
