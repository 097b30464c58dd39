"""Lengths of time as analysts write them: a duration with its unit (``"90D"``, ``"12h"``, a
``timedelta``), calendar months or years back from a moment (``"6M"``, ``"1Y"``), and which of
them count back from now. :mod:`invtools._types` reads times with them.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta
from typing import Any, overload

from invtools.errors import ArgumentTypeError, ConfigError

__all__ = ["CALENDAR", "parse_duration", "months_back", "counts_back"]

#: Calendar months or years back from now ("6M", "1Y"): no fixed length, so not a duration.
CALENDAR = re.compile(r"^(\d+)\s*(M|Y|y)$")


def months_back(when: datetime, months: int, *, name: str = "since") -> datetime:
    """``when`` that many calendar months earlier, the day kept (or the month's last day).

    >>> from datetime import UTC
    >>> months_back(datetime(2026, 8, 31, 9, tzinfo=UTC), 6).isoformat()
    '2026-02-28T09:00:00+00:00'
    """
    year, month = divmod(when.year * 12 + when.month - 1 - months, 12)
    if year < 1:
        raise ConfigError(f"{name}: {months} months before {when:%Y-%m-%d} is before year 1")
    day = min(when.day, calendar.monthrange(year, month + 1)[1])
    return when.replace(year=year, month=month + 1, day=day)


def counts_back(value: Any) -> bool:
    """Whether ``value`` is a length of time back from now (``"90D"``, ``"6M"``, a
    ``timedelta``), not a moment (``"2026-05"``).

    >>> counts_back("90D"), counts_back("6M"), counts_back("2026-05")
    (True, True, False)
    """
    if isinstance(value, str) and CALENDAR.match(value.strip()):
        return True
    try:
        return isinstance(value, str | timedelta) and parse_duration(value) is not None
    except ConfigError:
        return False


# ------------------------------------------------------------------------------- durations

_DURATION_EXAMPLES = "e.g. '90D', '12h', '30min' or a datetime.timedelta"


@overload
def parse_duration(value: None, *, name: str = ..., zero: bool = ...) -> None: ...
@overload
def parse_duration(value: str | timedelta, *, name: str = ..., zero: bool = ...) -> timedelta: ...
def parse_duration(value: Any, *, name: str = "duration", zero: bool = False) -> timedelta | None:
    """A positive length of time as a ``timedelta`` (None stays None; ``zero=True`` also
    accepts a length of zero, ``"0s"``).

    Accepts a ``timedelta`` (``pandas.Timedelta`` too) or a string with a unit (``"90D"``,
    ``"12h"``, ``"1 day"``). A bare number is refused, with the spelling that works (for the
    argument last in ``name``): ``90`` could mean days, seconds or nanoseconds (pandas).

    >>> parse_duration("90D")
    datetime.timedelta(days=90)
    >>> parse_duration(90, name="reorder: look_back")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: reorder: look_back=90 has no unit: write look_back="90D" for days or look_back="90s" for seconds (e.g. '90D', '12h', '30min' or a datetime.timedelta)
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a duration ({_DURATION_EXAMPLES}), not {value!r}")
    if isinstance(value, (int, float, str)):
        text = value.strip() if isinstance(value, str) else f"{value:g}"
        try:
            number = float(text)
        except ValueError:
            import pandas as pd  # only here: pandas reads every unit spelling analysts use

            if m := CALENDAR.match(text):
                days = int(m[1]) * (30 if m[2] == "M" else 365)
                raise ConfigError(
                    f"{name}={value!r} is calendar {'months' if m[2] == 'M' else 'years'}, "
                    f'which have no fixed length: write "{days}D" (about as long), or a '
                    f'window since="{text}" (the frames and the mirror take those)'
                ) from None
            try:
                value = pd.Timedelta(text)
            except (ValueError, TypeError):
                raise ConfigError(
                    f"{name}={value!r} is not a duration ({_DURATION_EXAMPLES})"
                ) from None
        else:
            said = name.rsplit(": ", 1)[-1]  # the argument, without the function's name
            unit = f'has no unit: write {said}="{text}D" for days or {said}="{text}s" for seconds'
            finite = number == number and abs(number) != float("inf")  # nan, inf: no length
            raise ConfigError(
                f"{name}={value!r} {unit if finite else 'is not a duration'} ({_DURATION_EXAMPLES})"
            )
    if not isinstance(value, timedelta) or value != value:  # NaT: a timedelta, but no length
        raise (ConfigError if isinstance(value, timedelta) else ArgumentTypeError)(
            f"{name} must be a duration ({_DURATION_EXAMPLES}), not "
            f"{type(value).__name__} {value!r}"
        )
    if hasattr(value, "to_pytimedelta"):
        value = value.to_pytimedelta()
    # (a datetime.timedelta is at most 999,999,999 days long: always finite)
    if value < timedelta(0) or (value == timedelta(0) and not zero):
        raise ConfigError(f"{name}={value} must be a positive duration ({_DURATION_EXAMPLES})")
    return value
