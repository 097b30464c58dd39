"""The stand-in server: BoxHero's read API on 127.0.0.1 with seeded, realistic demo data.

The real service has no test tokens, so notebooks, the demo and the tests run against this.
It implements the API contract (``spec/inventory-api.md`` plus the service's observed
behaviour), never the client's idea of it, and imports nothing of the client side.

>>> from invtools.sandbox import serve
>>> with serve(size=200) as sb:
...     sorted(sb.tokens)
['basic', 'shop']
"""

from invtools.sandbox.limits import Faults
from invtools.sandbox.server import QUIRKS, RequestRecord, Sandbox, TeamView, serve

__all__ = ["serve", "Faults", "Sandbox", "RequestRecord", "TeamView", "QUIRKS"]
