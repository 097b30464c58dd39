"""The service's clock, checked rather than believed: what "now" is for one client.

The service states its clock in the ``Date`` of its answer about the team; :class:`ServiceClock`
keeps how far that is from this machine's clock (``ahead``) and gives :meth:`~ServiceClock.now`,
what ``since="90D"`` counts back from and what a fresh frame is as of. The rule, in order
(docs/explanation/now.md says it for users):

1. A ``Date`` that is missing, unreadable or before the year 2000 is no clock: this machine's
   clock is used, with a :class:`~invtools.errors.ClockWarning`.
2. A ``Date`` more than a day ahead of this machine's clock is not believed either: this
   machine's clock. A ``Date`` behind it is believed: the stand-in's clock is its data's end,
   weeks behind, and a service may be set wrong the other way only by so much before its own
   rows give it away (rule 4).
3. A later answer (``team(refresh=True)``) whose clock is more than a day from the one held is a
   jump: the clock held is kept. One whose clock is more than :data:`DRIFT` (an hour) ahead of
   the first one held is a drift, however small each step (23 h a refresh stays under a day):
   the clock held is kept too. Each is said with a :class:`~invtools.errors.ClockWarning`.
4. The clock is never older than the rows the service itself returned: a row it recorded
   (``created_at``) more than a day after the clock moves the clock on to that time
   (:meth:`~ServiceClock.saw_recorded`), and what a drift is measured from with it, unless
   that row is itself more than a day ahead of this machine's clock.

Each ``Date`` is read against the moment its answer was made (when the cache stored it), so an
answer read from the cache hours later moves the clock on by its age. The offset is kept
against this machine's real clock (``datetime.now``), never an injected test clock: the times
it is applied to -- when a walk began, when the cache stored an answer -- are on that clock.

>>> clock = ServiceClock()
>>> made = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
>>> clock.stated("Sat, 31 Oct 2026 17:10:00 GMT", made=made)      # behind: believed
>>> str(clock.ahead)
'-31 days, 5:10:00'
>>> import warnings
>>> with warnings.catch_warnings(record=True) as said:
...     warnings.simplefilter("always")
...     clock.stated("Mon, 01 Jan 0001 00:00:00 GMT", made=made)   # no clock: the one held
>>> str(clock.ahead), said[0].category.__name__
('-31 days, 5:10:00', 'ClockWarning')
>>> with warnings.catch_warnings(record=True) as said:
...     warnings.simplefilter("always")
...     clock.stated("Sat, 31 Oct 2026 19:10:00 GMT", made=made)   # drifted 2 h: the one held
>>> str(clock.ahead), str(said[0].message)[:60]
('-31 days, 5:10:00', "The service's clock drifted ahead: its Date says 31 Oct 2026")
"""

from __future__ import annotations

import re
import threading
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

from invtools._types import parse_time
from invtools.errors import ClockWarning, ConfigError

__all__ = ["ServiceClock", "OFF_BY", "DRIFT"]

#: How far a clock may be off before it is not believed: a ``Date`` ahead of this machine's
#: clock (rule 2), one answer's from the clock held (rule 3), the clock behind a row the service
#: recorded (rule 4). A day: far beyond any honest skew or delay (the stand-in's clock moves a
#: minute with each record made), far within the skews that give wrong tables (30 days).
OFF_BY = timedelta(days=1)
#: How far later answers may move the clock ahead of the first one held (rule 3), step by step.
#: A real service's ``Date`` is its wall clock to the second, read against when its answer
#: arrived here: between two answers the two clocks move apart by a latency (seconds), the
#: ``Date``'s whole seconds and what NTP corrects (a slew of at most 0.5 ms a second, under a
#: minute a day). An hour is far beyond that, and far within a window of days. The stand-in's
#: clock only moves a minute with each record made, and stands still as time passes.
DRIFT = timedelta(hours=1)
_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


def _fmt(when: datetime) -> str:
    return when.strftime("%d %b %Y %H:%M UTC")


def _hours(span: timedelta) -> str:
    """A span ahead as a person says it: ``"23 h"``, ``"2 days 22 h"``."""
    days, hours = divmod(round(span / timedelta(hours=1)), 24)
    return (f"{days} day{'s' if days > 1 else ''} " if days else "") + f"{hours} h"


class ServiceClock:
    """One client's reading of the service's clock (the rule: this module's docstring).
    ``ahead`` is None until an answer stated one (then :meth:`now` is this machine's clock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ahead: timedelta | None = None
        #: ``ahead`` as first held (moved on with it by rule 4): what a drift is measured from.
        self.first: timedelta | None = None

    @staticmethod
    def _local() -> datetime:
        return datetime.now(UTC)

    def now(self) -> datetime:
        """The service's clock now."""
        return self._local() + (self.ahead or timedelta(0))

    def of_local(self, when: datetime) -> datetime:
        """A moment of this machine's clock (when an answer arrived) on the service's clock."""
        return when + (self.ahead or timedelta(0))

    def stated(self, date: str | None, *, made: datetime | None = None) -> None:
        """Take the ``Date`` of an answer made at ``made`` (this machine's clock; None: now),
        by rules 1 to 3."""
        made = self._local() if made is None else made
        try:
            when = parse_time(date, name="Date") if isinstance(date, str) else None
        except (ConfigError, OverflowError, ValueError):
            when = None
        year = re.search(r"\b(\d{4})\b", date) if isinstance(date, str) else None
        if year is not None and int(year[1]) < _EARLIEST.year:  # "0001" reads as 2001
            when = None
        with self._lock:
            held = self.ahead
            if when is None or when < _EARLIEST:
                said = f"no usable Date ({date!r})" if date else "no Date"
                self._keep(f"the service's answer about the team had {said}", held)
                return
            ahead = when - made  # how far ahead of what time it was
            if ahead > OFF_BY:
                self._keep(
                    f"the service's Date ({_fmt(when)}) is {ahead.days} day(s) ahead of this "
                    "machine's clock",
                    held,
                )
                return
            if held is not None and abs(ahead - held) > OFF_BY:
                warnings.warn(
                    f"The service's clock jumped: its Date says {_fmt(when)}, the clock held "
                    f"says {_fmt(made + held)}. invtools keeps the clock it held "
                    "(docs/explanation/now.md).",
                    ClockWarning,
                    stacklevel=4,
                )
                return
            first = ahead if self.first is None else self.first
            if held is not None and ahead - first > DRIFT:
                warnings.warn(
                    f"The service's clock drifted ahead: its Date says {_fmt(when)}, "
                    f"{_hours(ahead - first)} ahead of the clock it first gave "
                    f"({_fmt(made + first)}), where a real service's stays within seconds. "
                    f"invtools keeps the clock it held ({_fmt(made + held)}); to "
                    "choose a window yourself, give since= and until= as dates "
                    "(docs/explanation/now.md).",
                    ClockWarning,
                    stacklevel=4,
                )
                return
            self.ahead, self.first = ahead, first

    def _keep(self, why: str, held: timedelta | None) -> None:
        if held is None:
            self.ahead = self.first = timedelta(0)
        used = "the clock it held" if held is not None else "this machine's clock"
        warnings.warn(
            f"{why[0].upper()}{why[1:]}: invtools uses {used} as the service's "
            "(docs/explanation/now.md).",
            ClockWarning,
            stacklevel=5,
        )

    def saw_recorded(self, newest: Any) -> timedelta:
        """Rule 4: the service returned rows recorded (``created_at``) up to ``newest``. When
        that is more than :data:`OFF_BY` after the clock, the clock moves on to it (with a
        :class:`~invtools.errors.ClockWarning`); returns how far it moved (zero when it
        did not)."""
        if newest is None or newest != newest:  # None, NaT
            return timedelta(0)
        newest = newest.to_pydatetime() if hasattr(newest, "to_pydatetime") else newest
        with self._lock:
            now = self.now()
            if newest <= now + OFF_BY or newest > self._local() + OFF_BY:
                return timedelta(0)
            shift = newest - now
            self.ahead = (self.ahead or timedelta(0)) + shift
            self.first = (self.first or timedelta(0)) + shift  # the rows vouch for it
        warnings.warn(
            f"The service's clock ({_fmt(now)}) is older than rows it returned (recorded up to "
            f"{_fmt(newest)}): invtools takes the service's clock to be at least that "
            "(docs/explanation/now.md).",
            ClockWarning,
            stacklevel=4,
        )
        return shift
