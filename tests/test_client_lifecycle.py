"""What a client holds, and when it lets go: pacing runs no thread, and a client nobody closed
lets go of its connections and its cache file once it is garbage."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from invtools.api import Client

ROOT = Path(__file__).resolve().parents[1]


def test_a_client_never_closed_leaves_no_thread_and_no_open_file(sb, tmp_path, open_files):
    cache = tmp_path / "responses.sqlite"
    before = set(threading.enumerate())
    client = Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=cache, rate_limit=50, progress=False
    )  # paced: the old limiter ran a thread per client
    client.team()
    client.items_df()
    started = set(threading.enumerate()) - before
    # Pacing waits in the calling thread: the only new threads are the stand-in server's, one
    # per kept-alive connection of the client.
    assert started and all(t.name.startswith("invtools-sandbox-") for t in started)
    assert open_files(cache) > 0

    gone = weakref.ref(client)
    del client
    gc.collect()
    assert gone() is None
    for thread in started:  # the server's threads end when the client's sockets close
        thread.join(timeout=10)
    assert not [t for t in started if t.is_alive()]
    assert open_files(cache) == 0


def test_close_is_idempotent_and_a_closed_client_collects_cleanly(sb, tmp_path, open_files):
    cache = tmp_path / "responses.sqlite"
    client = Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=cache, rate_limit=0, progress=False
    )
    client.team()
    client.close()
    client.close()
    assert open_files(cache) == 0
    del client
    gc.collect()
    assert open_files(cache) == 0


def test_clients_of_one_cache_file_share_one_connection_to_it(sb, tmp_path, open_files):
    """Two connections of one process writing one file wait on each other's write lock: two
    clients filling one cache took 20-60 s for 150 details each (0.7 s with one connection)."""
    cache = tmp_path / "responses.sqlite"
    first = Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=cache, rate_limit=0, progress=False
    )
    first.items_df()
    one = open_files(cache)
    second = Client(
        sb.tokens["basic"], base_url=sb.base_url, cache=cache, rate_limit=0, progress=False
    )
    second.members_df()
    assert one > 0 and open_files(cache) == one
    first.close()
    assert open_files(cache) == one  # the other client still uses it
    assert second.members_df().attrs["from_cache"] == 1
    second.close()
    assert open_files(cache) == 0


def test_a_dropped_client_lets_go_of_its_cache_file_without_a_garbage_collection(
    sb, tmp_path, open_files
):
    """A client is in no reference cycle: dropping it closes its cache file at once, not at
    the cyclic collector's next pass (which runs at an arbitrary allocation, in any code)."""
    cache = tmp_path / "responses.sqlite"
    client = Client(
        sb.tokens["shop"], base_url=sb.base_url, cache=cache, rate_limit=5, progress=False
    )
    client.team()
    client.items_df()
    assert open_files(cache) > 0
    gc.collect()
    gc.disable()
    try:
        del client
        assert open_files(cache) == 0
    finally:
        gc.enable()


_MANY_CLIENTS = """
import gc, os, sys
import invtools

gc.set_threshold(1)  # a collection at nearly every allocation: inside any code, any lock
for i in range(200):
    client = invtools.Client(
        os.environ["T"], base_url=os.environ["U"], cache=f"{sys.argv[1]}/c{i}.sqlite",
        rate_limit=0, progress=False,
    )
    client.team()
    if sys.argv[2] == "cycle":  # the user's own objects may hold it in a cycle
        client.me = client
print("all made")
"""


@pytest.mark.slow
@pytest.mark.parametrize("run, held", [(1, "-"), (2, "-"), (3, "-"), (4, "cycle")])
def test_200_clients_on_new_cache_files_each_dropped_under_constant_collection_finish(
    sb, tmp_path, run, held
):
    """Issue 26, item 1: a re-run cell made a new client and dropped the old one; a garbage
    collection inside the making of the new one's cache closed the old one's, which waited
    for the lock the making held: the kernel hung for good (four runs of four, at the fifth
    client). In a process of its own, with a timeout, so a hang fails instead of hanging."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVTOOLS_")}
    env.update(T=sb.tokens["shop"], U=sb.base_url, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MANY_CLIENTS, str(tmp_path), held],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"run {run}: 200 clients not made within 120 s: the process hung")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "all made"
