"""The sandbox's one wire codec for times, quantities and money.

Times are held as integer milliseconds since the epoch (UTC) and go out as
``2026-05-02T01:10:00.000Z``; :func:`parse_time` is the one way in (wire strings, any ISO-8601
string, milliseconds, datetimes), :func:`fmt_time` the one way out. Quantities are floats inside
and go out as JSON numbers without a needless ``.0`` (:func:`num`). Money (an item's ``cost``
and ``price``) is held as it goes out, a decimal string (:func:`money` is the way in).

>>> fmt_time(parse_time("2026-05-02T01:10:00Z"))
'2026-05-02T01:10:00.000Z'
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

__all__ = ["fmt_time", "parse_time", "num", "money"]


def fmt_time(ms: int) -> str:
    """Milliseconds since the epoch -> the wire format.

    >>> fmt_time(0), fmt_time(1500)
    ('1970-01-01T00:00:00.000Z', '1970-01-01T00:00:01.500Z')
    """
    s, rest = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{rest:03d}Z"


def parse_time(value: str | int | datetime) -> int:
    """A time -> milliseconds since the epoch.

    Accepts the wire format or any ISO-8601 string (no offset = UTC), milliseconds (returned as
    they are) and datetimes (naive = UTC; a pandas Timestamp is one).

    >>> parse_time("1970-01-01T00:00:01.500Z"), parse_time("1970-01-01T02:00:00+02:00")
    (1500, 0)
    >>> parse_time(1500), parse_time(datetime(1970, 1, 1, 0, 0, 2))
    (1500, 2000)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    dt = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(dt, datetime):
        raise TypeError(
            f"a time is an ISO-8601 string, milliseconds since the epoch (int) or "
            f"a datetime, not {type(value).__name__}"
        )
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


def num(x: float) -> int | float:
    """A quantity as JSON wants it: ``5`` rather than ``5.0``, fractions kept.

    >>> num(5.0), num(2.5), num(-0.0)
    (5, 2.5, 0)
    """
    return int(x) if x == int(x) else x


def money(value: str | int | float | Decimal, places: int = 2, field: str = "amount") -> str:
    """An amount given as the wire's decimal string or as a number -> the wire's string, with
    ``places`` decimals (the team's ``price_decimal_places``). Refused (``ValueError``, naming
    ``field``): anything else, a negative amount, more decimals than ``places``.

    >>> money("4.2"), money(4.2), money(7), money(Decimal("0.5"), places=3)
    ('4.20', '4.20', '7.00', '0.500')
    >>> money("4.205", field="cost")
    Traceback (most recent call last):
    ValueError: cost is a decimal string or a number >= 0 with at most 2 decimals, not '4.205'
    """
    step = Decimal(1).scaleb(-places)
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
            raise InvalidOperation
        amount = Decimal(str(value).strip())
        if amount.is_signed() or amount != amount.quantize(step):
            raise InvalidOperation
    except InvalidOperation:
        raise ValueError(
            f"{field} is a decimal string or a number >= 0 with at most {places} decimals, "
            f"not {value!r}"
        ) from None
    return str(amount.quantize(step))
