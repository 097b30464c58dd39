"""The API client: :class:`Client` (life cycle and low-level calls), its resource methods
(:mod:`~invtools.api.endpoints`), transaction details several at once
(:mod:`~invtools.api.details`, over the ordered concurrent map :mod:`~invtools.api.fanout`)
and DataFrame methods (:mod:`~invtools.api.dataframes`), the
one request path (:mod:`~invtools.api.requester`), the spec's page-walking rules
(:mod:`~invtools.api.pagination`, pure), list walks replayed from the cache whole or fetched
fresh (:mod:`~invtools.api.walks`) over the walk record beside the cache
(:mod:`~invtools.api.walkrecord`), one walk in several cursor chains merged into the rows of one
plain walk (:mod:`~invtools.api.walker`; their plans, pure, in :mod:`~invtools.api.plan`; their
pages as one frame in :mod:`~invtools.api.framemerge`), request statistics
(:mod:`~invtools.api.stats`), the team and
the team-mode rule (:mod:`~invtools.api.team`), the token's auth object
(:mod:`~invtools.api.auth`), how long each endpoint's answers are cached
(:mod:`~invtools.api.policy`), and what a cache holds per team and pruning it
(:mod:`~invtools.api.cacheinfo`: ``cache_info``, ``prune_cache``).

May import: :mod:`invtools.http`, :mod:`invtools.frames` (pure), the foundation
(``invtools.errors``, ``_config``, ``_types``, ``_clock``, ``_progress``, ``_provenance``).
Nothing here imports the mirror, plots, widgets or the stand-in server.
"""

from invtools.api.client import Client
from invtools.api.pagination import Page, RawPage
from invtools.api.stats import Measurement, RequestStats
from invtools.api.team import Team

__all__ = ["Client", "Team", "Page", "RawPage", "RequestStats", "Measurement"]
