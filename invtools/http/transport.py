"""What a failed request (no usable response) means, and whether to try again.

Only what a second try can cure is retried (refused or dropped connections, timeouts); a bad
URL, a redirect loop, a TLS failure or an unknown error fails at once, because repeating it
only makes the user wait through the backoff for the same answer.

>>> import requests
>>> describe(requests.exceptions.ConnectTimeout("slow")).retryable
True
"""

from __future__ import annotations

from typing import NamedTuple

import requests

from invtools._config import DEFAULT_BASE_URL

__all__ = ["TransportFailure", "describe"]


class TransportFailure(NamedTuple):
    """How the client reads a requests exception."""

    what: str  # what happened, for the message
    check: str  # what the user should check
    retryable: bool  # worth sending again: only connection failures, timeouts, drops
    sent: bool  # the request may have reached the server (counts in stats.sent)


def describe(exc: BaseException) -> TransportFailure:
    """Classify a requests exception. Only what a second try can cure is retryable (refused
    or dropped connections, timeouts); anything else -- a bad URL, a redirect loop, a TLS
    failure, an unknown error -- fails at once, because repeating it only makes the user
    wait through the backoff for the same answer.

    >>> describe(requests.exceptions.InvalidURL("bad port")).retryable
    False
    """
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = (
            cur.__cause__
            or cur.__context__
            or (cur.args[0] if cur.args and isinstance(cur.args[0], BaseException) else None)
        )
    names = " ".join(type(e).__name__ for e in chain) + " " + " ".join(str(e) for e in chain)
    exc_ = requests.exceptions
    if isinstance(exc, exc_.SSLError):
        return TransportFailure(
            "TLS/SSL handshake failed",
            "that base_url is the service's https address and that no proxy intercepts it",
            False,
            False,
        )
    if isinstance(exc, exc_.ConnectTimeout):
        return TransportFailure(
            "connecting timed out",
            "your network or proxy, or raise the connect timeout (timeout=(connect, read))",
            True,
            False,
        )
    if isinstance(exc, exc_.Timeout):
        return TransportFailure(
            "no answer within the read timeout",
            "raise timeout=(connect, read) if the server is just slow",
            True,
            True,
        )
    if isinstance(exc, exc_.ProxyError):
        return TransportFailure(
            "the proxy failed or refused the connection",
            "your proxy settings (HTTPS_PROXY, HTTP_PROXY, NO_PROXY)",
            True,
            False,
        )
    if isinstance(exc, exc_.ChunkedEncodingError) or "IncompleteRead" in names:
        return TransportFailure(
            "the connection dropped in the middle of a response",
            "your network; the request is safe to repeat",
            True,
            True,
        )
    if isinstance(exc, exc_.ConnectionError):
        if any(w in names for w in ("NameResolution", "Name or service not known", "getaddrinfo")):
            return TransportFailure(
                "the host name could not be resolved (DNS)",
                "the host in base_url and your network connection",
                False,
                False,
            )
        if "Connection refused" in names or "ConnectionRefused" in names:
            return TransportFailure(
                "the connection was refused",
                "base_url and its port; if it is the stand-in server, that it is still running",
                True,
                False,
            )
        if "RemoteDisconnected" in names or "ConnectionReset" in names or "aborted" in names:
            return TransportFailure(
                "the server closed the connection without answering",
                "your network or proxy; the request is safe to repeat",
                True,
                True,
            )
        # NewConnectionError: no connection was made (network unreachable, ...).
        return TransportFailure(
            f"the connection failed ({type(exc).__name__})",
            "your network connection and base_url",
            True,
            "NewConnection" not in names,
        )
    if isinstance(exc, exc_.TooManyRedirects):
        return TransportFailure(
            "the server kept redirecting",
            f"that base_url is the API's address (normally {DEFAULT_BASE_URL})",
            False,
            True,
        )
    # Invalid URL, schema or header: refused by requests before anything went out.
    return TransportFailure(
        f"the request could not be made ({type(exc).__name__}: {exc})",
        "base_url and the path",
        False,
        not isinstance(exc, ValueError),
    )
