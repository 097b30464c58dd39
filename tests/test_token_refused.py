"""A token the service refuses (401), over real HTTP to the stand-in (issue 43): a 401 deletes
nothing; the token's cached answers at that service -- responses, details, a list's walk
record, the team a client already knows -- are served by no client of the process until the
service accepts the token again, and then all of them are served again; nothing cached for
another team, or for the token at another service, is touched."""

from __future__ import annotations

import json
import threading
from functools import partial

import pandas as pd
import pytest

from invtools.errors import AuthenticationError
from invtools.sandbox import serve

pytestmark = pytest.mark.network

SOON = 10.0  # seconds: a deadline for what happens at once, never a wait for timing

#: A proxy in front of the service asking for its own login: HTML, no JSON envelope.
PROXY_401 = (401, {"Content-Type": "text/html"}, b"<html><h1>401 Authorization Required</h1>")
#: A 401 of another kind than the stand-in's own.
OTHER_401 = (
    401,
    {"Content-Type": "application/json"},
    json.dumps({"type": "/errors/tokens/expired", "title": "The token expired"}).encode(),
)


class Refusing:
    """Wraps ``sb.handle``: while ``on``, every request the ``when`` test picks (all, by
    default) is answered ``answer`` instead (after the service logged it)."""

    def __init__(self, sb, answer=OTHER_401, when=lambda target: True) -> None:
        self.sb, self.answer, self.when, self.on = sb, answer, when, True
        self.handle = sb.handle
        sb.handle = self

    def __call__(self, method, target, authorization, fault=None):
        reply = self.handle(method, target, authorization, fault)
        return self.answer if self.on and self.when(target) else reply


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_flags=False)


def paths(sb) -> list[str]:
    return [r.path for r in sb.requests]


@pytest.mark.parametrize("answer", [PROXY_401, OTHER_401], ids=["proxy-html", "another-kind"])
def test_a_401_deletes_nothing_and_once_the_token_is_accepted_all_is_served_again(
    sb, make_client, answer
):
    client = make_client(sb)
    lines = client.lines_df()
    cafe = make_client(sb, "basic")
    members = cafe.members_df()
    refusing = Refusing(sb, answer)
    with pytest.raises(AuthenticationError):
        client.members(refresh=True)
    sb.clear_log()
    with pytest.raises(AuthenticationError):  # refused: not served from the cache
        client.lines_df()
    assert paths(sb) == ["/v1/teams/linked"]  # asked the service
    sb.clear_log()
    same(cafe.members_df(), members)  # another team's answers stay, served from the cache
    assert sb.requests == []

    refusing.on = False  # the service accepts the token again
    sb.clear_log()
    same(client.lines_df(), lines)
    assert paths(sb) == ["/v1/teams/linked"]  # the rest from the cache: nothing re-fetched
    sb.clear_log()
    same(make_client(sb).lines_df(), lines)
    assert sb.requests == []


def test_a_401_on_one_page_mid_walk_deletes_nothing(sb, make_client):
    client = make_client(sb)
    lines = client.lines_df()
    # a refresh walk whose second page is refused; the next request is accepted again
    pages = Refusing(sb, when=lambda target: "cursor=" in target)
    with pytest.raises(AuthenticationError):
        client.transactions_df(refresh=True)
    for chain in [t for t in threading.enumerate() if t.name.startswith("invtools-chain")]:
        chain.join(SOON)  # the walk's other chains: their requests in flight are answered
    pages.on = False
    sb.clear_log()
    same(client.lines_df(), lines)
    assert paths(sb) == ["/v1/teams/linked"]  # once the service accepts it: all from the cache


def test_a_401_of_another_service_touches_nothing_cached_for_this_one(sb, make_client):
    client = make_client(sb)
    lines = client.lines_df()
    with serve(rate_limit=0, seed=1, size=200) as other:  # another service: the token unknown
        elsewhere = make_client(sb, base_url=other.base_url)  # sb's token, the same cache file
        with pytest.raises(AuthenticationError):
            elsewhere.lines_df()
    sb.clear_log()
    same(client.lines_df(), lines)
    same(make_client(sb).lines_df(), lines)
    assert sb.requests == []  # this service's answers were neither deleted nor refused


def test_after_a_revocation_no_client_serves_the_tokens_cached_answers(sb, make_client):
    client = make_client(sb)
    txs, partners = client.transactions_df(), client.partners_df()
    row = sb.data("shop").transactions[0]
    client.transaction(row["id"], revision=row["revision"])  # cached for good
    cafe = make_client(sb, "basic")
    members = cafe.members_df()
    sb.revoke_token("shop")
    # Until the service is asked, what is cached is served (security.md says so) ...
    same(client.transactions_df(), txs)
    with pytest.raises(AuthenticationError):
        client.members(refresh=True)  # ... and once it refused the token, none of it is.
    for each in (client, make_client(sb)):  # the same client, and any other of the process
        sb.clear_log()
        for call in (
            each.transactions_df,  # a walk record: not replayed
            each.partners_df,  # a list no team check precedes
            each.team,  # the team the client knew
            partial(each.transaction, row["id"], revision=row["revision"]),
            each.lines_df,
        ):
            with pytest.raises(AuthenticationError):
                call()
        assert len(sb.requests) == 5 and {r.status for r in sb.requests} == {401}
    sb.clear_log()
    same(cafe.members_df(), members)  # another team's answers stay
    assert sb.requests == []
    assert len(partners) > 0


class Held:
    """Wraps ``sb.handle``: a request for ``prefix`` waits at the server (``arrived`` set) until
    ``release`` is set, then is answered ``answer`` (None: as the service answers it)."""

    def __init__(self, sb, prefix: str, answer=None) -> None:
        self.prefix, self.answer, self.handle = prefix, answer, sb.handle
        self.arrived, self.release = threading.Event(), threading.Event()
        sb.handle = self

    def __call__(self, method, target, authorization, fault=None):
        if target.startswith(self.prefix):
            self.arrived.set()
            self.release.wait(SOON)
            if self.answer is not None:
                return self.answer
        return self.handle(method, target, authorization, fault)


def asked_meanwhile(held: Held, first, then) -> list[BaseException]:
    """``first()`` in a thread, held at the server while ``then()`` runs here: the first
    request is sent before the second and answered after it. What ``first()`` raised."""
    raised: list[BaseException] = []

    def ask() -> None:
        try:
            first()
        except AuthenticationError as exc:
            raised.append(exc)

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    assert held.arrived.wait(SOON)
    try:
        then()
    finally:
        held.release.set()
        asking.join(SOON)
    assert not asking.is_alive()
    return raised


def test_an_answer_asked_before_the_401_does_not_lift_the_refusal(sb, make_client):
    client = make_client(sb)
    cached, slow = sb.data("shop").transactions[:2]
    client.transaction(cached["id"], revision=cached["revision"])
    Refusing(sb, when=lambda target: target.startswith("/v1/members"))
    held = Held(sb, f"/v1/location-txs/{slow['id']}")  # answered 200 after the 401

    def refused() -> None:
        with pytest.raises(AuthenticationError):
            client.members(refresh=True)

    asked_meanwhile(
        held, partial(client.transaction, slow["id"], revision=slow["revision"]), refused
    )
    sb.clear_log()
    client.transaction(cached["id"], revision=cached["revision"])
    assert len(sb.requests) == 1  # still refused: asked the service, which accepts it
    sb.clear_log()
    client.transaction(cached["id"], revision=cached["revision"])
    assert sb.requests == []  # accepted again: from the cache


def test_a_401_to_a_request_asked_before_an_accepted_one_refuses_nothing(sb, make_client):
    # a walk's chain still waiting for its answer when the next call began, say
    client = make_client(sb)
    cached, other = sb.data("shop").transactions[:2]
    client.transaction(cached["id"], revision=cached["revision"])
    held = Held(sb, "/v1/members", OTHER_401)  # answered 401 after the detail's 200
    accepted = partial(client.transaction, other["id"], revision=other["revision"])
    assert len(asked_meanwhile(held, partial(client.members, refresh=True), accepted)) == 1
    sb.clear_log()
    client.transaction(cached["id"], revision=cached["revision"])
    assert sb.requests == []  # served from the cache: the 401 was older news
