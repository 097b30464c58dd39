"""HTTP for the client: the session (requests + requests-cache + pacing), cache keys, pacing
budgets, what to retry and how long to wait, and what a transport failure means.

Modules: :mod:`~invtools.http.session` (``make_session``, with the expiry policy its caller
hands in), :mod:`~invtools.http.cache` (where the cache lives, per-token keys,
reading/forgetting/clearing a token's entries), :mod:`~invtools.http.cachefile` (the cache's
SQLite file: bounded waits for its lock, its failures as the package's ``CacheError``),
:mod:`~invtools.http.pacing` (per-token budgets that follow what the server states and does,
on an injectable wall clock, shared by processes through a small SQLite file:
:mod:`~invtools.http.budgetstore`), :mod:`~invtools.http.retries` (backoff, 429 reset
headers), :mod:`~invtools.http.transport` (requests exceptions classified),
:mod:`~invtools.http.upkeep` (pruning a cache file of invtools' entries no client reads again,
through requests-cache's public API).

May import: the foundation (``invtools.errors``, ``invtools._config``, ``invtools._types``,
``invtools._files``, ``invtools._clock``), requests, requests-cache. Nothing
here knows about endpoints, pages, frames or teams.
"""

from invtools.http.pacing import RATE_LIMIT_SCOPES, Budget, shared_budget
from invtools.http.session import make_session

__all__ = ["make_session", "Budget", "shared_budget", "RATE_LIMIT_SCOPES"]
