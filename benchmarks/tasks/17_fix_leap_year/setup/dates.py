"""Calendar helpers for the billing module."""

DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    """True when February of this year has 29 days."""
    return year % 4 == 0


def days_in_month(year, month):
    """Number of days in month (1-12) of year."""
    if month == 2 and is_leap(year):
        return 29
    return DAYS[month - 1]


def days_in_year(year):
    return sum(days_in_month(year, month) for month in range(1, 13))
