"""Issue 35, item 7: the last odd inputs that escaped as bare built-in errors, each now the
package's own (:class:`invtools.ArgumentTypeError` for a wrong kind, naming the argument), and
a cache file whose disk fills under SQLite's journal ("disk I/O error") said as a full disk,
as the mirror says it. Each of these raised AttributeError, TypeError or ValueError before.
"""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

import invtools
from invtools import analysis, frames
from invtools.http.cachefile import file_error
from invtools.notebook.connection import team_tokens


@pytest.mark.parametrize("environ", [42, "abc", [], b"x"])
def test_token_picker_refuses_an_environ_that_is_no_mapping(environ):
    with pytest.raises(invtools.ArgumentTypeError, match=r"token_picker\(environ\)"):
        invtools.token_picker(environ=environ)


def test_team_tokens_refuses_a_value_that_is_no_text_without_showing_it():
    with pytest.raises(invtools.ArgumentTypeError, match="INVTOOLS_TOKEN_X holds a int") as e:
        team_tokens({"INVTOOLS_TOKEN_X": 424242, "INVTOOLS_TOKEN": "t0"})
    assert "424242" not in str(e.value)
    assert team_tokens({"HOME": 7, "INVTOOLS_TOKEN": "t0"})["default"] == "t0"  # not ours


def test_stock_df_refuses_rows_that_are_no_records():
    with pytest.raises(invtools.ArgumentTypeError, match="stock_df: row 0 is a int"):
        frames.stock_df([1, 2])


def test_activity_explorer_refuses_the_client_class():
    with pytest.raises(invtools.ArgumentTypeError, match="Client is the class"):
        invtools.activity_explorer(invtools.Client)


def _history() -> pd.DataFrame:
    lines = frames.lines_df(
        [
            {
                "id": 1,
                "type": "in",
                "transaction_time": "2026-01-05T10:00:00Z",
                "revision": 0,
                "to_location": {"id": 9, "name": "Shop", "deleted": False},
                "items": [{"id": 5, "name": "Mug", "quantity": 4, "new_stock_level": 4}],
            }
        ]
    )
    return frames.stock_history(lines)


@pytest.mark.parametrize("periods", [10**20, 10**6])
def test_more_period_ends_than_any_history_holds_are_every_one_it_holds(periods):
    history = _history()
    table = analysis.month_end_stock(history, periods=periods, as_of="2026-03-31")
    assert (
        table.index.tolist()
        == analysis.month_end_stock(history, periods=None, as_of="2026-03-31").index.tolist()
    )
    assert table.iloc[:, 0].tolist() == [4.0, 4.0, 4.0]


def test_a_cache_file_whose_disk_fills_under_the_journal_says_the_disk_is_full(tmp_path):
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_WRITE"  # what SQLite names an ENOSPC in its journal
    said = str(file_error(tmp_path / "cache.sqlite", error))
    assert str(tmp_path / "cache.sqlite") in said
    assert "the disk is full" in said and "disk I/O error" in said
    assert "prune_cache()" in said
