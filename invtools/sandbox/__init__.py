"""The stand-in server: BoxHero's read API on 127.0.0.1 with seeded, realistic demo data.

The real service has no test tokens, so notebooks, the demo and the tests run against this.
It implements the API contract (``spec/inventory-api.md`` plus the service's observed
behaviour), never the client's idea of it: this package imports nothing of invtools outside
``invtools.sandbox`` (a client checked against a server built from its own code proves
nothing), only the standard library.

What lives where (``->``: the package's modules it imports; there are no cycles)::

    server     HTTP plumbing (threads, keep-alive, stopping) and serve()
                                                        -> service
    service    the Sandbox object (options, request log, mutations) and the request
               pipeline (faults, auth, route, rate limit, team mode)
                                                        -> data, routes, store, limits
    routes     routes, parameter checks, endpoint handlers, the error envelope
                                                        -> store, txlog
    limits     the rate limiter, the fault injector and the skewed Date (pure, clock
               passed in)
    data       build(): the demo teams' records (the shop, its branches, the café)
                                               -> catalogue, teams, history, store, txlog
    history    a shop's simulated history               -> catalogue, store, txlog
    catalogue  the shop's fixed data (catalogue, locations, members, ...)
    teams      the other demo teams' fixed data (branches, café)  -> catalogue
    store      TeamStore (one team: JSON views, its clock, mutations), TeamView
                                                        -> catalogue, txlog, wire
    txlog      the columnar transaction log: replay, keyset paging
    wire       the one codec of times (parse_time, fmt_time), quantities and money

Names a module exports for its neighbours are public in that module and listed in its
``__all__``; only the names below are the package's public surface.

>>> from invtools.sandbox import serve
>>> with serve(size=200) as sb:
...     sorted(sb.tokens)
['basic', 'shop']
"""

from invtools.sandbox.limits import Faults
from invtools.sandbox.server import serve
from invtools.sandbox.service import QUIRKS, RequestRecord, Sandbox
from invtools.sandbox.store import TeamView

__all__ = ["serve", "Faults", "Sandbox", "RequestRecord", "TeamView", "QUIRKS"]
