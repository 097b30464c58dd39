"""What the client knows of the inventory API's endpoints beyond their paths (which are
:mod:`invtools._types`'): the team a token is bound to and the team-mode gate
(:class:`Team`, :func:`require_locations`, :func:`team_mode_message`), and how long each
endpoint's answers are kept (:data:`EXPIRY`, :func:`default_max_age`).

Most endpoints serve only teams that manage stock by location (mode 2, "Location"); the server
answers anything else with 400 ``/errors/invalid-team-mode``. :func:`team_mode_message` says
which team, which mode, and what works for it instead.

>>> t = Team.from_body({"id": 7, "name": "Back Office", "mode": 0})
>>> print(team_mode_message(t, "/v1/items/5"))      # doctest: +NORMALIZE_WHITESPACE
GET /v1/items/{id} (an item) needs a team that manages stock by location (mode 2, Location);
team 'Back Office' (id 7) is in Basic mode (0). What works for every team: team() /v1/teams/linked,
members() /v1/members, partners() /v1/partners, attributes() /v1/item-attrs. For items,
stock, locations and transactions, use a token of a team in Location mode.

The expiry is handed to :func:`invtools.http.session.make_session`: the HTTP layer caches what
it is told and knows no endpoint. The pages of a paginated list are never stored one by one: a
walk keeps them all in one record (:mod:`invtools.api.walk`), since a list walked with cursors
is consistent only as a whole.

>>> EXPIRY[AT_REVISION] == NEVER_EXPIRE      # a detail at a revision: kept for good
True
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from requests_cache import DO_NOT_CACHE

from invtools._types import (
    LOCATION_MODE,
    MODE_NAMES,
    TEAM_PATH,
    parse_duration,
    resource_of,
    route_of,
)
from invtools.errors import APIError, TeamModeError
from invtools.http.cache import NEVER_EXPIRE

__all__ = ["Team", "require_locations", "team_mode_message", "EXPIRY", "default_max_age"]

# -- the team and its mode

#: What a team that does not manage stock by location can still call.
EVERY_TEAM = (
    "team() /v1/teams/linked, members() /v1/members, partners() /v1/partners, "
    "attributes() /v1/item-attrs"
)


@dataclass(frozen=True)
class Team:
    """The team a token is bound to. ``mode``: 0 Basic, 1 Unit, 2 Location.

    >>> t = Team.from_body({"id": 7, "name": "Shop", "mode": 2})
    >>> t.uses_locations, t.mode_name
    (True, 'Location')
    """

    id: int | None
    name: str | None
    mode: int
    mode_name: str
    uses_locations: bool
    currency_symbol: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_body(cls, body: Any) -> Team:
        """Build from ``/v1/teams/linked``'s body, bare or wrapped in ``{"item": ...}``."""
        wrapped = isinstance(body, Mapping) and "mode" not in body
        obj = body.get("item") if wrapped else body
        mode = obj.get("mode") if isinstance(obj, Mapping) else None
        if not isinstance(mode, int) or isinstance(mode, bool):
            raise APIError(
                f"{TEAM_PATH} answered without a team (id, name, mode); "
                "is base_url the inventory API?",
                status=200,
                path=TEAM_PATH,
            )
        return cls(
            id=obj.get("id"),
            name=obj.get("name"),
            mode=mode,
            mode_name=MODE_NAMES.get(mode, f"mode {mode}"),
            uses_locations=mode == LOCATION_MODE,
            currency_symbol=obj.get("currency_symbol"),
            raw=dict(obj),
        )

    def _repr_html_(self) -> str:
        e = html.escape
        return (
            f"<b>{e(str(self.name))}</b> (team {e(str(self.id))}, "
            f"{e(self.mode_name)} mode ({self.mode}))"
        )


def team_mode_message(team: Team | None, path: str, correlation_id: str | None = None) -> str:
    """Why ``path`` is refused for ``team`` (None: not known yet), and what to do instead; with
    the server's ``correlation_id`` when it refused."""
    needs = (
        f"GET {route_of(path)} ({resource_of(path)}) needs a team that manages stock by "
        f"location (mode {LOCATION_MODE}, {MODE_NAMES[LOCATION_MODE]})"
    )
    who = (
        f"team {team.name!r} (id {team.id}) is in {team.mode_name} mode ({team.mode})"
        if team
        else "this token's team does not manage stock by location"
    )
    return (
        f"{needs}; {who}. What works for every team: {EVERY_TEAM}. For items, stock, locations "
        "and transactions, use a token of a team in Location mode."
        + (f" [correlation id {correlation_id}]" if correlation_id else "")
    )


def require_locations(team: Team, path: str) -> None:
    """Raise :class:`TeamModeError` (naming the team, its mode and what works for it) if
    ``team`` cannot read the location-only ``path``: checked before anything is sent."""
    if not team.uses_locations:
        raise TeamModeError(
            team_mode_message(team, path),
            type="/errors/invalid-team-mode",
            title="Team mode does not allow this endpoint",
            method="GET",
            path=path,
        )


# -- how long answers are kept

_HOURS, _MINUTES = timedelta(hours=6), timedelta(minutes=10)

#: A transaction's detail at an explicit revision (groups: its id, the revision): one version
#: of that transaction, which never changes.
AT_REVISION = re.compile(r"/v1/(?:location-txs|transactions)/(\d+)\?(?:[^#]*&)?revision=(\d+)")
_TXS_LIST = re.compile(r"/v1/(location-txs|transactions)(\?|$)")

# How long a cached 200 stays fresh, per endpoint. First match wins; patterns see the URL
# without its scheme.
EXPIRY: dict[re.Pattern, Any] = {
    AT_REVISION: NEVER_EXPIRE,
    re.compile(r"/v1/(location-txs|transactions)/\d+(\?|$)"): timedelta(seconds=60),
    re.compile(r"/v1/(location-txs|transactions|items|partners)(\?|$)"): DO_NOT_CACHE,
    re.compile(r"/v1/teams/linked(\?|$)"): _HOURS,
    re.compile(r"/v1/item-attrs(/\d+)?(\?|$)"): _HOURS,
    re.compile(r"/v1/(items|locations|members)(/\d+)?(\?|$)"): _MINUTES,
}
#: Anything not listed above.
DEFAULT_EXPIRY = _MINUTES


def default_max_age(url: str, max_age: Any = None) -> timedelta:
    """How old a walk of the list at ``url`` may be replayed: ``max_age`` when the caller says
    (``"1h"``, a timedelta), else the transactions list an hour (an analyst re-running a
    notebook within the hour gets the same rows at once, instead of re-walking a list that
    takes minutes at the real service's pace), any other list 10 minutes.

    >>> default_max_age("http://h/v1/location-txs?limit=100")
    datetime.timedelta(seconds=3600)
    >>> default_max_age("http://h/v1/items?limit=100"), default_max_age("http://h/v1/items", "0s")
    (datetime.timedelta(seconds=600), datetime.timedelta(0))
    """
    if max_age is not None:
        return parse_duration(max_age, name="max_age", zero=True)
    return timedelta(hours=1) if _TXS_LIST.search(url.split("://", 1)[-1]) else _MINUTES
