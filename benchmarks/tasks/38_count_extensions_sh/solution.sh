#!/usr/bin/env bash
# Reference solution: proves check.sh can pass (tests/benchmarks checks both ways).
set -eu
cat > count_ext.sh <<'SH'
#!/usr/bin/env bash
# Usage: count_ext.sh DIR -- how many files of each extension are directly in DIR.
set -eu
find "$1" -mindepth 1 -maxdepth 1 -type f -name '*.*' | sed 's/.*\.//' | LC_ALL=C sort | uniq -c |
    awk '{print $2, $1}'
SH
chmod +x count_ext.sh
