"""Fixtures for the stand-in server's tests (real HTTP with urllib; helpers in sandbox_helpers.py).

``shop_server`` is one server per module for read-only tests (rate limit off); tests that
mutate data, set quirks or faults, or exercise the rate limit start their own with ``serve()``.
"""

from __future__ import annotations

import pytest

from invtools.sandbox import serve


@pytest.fixture(scope="module")
def shop_server():
    with serve(rate_limit=0) as sb:
        yield sb
