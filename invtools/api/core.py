"""The core every part of the client builds on: the one request path (``get``), the team and
its mode (``team``, ``require_locations``), counting (``stats``, ``measure``, ``provenance``)
and the cache's entries (``in_cache``, ``forget``).

The client is a chain of parts, each knowing the parts below it and nothing above::

    ClientCore  <-  WalksPart (walks)  <-  EndpointsPart (endpoints)  <-  DetailsPart (details)
                <-  FramesPart (dataframes)  <-  Client (client: its life cycle and settings)

so every call a part makes on ``self`` is defined below it, where a reader, mypy and an
editor find it. :class:`invtools.api.client.Client` sets the attributes declared here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from invtools._provenance import Provenance
from invtools._types import TEAM_PATH
from invtools.api.requester import Requester
from invtools.api.stats import Counters, Measurement, RequestStats
from invtools.api.team import Team, team_mode_message
from invtools.errors import APIError, TeamModeError
from invtools.http.cache import forget, held

__all__ = ["ClientCore"]


class ClientCore:
    """What every part of the client uses (see the module's docstring)."""

    base_url: str
    cache_path: Path | None
    concurrency: int
    rate_limit: float
    rate_limit_scope: str
    progress: bool
    _requester: Requester
    _counters: Counters
    _team: Team | None
    _team_lock: threading.RLock

    @property
    def stats(self) -> RequestStats:
        """Cumulative counts since the client was made (a snapshot)."""
        return self._counters.snapshot()

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        """Count the requests of a block -- only this call's, even while other threads use
        the same client.

        >>> from invtools import Client
        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> with c.measure() as m:
        ...     pass
        >>> m.sent, m.from_cache
        (0, 0)
        """
        with self._counters.measure() as m:
            yield m

    def provenance(
        self, measurement: Measurement, path: str, params: Mapping[str, Any] | None = None
    ) -> Provenance:
        """Where a result came from (the record frames carry in ``df.attrs``): team, service,
        endpoint, filters, when, how old the data is, pages, rows, requests sent and answered
        from cache. No token."""
        team = self.team()
        s = measurement.stats
        return Provenance(
            source="api",
            team_id=team.id,
            team_name=team.name,
            base_url=self.base_url,
            endpoint=path,
            filters=params or {},
            fetched_at=measurement.finished_at or datetime.now(UTC),
            data_as_of=measurement.data_as_of,
            pages=s.pages,
            rows=s.rows,
            requests=s.sent,
            from_cache=s.from_cache,
            retries=s.retries,
        )

    # -- the one request path

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, refresh: bool = False
    ) -> Any:
        """GET one response's decoded JSON, or raise an :mod:`invtools.errors` exception.
        ``refresh=True`` skips the cache (and stores the fresh answer).

        >>> from invtools import Client
        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> c.get("items")
        Traceback (most recent call last):
        ...
        invtools.errors.ConfigError: path must start with /v1/, e.g. '/v1/items'; got 'items'
        """
        return self._requester.send(path, params, refresh=refresh)[0]

    # -- team and team mode

    def team(self, *, refresh: bool = False) -> Team:
        """The team the token is bound to; fetched once per client (and cached for hours).

        Raises :class:`AuthenticationError` if the token is refused.
        """
        with self._team_lock:
            if self._team is None or refresh:
                # The team is not data of a frame: its answer does not age one.
                body = self._requester.send(TEAM_PATH, None, refresh=refresh, dated=False)[0]
                self._team = Team.from_body(body)
            return self._team

    def _team_mode_error(self, path: str, server_err: APIError) -> TeamModeError:
        team = self._team
        if team is None and path != TEAM_PATH:
            try:
                team = self.team()
            except Exception:  # noqa: BLE001 - the message can do without the team's name
                team = None
        msg = team_mode_message(team, path)
        if server_err.correlation_id:
            msg += f" [correlation id {server_err.correlation_id}]"
        return TeamModeError(
            msg,
            status=server_err.status,
            type=server_err.type,
            title=server_err.title,
            correlation_id=server_err.correlation_id,
            error_id=server_err.error_id,
            method="GET",
            path=path,
            attempts=server_err.attempts,
            details=server_err.details,
        )

    def require_locations(self, path: str) -> None:
        """Raise :class:`TeamModeError` (naming the team, its mode and what works for it)
        before anything is sent, if this token's team cannot use the location-only ``path``."""
        team = self.team()
        if not team.uses_locations:
            raise TeamModeError(
                team_mode_message(team, path),
                type="/errors/invalid-team-mode",
                title="Team mode does not allow this endpoint",
                method="GET",
                path=path,
            )

    # -- cache

    def in_cache(self, calls: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list[bool]:
        """For each ``(path, params)``, whether the cache holds an answer to that GET, fresh
        or not (exact for answers that never expire, such as a detail at a revision). Reads
        the cache's keys only; nothing is sent.

        >>> from invtools import Client
        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> c.in_cache([("/v1/location-txs/7", {"revision": 0})])
        [False]
        """
        session = self._requester.session
        urls = [self._requester.url(path, params) for path, params in calls]
        return held(session, session.auth.header, urls)

    def forget(self, calls: Iterable[tuple[str, Mapping[str, Any] | None]]) -> None:
        """Delete this token's cached answers to each GET ``(path, params)`` (those cached;
        other teams' entries stay), e.g. a transaction's older revisions once a newer one is
        stored. Nothing is sent.

        >>> from invtools import Client
        >>> c = Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)
        >>> c.forget([("/v1/location-txs/7", {"revision": 0})])
        """
        session = self._requester.session
        forget(
            session,
            session.auth.header,
            [self._requester.url(path, params) for path, params in calls],
        )
