"""The exception tree of invtools, in one place.

Errors are split by what the caller can do about them::

    InvtoolsError                      everything invtools raises
    ├── ConfigError                    bad arguments or set-up (no token, http:// base URL, ...)
    │   ├── ArgumentTypeError          an argument of the wrong kind (also a TypeError)
    │   └── LockedError                another sync holds the mirror's file
    ├── TransportError                 no usable response (refused, DNS, timeout, dropped)
    ├── PaginationError                the server broke the paging rules (repeated cursor, bad page)
    ├── Cancelled                      stopped: a batch's request not sent, a closed walk's reader,
    │                                  a closed client's request
    ├── CacheError                     the cache file: locked too long, damaged, not ours, disk full
    └── APIError                       the server answered with an error envelope
        ├── AuthenticationError        401: token missing, invalid or revoked
        ├── TeamModeError              400 /errors/invalid-team-mode (or the client's own check)
        ├── InvalidRequestError        400 /errors/invalid-request and other 4xx
        ├── NotFoundError              404
        ├── RateLimitError             429, after the retries ran out
        └── ServerError                5xx, after the retries ran out

The warnings live here too: :class:`DeletedItemsWarning`, said when an analysis or a plot
leaves deleted items out of its result (``include_deleted=True`` keeps them),
:class:`WindowWarning`, said when an analysis needs transactions from outside its frame's
window (or its frame records no moment), :class:`CutWarning`, when a ``top`` cut drops rows
an analysis flags, :class:`LevelsWarning`, when a frame's stock levels could not be checked
against the service's current stock, and :class:`ClockWarning`, said when the service's
clock is not believed.

Every :class:`APIError` carries ``status``, ``type``, ``title``, ``correlation_id``, ``method``
and ``path``. Messages never contain a token: the real service echoes a bad token in the
``given`` field of a 401 body, so that field is dropped before anything is kept.

>>> err = from_response(404, {"type": "/errors/not-found", "title": "Not found",
...                           "correlation_id": "rq_1"}, method="GET", path="/v1/items/9")
>>> type(err).__name__, err.status, err.correlation_id
('NotFoundError', 404, 'rq_1')
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "InvtoolsError",
    "ConfigError",
    "ArgumentTypeError",
    "LockedError",
    "TransportError",
    "PaginationError",
    "Cancelled",
    "CacheError",
    "APIError",
    "AuthenticationError",
    "TeamModeError",
    "InvalidRequestError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "DeletedItemsWarning",
    "WindowWarning",
    "CutWarning",
    "LevelsWarning",
    "ClockWarning",
    "from_response",
]

#: Location-only endpoints answer this type to a team that does not manage stock by location.
TEAM_MODE_TYPE = "/errors/invalid-team-mode"

# Body fields that may hold secrets or user input and are never kept on an exception.
_SECRET_FIELDS = frozenset({"given"})


class InvtoolsError(Exception):
    """Base class of every error raised by invtools."""


class DeletedItemsWarning(UserWarning):
    """An analysis or plot left out items that are deleted in the service (their past lines
    remain, flagged ``item_deleted``); the message names them, the result's
    ``attrs["deleted_items_excluded"]`` lists their ids, ``include_deleted=True`` keeps them."""


class WindowWarning(UserWarning):
    """An analysis needs transactions from outside the window its frame was fetched with (a
    frame of ``since="30D"`` asked about dead stock over 90 days): its answer may be wrong.
    The message gives the dates and the ``since=`` that would do; ``strict=True`` makes it a
    :class:`ConfigError`. See docs/explanation/now.md."""


class CutWarning(UserWarning):
    """An analysis asked for its ``top`` N rows cut rows it flags below the cut (``reorder``'s
    items that run out within the lead time): the message says how many, the result's
    ``attrs`` say the cut; ``top=None`` (the default) cuts nothing."""


class LevelsWarning(UserWarning):
    """Stock levels not checked against the service's current stock: a ``since=`` frame
    whose window ends in the past (``until=``) or holds some types only (``type=``). The
    message names the items; an edit of an earlier transaction since their details were
    fetched shifts their levels (docs/explanation/now.md)."""


class ClockWarning(UserWarning):
    """The service's clock (the ``Date`` of its answer about the team) was not believed: it was
    missing or unreadable, more than a day ahead of this machine's clock, jumped between two
    answers, drifted more than an hour ahead across answers, or was older than rows the
    service itself returned. The message says which clock
    invtools uses instead; docs/explanation/now.md gives the rule."""


class ConfigError(InvtoolsError, ValueError):
    """The toolkit was set up wrongly: a missing token, an unsafe base URL, a bad argument."""


class ArgumentTypeError(ConfigError, TypeError):
    """An argument of the wrong kind: a number where a token string belongs, a list where a
    DataFrame does. One rule across invtools: the wrong kind of object is a ``TypeError``
    (this class), a value of the right kind that cannot be used (an unknown type name, a
    negative count, ``since`` after ``until``) a :class:`ConfigError`. It is a
    ``ConfigError`` too, as these errors were before, so either ``except`` catches it."""


class LockedError(ConfigError):
    """Another sync (in this process or another) holds the mirror's file; wait for it to
    finish. Its own class so that a caller can wait and retry on exactly this; a
    ``ConfigError`` too, as it was before."""


class TransportError(InvtoolsError):
    """No usable HTTP response: connection refused, DNS failure, timeout, dropped connection.

    ``attempts`` says how many times the request was tried.
    """

    def __init__(self, message: str, *, attempts: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts


class PaginationError(InvtoolsError):
    """The server broke the paging rules (a repeated cursor, a page without the envelope)."""


class Cancelled(InvtoolsError):
    """Work that was stopped: a request of a concurrent batch (transaction details) not sent,
    or its retry not waited for, because the batch was stopped (Ctrl-C, or another request of
    it failed: the batch raises that first exception); the reader of a walk that was closed
    from another thread (a widget's Stop button) while it waited for its next row; or a
    request of a client that was closed (``client.close()``, the end of its ``with`` block),
    made after it or waiting for its pace or a retry when it was."""


class CacheError(InvtoolsError):
    """The response cache file failed: another program (a second notebook or script on it, a
    prune) held its lock for longer than the client's connect timeout, or it is damaged,
    another program's database, read-only, or the disk is full. The message names the file
    and what to do; nothing in the file was half-written or changed."""


class APIError(InvtoolsError):
    """The server answered with an error.

    Attributes: ``status`` (HTTP status), ``type`` (e.g. ``/errors/not-found``), ``title``
    (human text), ``correlation_id`` (``rq_...``, quote it to the service's support),
    ``error_id`` (``ex_...``), ``method`` and ``path`` of the request, ``attempts`` (how many
    times it was sent) and ``details`` (other body fields, secrets removed).
    """

    def __init__(
        self,
        message: str | None = None,
        *,
        status: int | None = None,
        type: str | None = None,  # noqa: A002 - the envelope's own name
        title: str | None = None,
        correlation_id: str | None = None,
        error_id: str | None = None,
        method: str | None = None,
        path: str | None = None,
        attempts: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.correlation_id = correlation_id
        self.error_id = error_id
        self.method = method
        self.path = path
        self.attempts = attempts
        self.details = {k: v for k, v in (details or {}).items() if k not in _SECRET_FIELDS}
        super().__init__(message or self._default_message())

    def _default_message(self) -> str:
        where = f"{self.method or 'GET'} {self.path}" if self.path else "request"
        what = self.title or "error"
        bits = [f"{where} failed with {self.status}: {what}"]
        if self.type:
            bits.append(f"(type {self.type})")
        if self.attempts and self.attempts > 1:
            bits.append(f"after {self.attempts} attempts")
        if self.correlation_id:
            bits.append(f"[correlation id {self.correlation_id}]")
        return " ".join(bits)


class AuthenticationError(APIError):
    """401: the token is missing, invalid or was deleted. Issue a new one in the service's
    settings under Integrations."""


class TeamModeError(APIError):
    """This endpoint needs a team that manages stock by location (mode 2, "Location")."""


class InvalidRequestError(APIError):
    """400 (other than team mode) and other 4xx: a parameter the server refused."""


class NotFoundError(APIError):
    """404: no such object, or no such path."""


class RateLimitError(APIError):
    """429: the rate limit was still exceeded after waiting and retrying."""


class ServerError(APIError):
    """5xx: the server failed, and kept failing through the retries."""


def _class_for(status: int, type_: str | None) -> type[APIError]:
    if status != 401 and type_ == TEAM_MODE_TYPE:
        return TeamModeError
    if status >= 500:
        return ServerError
    exact = {401: AuthenticationError, 404: NotFoundError, 429: RateLimitError}
    return exact.get(status, InvalidRequestError if 400 <= status < 500 else APIError)


def from_response(
    status: int,
    body: Any,
    *,
    method: str | None = None,
    path: str | None = None,
    attempts: int | None = None,
    reason: str | None = None,
) -> APIError:
    """Build the right :class:`APIError` for an error ``status`` and its decoded ``body``.

    ``body`` is the parsed JSON envelope, or anything else (``None``, text) when the server
    sent no JSON; then ``reason`` (the HTTP reason phrase) stands in for the title.

    >>> from_response(401, {"type": "/errors/tokens/invalid", "given": "secret"}).details
    {}
    """
    env = body if isinstance(body, dict) else {}
    type_ = env.get("type") if isinstance(env.get("type"), str) else None
    title = env.get("title") if isinstance(env.get("title"), str) else None
    if title is None:
        title = reason or ("non-JSON error body" if body else "no error body")
    known = {"type", "title", "correlation_id", "id"}
    # The real service echoes the token in `given`; nothing of a 401 body but the envelope's
    # own fields is kept.
    details = {} if status == 401 else {k: v for k, v in env.items() if k not in known}
    return _class_for(status, type_)(
        status=status,
        type=type_,
        title=title,
        correlation_id=env.get("correlation_id"),
        error_id=env.get("id"),
        method=method,
        path=path,
        attempts=attempts,
        details=details,
    )
