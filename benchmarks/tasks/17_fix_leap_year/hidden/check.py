"""is_leap and days_in_month agree with the calendar module on every year from 1 to 4000."""

import calendar
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from dates import days_in_month, is_leap  # noqa: E402

for year in range(1, 4001):
    if bool(is_leap(year)) != calendar.isleap(year):
        sys.exit(1)
    if any(days_in_month(year, m) != calendar.monthrange(year, m)[1] for m in (1, 2, 4, 12)):
        sys.exit(1)
