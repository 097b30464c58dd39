"""Shared fixtures.

- every test: no ``INVTOOLS_*`` variable set and ``XDG_CACHE_HOME`` / ``XDG_DATA_HOME`` pointed
  at temporary folders, so no test reads a developer's token or writes into their real cache
  or data directory;
- ``sb``: a fresh stand-in server (``invtools.sandbox.serve``) on 127.0.0.1, rate limit off,
  no quirks or faults -- tests switch those on where they are the point;
- ``make_client``: ``make_client(sb, team="shop", **overrides)`` -> a :class:`Client` for one
  of the sandbox's teams, with its own cache file in ``tmp_path``, pacing off, no progress
  bar, and short backoff so retry tests stay quick;
- ``loopback_only``: for the test's duration every attempt to reach a host that is not this
  machine is refused (no DNS, no connection) and recorded in the list it returns, so a test of
  code that could reach the real service proves that it did not;
- ``open_files``: ``open_files(path)`` -> how many file descriptors of this process are open
  on ``path`` or its journal files (Linux: skips where ``/proc/self/fd`` is missing).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    import os

    for name in list(os.environ):
        if name.startswith(("INVTOOLS_", "SOURCES__BOXHERO__")):  # dlt's names of our settings
            monkeypatch.delenv(name)
    monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path_factory.mktemp("dlt")))  # not ~/.dlt
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture
def sb():
    from invtools.sandbox import serve

    with serve(port=0, rate_limit=0, seed=0, size=600) as server:
        yield server


@pytest.fixture
def make_client(tmp_path):
    from invtools.api import Client

    made = []

    def make(server, team: str = "shop", **overrides):
        settings = dict(
            base_url=server.base_url,
            cache=tmp_path / "cache.sqlite",
            rate_limit=0,
            progress=False,
            backoff=0.01,
            timeout=(2.0, 5.0),
        )
        settings.update(overrides)
        client = Client(server.tokens[team], **settings)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def loopback_only(monkeypatch) -> list[str]:
    import ipaddress
    import socket

    refused: list[str] = []

    def here(host) -> bool:
        host = host.decode() if isinstance(host, bytes) else str(host)
        if host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:  # a name other than localhost
            return False

    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host, *args, **kwargs):
        if not here(host):
            refused.append(str(host))
            raise socket.gaierror(
                socket.EAI_NONAME, f"this test reaches no host but this machine; refused {host}"
            )
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not here(address[0]):
            refused.append(str(address[0]))
            raise ConnectionRefusedError(
                f"this test reaches no host but this machine; refused {address[0]}"
            )
        return real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return refused


@pytest.fixture
def open_files():
    from pathlib import Path

    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd (Linux) to see open files")

    def count(path) -> int:
        found = 0
        for fd in fds.iterdir():
            try:
                found += os.readlink(fd).startswith(str(path))
            except OSError:  # closed between listing and reading
                pass
        return found

    return count


class FakeClock:
    """Time that passes only when someone waits: ``sleep(s)`` moves it on at once, and every
    wait is recorded in ``slept``. Pass it as ``Client(clock=...)`` (and to the stand-in
    server) so pacing and retry tests run without sleeping."""

    def __init__(self, start: float = 1000.0) -> None:
        import threading

        self.now = start
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:  # the wall clock: the same fake time
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.now += max(seconds, 0.0)

    def wait(self, event, seconds: float) -> bool:
        if event is not None and event.is_set():
            return True
        self.sleep(seconds)
        return event is not None and event.is_set()


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
