"""What a client holds, and when it lets go: pacing runs no thread, and a client nobody closed
lets go of its connections and its cache file once it is garbage."""

from __future__ import annotations

import gc
import threading
import weakref

from invtools.api import Client


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
