"""The token on its way to the server: a requests auth object whose repr never shows it.

Being an auth object (not a default header) also stops requests from replacing it with
credentials from ``~/.netrc`` for the same host.

>>> BearerAuth("s3cret")
BearerAuth(<hidden>)
"""

from __future__ import annotations

import requests

from invtools._config import Secret

__all__ = ["BearerAuth"]


class BearerAuth(requests.auth.AuthBase):
    """Adds ``Authorization: Bearer <token>`` to each request; its repr never shows the token."""

    def __init__(self, token: str) -> None:
        self.header = Secret("Bearer " + token)  # shown as '<hidden>' in any headers dict

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self.header
        return request

    def __repr__(self) -> str:
        return "BearerAuth(<hidden>)"

    def __eq__(self, other: object) -> bool:  # requests compares auth objects when merging
        return isinstance(other, BearerAuth) and other.header == self.header

    __hash__ = None  # type: ignore[assignment]  # mutable-free but compared by value
