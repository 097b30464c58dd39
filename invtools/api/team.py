"""The team a token is bound to, and what the team-mode rule means for the user.

Most endpoints serve only teams that manage stock by location (mode 2, "Location"); the server
answers anything else with 400 ``/errors/invalid-team-mode``. :func:`team_mode_message` says
which team, which mode, and what works for it instead.

>>> t = Team.from_body({"id": 7, "name": "Back Office", "mode": 0})
>>> print(team_mode_message(t, "/v1/items/5"))      # doctest: +NORMALIZE_WHITESPACE
GET /v1/items/{id} (an item) needs a team that manages stock by location (mode 2, Location);
team 'Back Office' (id 7) is in Basic mode (0). What works for every team: team() /v1/teams/linked,
members() /v1/members, partners() /v1/partners, attributes() /v1/item-attrs. For items,
stock, locations and transactions, use a token of a team in Location mode.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from invtools._types import LOCATION_MODE, MODE_NAMES, TEAM_PATH, resource_of, route_of
from invtools.errors import APIError, TeamModeError

__all__ = ["Team", "EVERY_TEAM", "team_mode_message", "require_locations"]

#: What a team that does not manage stock by location can still call.
EVERY_TEAM = (
    "team() /v1/teams/linked",
    "members() /v1/members",
    "partners() /v1/partners",
    "attributes() /v1/item-attrs",
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
        obj = body
        if (
            isinstance(body, Mapping)
            and "mode" not in body
            and isinstance(body.get("item"), Mapping)
        ):
            obj = body["item"]
        if (
            not isinstance(obj, Mapping)
            or not isinstance(obj.get("mode"), int)
            or isinstance(obj.get("mode"), bool)
        ):
            raise APIError(
                f"{TEAM_PATH} answered without a team (id, name, mode); "
                "is base_url the inventory API?",
                status=200,
                path=TEAM_PATH,
            )
        mode = obj["mode"]
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
            f"{e(self.mode_name)} mode {self.mode})"
        )


def team_mode_message(team: Team | None, path: str) -> str:
    """Why ``path`` is refused for ``team`` (None: not known yet), and what to do instead."""
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
        f"{needs}; {who}. What works for every team: {', '.join(EVERY_TEAM)}. "
        "For items, stock, locations and transactions, use a token of a team in "
        "Location mode."
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
