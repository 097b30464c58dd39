"""Tokens a service refused (401), in this process: their cached answers are served by no
client until the service accepts the token again.

A 401 deletes nothing (issue 43: a proxy's 401, a 401 of another kind, one page refused mid-walk
or the token tried at another service each deleted every cached answer of the token, and a
re-fetch of 100,000 details takes hours at the real pace). It refuses the token at that
service: from then on every client of this process sends each request of that token to that
service (nothing is answered from the cache, no list walk is replayed, the team a client knows
is asked again, details are not read from the cache in bulk), until the service answers the
token with a success: then everything cached is served again. What is cached for another
token, or for the token at another service, is not touched.

Requests run concurrently, and their answers come back in any order: what counts is the answer
to the request sent last (:func:`ticket`, taken as it is sent). A success to a request sent
before the one refused says nothing of the token since, nor does a 401 to a request sent before
the one accepted (a walk's chain still waiting for its answer when the next call began).

The refusals are kept in this process only, each under a hash of the service and the token
with a salt that is never written anywhere (no token, and no hash of one, is kept).

>>> key = key_of("https://api.example", "Bearer t")
>>> before, after = ticket(), ticket()            # two requests sent, one after the other
>>> answered(key, after, refused=True), refused(key)
(True, True)
>>> answered(key, before, refused=False), refused(key)   # sent before the one refused
(False, True)
>>> answered(key, ticket(), refused=False), refused(key)
(True, False)
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import threading

__all__ = ["key_of", "ticket", "answered", "refused"]

_SALT = secrets.token_bytes(16)
_lock = threading.Lock()
_tickets = itertools.count(1)
#: key -> (the ticket of the request whose answer decided it, whether it was a 401).
_decided: dict[str, tuple[int, bool]] = {}


def key_of(base_url: str, authorization: str | None) -> str:
    """The key of one token (its Authorization header) at one service (its base URL)."""
    seen = f"{base_url}\0{authorization or ''}".encode()
    return hashlib.sha256(_SALT + seen).hexdigest()


def ticket() -> int:
    """Taken as a request starts (before its pacing wait): larger than any taken before."""
    with _lock:
        return next(_tickets)


def answered(key: str, asked: int, *, refused: bool) -> bool:
    """The service answered the token 401 (``refused``) or with a success, to a request sent
    with the ticket ``asked``: it decides, unless a later request's answer already did. True
    when this changed whether the token is refused."""
    with _lock:
        last, was = _decided.get(key, (0, False))
        if asked <= last:
            return False
        _decided[key] = (asked, refused)
        return was != refused


def refused(key: str) -> bool:
    """Whether the token's cached answers at that service are refused."""
    return _decided.get(key, (0, False))[1]
