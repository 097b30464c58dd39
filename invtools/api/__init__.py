"""The API client: :class:`Client` (:mod:`~invtools.api.client`: settings, the session it owns,
life cycle, statistics, the cache's upkeep) over the resources as the API sends them
(:mod:`~invtools.api.resources`: ``team``, ``get``, every list and object) and, built on those,
as typed frames (:mod:`~invtools.api.dataframes`; the lines frames, whole or growing while
their details stream in: :mod:`~invtools.api.lineframes`, :mod:`~invtools.api.growing`); the
one request path (:mod:`~invtools.api.requester`: retries, errors), what it has in flight and
its close (:mod:`~invtools.api.inflight`), the tokens a service refused, whose cached answers
no client serves (:mod:`~invtools.api.refusals`), what the client knows of the endpoints (the
team and its mode, how long answers are kept: :mod:`~invtools.api.endpoints`), transaction
details several at once over an ordered concurrent map (:mod:`~invtools.api.details`), request
statistics (:mod:`~invtools.api.stats`), what a cache holds and pruning it
(:mod:`~invtools.api.cacheinfo`), what fetching each window's lines would cost
(:mod:`~invtools.api.estimates`: ``fetch_costs``).

The walk engine: the record a walk leaves (:mod:`~invtools.api.records`), which chains the
next one runs (:mod:`~invtools.api.plan`), the chains of a fresh walk
(:mod:`~invtools.api.chains`), a walk replayed or fetched and handed out
(:mod:`~invtools.api.walk`), over the spec's paging rules (:mod:`~invtools.api.pagination`,
pure). The engine knows nothing of the client: it is handed a fetch function, a store and
counters.

May import: :mod:`invtools.http`, :mod:`invtools.frames` (pure), the foundation
(``invtools.errors``, ``_config``, ``_types``, ``_clock``, ``_progress``,
``_files``). Nothing here imports the mirror, plots, widgets or the stand-in server.
"""

from invtools.api.client import Client
from invtools.api.endpoints import Team
from invtools.api.growing import GrowingLines
from invtools.api.pagination import Page, RawPage
from invtools.api.stats import Measurement, RequestStats

__all__ = ["Client", "Team", "Page", "RawPage", "RequestStats", "Measurement", "GrowingLines"]
