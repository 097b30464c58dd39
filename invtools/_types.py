"""The shared vocabulary: API paths, transaction types, team modes, and the one time parser.

Every module that names a path, checks a transaction type or reads a time takes it from here,
so there is one answer to "what is a valid type" and one way a time is read, whether it comes
from the wire (``"2026-05-02T01:10:00.000Z"``), from an analyst (``since="2026-10"``), or from
an HTTP header (``Retry-After: Wed, 21 Oct 2026 07:28:00 GMT``).

Imports nothing of invtools but :mod:`invtools.errors`.

>>> parse_time("2026-10").isoformat(), parse_time("2026-10", end=True).isoformat()
('2026-10-01T00:00:00+00:00', '2026-10-31T23:59:59.999999+00:00')
>>> to_ms("1970-01-01T00:00:01.500Z")
1500
"""

from __future__ import annotations

import calendar
import contextlib
import numbers
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from invtools._durations import CALENDAR, months_back, parse_duration
from invtools.errors import ArgumentTypeError, ConfigError

#: What durations count back from: a time, or a function giving one; None: the wall clock.
Now = datetime | Callable[[], datetime | None] | None

__all__ = [
    "TX_TYPES",
    "MODE_NAMES",
    "LOCATION_MODE",
    "TEAM_PATH",
    "TXS_PATH",
    "ITEMS_PATH",
    "LOCATIONS_PATH",
    "LOCATION_ONLY_PATHS",
    "location_only",
    "PARTNERS_PATH",
    "MEMBERS_PATH",
    "ATTRS_PATH",
    "check_tx_type",
    "PARTNER_TYPES",
    "check_partner_type",
    "route_of",
    "resource_of",
    "parse_time",
    "parse_window",
    "check_tz",
    "to_ms",
]

# ------------------------------------------------------------------------------- the API's names

TEAM_PATH = "/v1/teams/linked"
#: The transactions list of a Location-mode team (api-facts: the client's decision).
TXS_PATH = "/v1/location-txs"
ITEMS_PATH = "/v1/items"
LOCATIONS_PATH = "/v1/locations"
PARTNERS_PATH = "/v1/partners"
MEMBERS_PATH = "/v1/members"
ATTRS_PATH = "/v1/item-attrs"

#: The lists (and their details) only a team that manages stock by location can read: the
#: service answers 400 ``/errors/invalid-team-mode`` to any other team (spec part 7).
LOCATION_ONLY_PATHS = (TXS_PATH, ITEMS_PATH, LOCATIONS_PATH)

#: The transaction types, in the order every table and picture shows them.
TX_TYPES = ("in", "out", "move", "adjust")
#: Partner types by name, as the wire encodes them.
PARTNER_TYPES = {"supplier": 0, "customer": 1}

MODE_NAMES = {0: "Basic", 1: "Unit", 2: "Location"}
#: The only mode that "manages stock by location" (spec part 7).
LOCATION_MODE = 2


_ID_SEGMENT = re.compile(r"/\d+(?=/|$)")


def route_of(path: str) -> str:
    """The route template of a path: numeric segments become ``{id}``, the query is dropped.
    One endpoint, one template: what the service counts its rate limit per.

    >>> route_of("/v1/items/7?location_ids=1")
    '/v1/items/{id}'
    """
    path = path.split("?", 1)[0].split("#", 1)[0]
    return _ID_SEGMENT.sub("/{id}", path.rstrip("/") or "/")


def location_only(path: str) -> bool:
    """Whether only a Location-mode team can read ``path`` (:data:`LOCATION_ONLY_PATHS`).

    >>> location_only("/v1/location-txs/7"), location_only("/v1/partners")
    (True, False)
    """
    route = route_of(path)
    return any(route == p or route.startswith(p + "/") for p in LOCATION_ONLY_PATHS)


_RESOURCES = {
    "/v1/location-txs": "transactions",
    "/v1/transactions": "transactions",
    "/v1/location-txs/{id}": "a transaction's detail",
    "/v1/transactions/{id}": "a transaction's detail",
    "/v1/items": "items",
    "/v1/items/{id}": "an item",
    "/v1/locations": "locations",
    "/v1/locations/{id}": "a location",
    "/v1/partners": "partners",
    "/v1/members": "members",
    "/v1/members/{id}": "a member",
    "/v1/item-attrs": "item attributes",
    "/v1/item-attrs/{id}": "an item attribute",
    "/v1/teams/linked": "the team",
}


def resource_of(path: str) -> str:
    """What a path asks for, in the words of the methods (``transactions``, ``items``...):
    progress bars and messages say it, and keep the wire path beside it.

    >>> resource_of("/v1/location-txs"), resource_of("/v1/location-txs/7?revision=2")
    ('transactions', "a transaction's detail")
    >>> resource_of("/v1/somewhere-new")
    '/v1/somewhere-new'
    """
    route = route_of(path)
    return _RESOURCES.get(route, route)


def check_tx_type(value: Any) -> str | tuple[str, ...] | None:
    """A transaction type filter: one type, several (a tuple or list: returned as a tuple in
    the order of :data:`TX_TYPES`, each once; one alone is that type), or None (all); anything
    else is a :class:`ConfigError`.

    >>> check_tx_type("out"), check_tx_type(None), check_tx_type(["out", "in", "out"])
    ('out', None, ('in', 'out'))
    """
    if value is None or (isinstance(value, str) and value in TX_TYPES):
        return value
    if (
        isinstance(value, (tuple, list, set, frozenset))
        and value
        and all(isinstance(v, str) and v in TX_TYPES for v in value)
    ):
        chosen = tuple(t for t in TX_TYPES if t in value)
        return chosen[0] if len(chosen) == 1 else chosen
    raise ConfigError(
        f"type must be one of {', '.join(TX_TYPES)}, several of them (a tuple "
        f"or list, e.g. ('in', 'out')) or None for all; not {value!r}"
    )


def check_partner_type(value: Any) -> int | None:
    """A partner type filter: ``"supplier"`` (0), ``"customer"`` (1), as the wire encodes it.

    >>> check_partner_type("Customer"), check_partner_type(None)
    (1, None)
    """
    if isinstance(value, str):
        if value.lower() not in PARTNER_TYPES:
            raise ConfigError(f"partner type must be 'supplier', 'customer', 0 or 1, not {value!r}")
        return PARTNER_TYPES[value.lower()]
    return value


# ------------------------------------------------------------------------------- times

_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_YEAR = re.compile(r"^(\d{4})$")
_HTTP_DATE = re.compile(r"^[A-Za-z]{3},\s")
#: A number and a unit of time, as pandas spells them ("90D", "12W", "36h", "1 day").
_DURATION = re.compile(r"^\d+(\.\d+)?\s*[A-Za-z]+$")
_EXAMPLES = (
    "e.g. '2026-05-02', '2026-05', '2026-05-02T01:10:00Z', a datetime, '90D' "
    "for the last 90 days or '6M' for the last 6 months"
)


@overload
def parse_time(
    value: str | date | timedelta,
    *,
    end: bool = ...,
    name: str = ...,
    tz: Any = ...,
    now: Now = ...,
) -> datetime: ...
@overload
def parse_time(
    value: Any, *, end: bool = ..., name: str = ..., tz: Any = ..., now: Now = ...
) -> datetime | None: ...
def parse_time(
    value: Any, *, end: bool = False, name: str = "time", tz: Any = None, now: Now = None
) -> datetime | None:
    """A point in time as an aware UTC ``datetime`` (None stays None).

    Accepts a ``datetime`` or ``pandas.Timestamp``, a ``date``, a
    ``numpy.datetime64``, or a string: ISO 8601 (``"2026-05-02T01:10:00.000Z"``, a date
    ``"2026-05-02"``, a month ``"2026-05"``, a year ``"2026"``) or an HTTP date (``Retry-After``).
    A date, month or year stands for its first moment, or with ``end=True`` its last (so
    ``until="2026-05"`` keeps all of May). A time without a zone is in ``tz`` (a zone name
    such as ``"Europe/Paris"``; default UTC). A length of time counts back from ``now`` (an
    aware time, or a function giving one, asked only then; default the wall clock; the client
    passes the service's clock: docs/explanation/now.md): a ``timedelta`` (``pandas.Timedelta``
    too) or a duration with a unit (``"90D"``, ``"12W"``, ``"36h"``), so ``since="90D"`` is the
    last 90 days; calendar months or years (``"6M"``, ``"1Y"``) count back that many months,
    the day kept (:func:`months_back`). Anything else is a :class:`ConfigError` naming
    ``name``.

    >>> parse_time("2026-05-02T01:10:00.000Z")
    datetime.datetime(2026, 5, 2, 1, 10, tzinfo=datetime.timezone.utc)
    >>> parse_time("2026-05-02", end=True).time()
    datetime.time(23, 59, 59, 999999)
    >>> parse_time("2026-05-02", tz="Europe/Paris").isoformat()
    '2026-05-01T22:00:00+00:00'
    """
    if value is None:
        return None
    zone = _zone(tz)
    if isinstance(value, timedelta):  # pandas.Timedelta too: back from now
        return _now(now) - parse_duration(value, name=name)
    if isinstance(value, datetime):  # pandas.Timestamp too
        if value != value:  # NaT
            raise ConfigError(f"{name} is NaT (not a time); give a time, {_EXAMPLES}")
        if hasattr(value, "to_pydatetime"):
            value = value.to_pydatetime()
        return (value.replace(tzinfo=zone) if value.tzinfo is None else value).astimezone(UTC)
    if isinstance(value, date):
        return _span(value, end=end, zone=zone)
    if type(value).__name__ == "datetime64":  # numpy, without importing it
        if value != value:
            raise ConfigError(f"{name} is NaT (not a time); give a time, {_EXAMPLES}")
        return parse_time(value.astype("datetime64[us]").item(), end=end, name=name, tz=tz)
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{name} must be a date or time ({_EXAMPLES}), not {type(value).__name__} {value!r}"
        )
    return _parse_text(value.strip(), value, end, name, zone, now)


def _now(now: Now) -> datetime:
    when = now() if callable(now) else now
    return datetime.now(UTC) if when is None else when


def _zone(tz: Any):
    if tz is None or tz == "UTC":
        return UTC
    if not isinstance(tz, str):
        return tz  # a tzinfo
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"tz={tz!r} is not a time zone name (e.g. 'UTC', 'Europe/Paris')"
        ) from None


def _parse_text(text: str, original: str, end: bool, name: str, zone, now: Now) -> datetime:
    if m := CALENDAR.match(text):  # "6M", "1Y": calendar months back from now
        months = int(m[1]) * (1 if m[2] == "M" else 12)
        if months < 1:
            raise ConfigError(f"{name}={original!r} must be at least one month")
        return months_back(_now(now), months, name=name)
    if _DURATION.match(text):  # "90D", "12W", "36h": back from now
        return _now(now) - parse_duration(text, name=name)
    if m := _YEAR_MONTH.match(text):
        year, month = int(m[1]), int(m[2])
        if 1 <= month <= 12:
            last = calendar.monthrange(year, month)[1]
            return _span(date(year, month, 1), date(year, month, last), end=end, zone=zone)
    elif m := _YEAR.match(text):
        year = int(m[1])
        return _span(date(year, 1, 1), date(year, 12, 31), end=end, zone=zone)
    elif _HTTP_DATE.match(text):
        with contextlib.suppress(TypeError, ValueError):
            return parse_time(parsedate_to_datetime(text), name=name)
    else:
        with contextlib.suppress(ValueError):
            if len(text) == 10:
                return _span(date.fromisoformat(text), end=end, zone=zone)
            return parse_time(datetime.fromisoformat(text), name=name, tz=zone)
    raise ConfigError(f"{name}={original!r} is not a date or time; {_EXAMPLES}")


def _span(first: date, last: date | None = None, *, end: bool, zone) -> datetime:
    """The first moment of the day ``first`` in ``zone`` (as UTC), or with ``end`` the last
    moment of the day ``last`` (a month or a year: its first and last days)."""
    if end:
        return datetime.combine(last or first, datetime.max.time(), tzinfo=zone).astimezone(UTC)
    return datetime.combine(first, datetime.min.time(), tzinfo=zone).astimezone(UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ms(value: Any, *, name: str = "time") -> int:
    """Epoch milliseconds of a time that :func:`parse_time` reads (exact: no float rounding).

    >>> to_ms("2026-05-02T01:10:00.000Z")
    1777684200000
    """
    when = parse_time(value, name=name)
    if when is None:
        raise ConfigError(f"{name} is missing")
    return (when - _EPOCH) // timedelta(milliseconds=1)


def parse_window(
    since: Any, until: Any, *, now: Now = None
) -> tuple[datetime | None, datetime | None]:
    """``since`` and ``until`` as :func:`parse_time` reads them (``until`` to the end of its
    day, month or year; durations back from ``now``), a :class:`ConfigError` when ``since`` is
    after ``until``.

    >>> [t.isoformat() for t in parse_window("2026-05", "2026-05")]
    ['2026-05-01T00:00:00+00:00', '2026-05-31T23:59:59.999999+00:00']
    >>> parse_window("2026-06", "2026-05")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: since (2026-06-01 00:00) is after until (2026-05-31 23:59)
    """
    lo = parse_time(since, name="since", now=now)
    hi = parse_time(until, end=True, name="until", now=now)
    if lo and hi and lo > hi:
        raise ConfigError(f"since ({lo:%Y-%m-%d %H:%M}) is after until ({hi:%Y-%m-%d %H:%M})")
    return lo, hi


def check_tz(tz: Any, who: str | None = None) -> str:
    """``tz`` if pandas knows the time zone name (None is ``"UTC"``); another kind of object is
    an :class:`ArgumentTypeError`, an unknown name a :class:`ConfigError`, their messages
    beginning with ``who`` (the function called) when given.

    >>> check_tz(None), check_tz("Asia/Seoul")
    ('UTC', 'Asia/Seoul')
    >>> check_tz("Mars/Olympus", who="to_excel")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: to_excel: tz='Mars/Olympus' is not a time zone name (e.g. 'UTC', 'Europe/Paris')
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if tz is None:
        return "UTC"
    head = f"{who}: " if who else ""
    if not isinstance(tz, str):
        raise ArgumentTypeError(
            f"{head}tz must be a time zone name such as 'Europe/Paris', not {type(tz).__name__}"
        )
    import pandas as pd  # only here: the names that matter are those pandas takes

    try:
        pd.Timestamp(0, tz="UTC").tz_convert(tz)
    except Exception:  # pytz and zoneinfo raise different errors for an unknown zone
        raise ConfigError(
            f"{head}tz={tz!r} is not a time zone name (e.g. 'UTC', 'Europe/Paris')"
        ) from None
    return tz


def check_id(value: Any, *, name: str = "id") -> int:
    """One API id as an ``int``: a whole number (numpy's too) or its digits as text. A float
    or a bool is refused: ``100001.9`` is no id, and must not become ``100001``.

    >>> check_id(100001), check_id("100001")
    (100001, 100001)
    >>> check_id(100001.9, name="item id")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: item id must be a whole number, like 100001; got 100001.9
    """
    digits = isinstance(value, str) and value.strip().isdecimal()
    if isinstance(value, bool) or not (digits or isinstance(value, numbers.Integral)):
        raise ConfigError(f"{name} must be a whole number, like 100001; got {value!r}")
    return int(value)


def check_ids(values: Any, *, name: str = "ids") -> list[int] | None:
    """A list of ids (None stays None); one id alone is a list of one.

    >>> check_ids([1, "2"]), check_ids(3), check_ids(None)
    ([1, 2], [3], None)
    >>> check_ids([1.7], name="item_ids")
    Traceback (most recent call last):
    ...
    invtools.errors.ConfigError: item_ids must be whole numbers, like [100001, 100002]; got 1.7 among them
    """  # noqa: E501 - the doctest shows the error message whole, on one line
    if values is None:
        return None
    if isinstance(values, (numbers.Integral, str)) and not isinstance(values, bool):
        values = [values]
    try:
        items = list(values)
    except TypeError:
        raise ConfigError(
            f"{name} must be whole numbers, like [100001, 100002]; got {values!r}"
        ) from None
    out = []
    for v in items:
        try:
            out.append(check_id(v))
        except ConfigError:
            raise ConfigError(
                f"{name} must be whole numbers, like [100001, 100002]; got {v!r} among them"
            ) from None
    return out
