"""The exception tree: the right class for each status and type, and no secret kept."""

from __future__ import annotations

import pickle

import pytest

import invtools
from invtools.errors import from_response


@pytest.mark.parametrize(
    ("status", "type_", "cls"),
    [
        (401, "/errors/tokens/required", invtools.AuthenticationError),
        (401, "/errors/tokens/invalid", invtools.AuthenticationError),
        (400, "/errors/invalid-team-mode", invtools.TeamModeError),
        (400, "/errors/invalid-request", invtools.InvalidRequestError),
        (404, "/errors/not-found", invtools.NotFoundError),
        (429, "/errors/too-many-requests", invtools.RateLimitError),
        (500, None, invtools.ServerError),
        (503, "/errors/unavailable", invtools.ServerError),
        (418, None, invtools.InvalidRequestError),
    ],
)
def test_status_and_type_choose_the_class(status, type_, cls):
    err = from_response(
        status,
        {"type": type_, "title": "t", "correlation_id": "rq_x"},
        method="GET",
        path="/v1/items",
    )
    assert type(err) is cls
    assert isinstance(err, invtools.APIError) and isinstance(err, invtools.InvtoolsError)
    assert (err.status, err.type, err.correlation_id, err.method, err.path) == (
        status,
        type_,
        "rq_x",
        "GET",
        "/v1/items",
    )
    assert "/v1/items" in str(err) and str(status) in str(err)


def test_401_body_given_field_is_never_kept():
    token = "tok_secret_123"
    err = from_response(
        401,
        {
            "type": "/errors/tokens/invalid",
            "title": "Invalid token",
            "given": token,
            "correlation_id": "rq_1",
            "id": "ex_1",
        },
    )
    assert token not in str(err) and token not in repr(err)
    assert token not in repr(err.__dict__)
    assert token not in repr(pickle.loads(pickle.dumps(err)).__dict__)


def test_non_json_body_uses_the_reason_phrase():
    err = from_response(502, "<html>Bad gateway</html>", reason="Bad Gateway", attempts=4)
    assert isinstance(err, invtools.ServerError)
    assert err.title == "Bad Gateway" and err.attempts == 4
    assert "after 4 attempts" in str(err)


def test_invalid_request_keeps_its_per_parameter_errors():
    err = from_response(
        400, {"type": "/errors/invalid-request", "title": "Bad", "errors": [{"param": "limit"}]}
    )
    assert err.details == {"errors": [{"param": "limit"}]}


def test_config_error_is_a_value_error():
    assert issubclass(invtools.ConfigError, ValueError)


# ---------------------------------------------------------------- one rule for wrong types


def _offline_client():
    from invtools import Client

    return Client(token="t", base_url="http://127.0.0.1:9", cache=False, rate_limit=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: __import__("invtools").Client(token=42, base_url="http://127.0.0.1:9", cache=False),
        lambda: __import__("invtools").connect(42),
        lambda: __import__("invtools").Client(token="t", base_url="http://127.0.0.1:9", cache=42),
        lambda: _offline_client().transactions_df(since=[2026]),
        lambda: _offline_client().transactions_df(max_age=[1]),
        lambda: __import__("invtools").frames.items_df(42),
        lambda: __import__("invtools").frames.with_provenance(__import__("pandas").DataFrame(), 42),
        lambda: __import__("invtools").TransactionMirror("m.sqlite", "not a client"),
        lambda: __import__("invtools").each_team(lambda c: 1, 42),
    ],
    ids=[
        "token",
        "connect-team",
        "cache",
        "since",
        "max_age",
        "frame-rows",
        "provenance",
        "mirror-client",
        "each_team-teams",
    ],
)
def test_a_wrong_kind_of_object_is_a_type_error_inside_the_tree(call, tmp_path, monkeypatch):
    from invtools.errors import ArgumentTypeError, ConfigError, InvtoolsError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError) as caught:
        call()
    err = caught.value
    assert isinstance(err, ArgumentTypeError)
    assert isinstance(err, ConfigError) and isinstance(err, InvtoolsError)  # as before: caught


@pytest.mark.parametrize(
    "call",
    [
        lambda: __import__("invtools").Client(
            token="t", base_url="http://127.0.0.1:9", cache=False, concurrency=0
        ),
        lambda: _offline_client().transactions_df(since="not a date"),
        lambda: _offline_client().transactions_df(type="sideways"),
        lambda: _offline_client().transactions_df(max_age="90"),
    ],
    ids=["concurrency", "since", "type", "max_age-unitless"],
)
def test_a_bad_value_of_the_right_kind_is_a_config_error_not_a_type_error(call):
    from invtools.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        call()
    assert not isinstance(caught.value, TypeError)
