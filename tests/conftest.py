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
- ``postgres_url``: ``postgresql://invtools:PASSWORD@127.0.0.1:PORT/invtools``, a dlt
  credentials URL (``dlt.destinations.postgres(credentials=postgres_url)``) to a private,
  throwaway PostgreSQL cluster: one per test session (so one per xdist worker), started on first
  use in a folder of its own under the temporary directory, on a free port of 127.0.0.1 only,
  its unix socket in that folder, ``fsync=off``; the role ``invtools`` (the cluster's superuser)
  logs in with its password over TCP. Stopped (``pg_ctl stop -m immediate``) and removed when the
  session ends, failed tests or not; a cluster left by a killed run is removed by the next.
  Skips when PostgreSQL's server programs are missing (``initdb``, ``pg_ctl`` and ``createdb`` on
  ``PATH`` or in ``/usr/lib/postgresql/*/bin``, the highest version): ``apt-get install -y
  postgresql``. As root, they run as the ``postgres`` user (``initdb`` refuses root);
- ``postgres_dataset``: a dataset name (the PostgreSQL schema dlt loads into) no other test
  uses, so each test starts from an empty schema of the same cluster:
  ``dlt.pipeline(..., destination=dlt.destinations.postgres(credentials=postgres_url),
  dataset_name=postgres_dataset)``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

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
def demo_process(monkeypatch, tmp_path):
    """This process as a notebook's kernel on the built-in demo server: its cache in
    ``tmp_path``, figures off screen, the demo server stopped after the test."""
    from invtools import notebook

    monkeypatch.setenv("INVTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    yield
    notebook.stop_demo_server()


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


# -- a throwaway PostgreSQL cluster: postgres_url, postgres_dataset ---------------------------

#: The folders of this fixture's clusters under the temporary directory: ``<prefix>XXXX/``
#: holds ``owner.pid`` (the pytest process), ``data/``, the server's log and its unix socket.
PG_PREFIX = "invtools-pg-"
PG_PROGRAMS = ("initdb", "pg_ctl", "createdb")
PG_USER = "invtools"


def _postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs: that of ``initdb`` on ``PATH``, else the
    highest version's under ``/usr/lib/postgresql`` (Debian puts none of them on ``PATH``)."""
    on_path = shutil.which("initdb")
    candidates = [Path(os.path.realpath(on_path)).parent] if on_path else []

    def version(folder: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in folder.parent.name.split(".") if part.isdigit())

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in PG_PROGRAMS):
            return folder
    return None


def _postgres_owner() -> dict:
    """``subprocess`` arguments that run the server programs as ``postgres`` when we are root
    (``initdb`` refuses to run as root), none otherwise."""
    if os.geteuid() != 0:
        return {}
    import pwd

    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip(
            "PostgreSQL refuses to run as root and there is no postgres user to run it as "
            "(apt-get install -y postgresql creates it)"
        )
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


class _Cluster:
    """Runs PostgreSQL's programs on one cluster folder, as the user that may run them."""

    def __init__(self, folder: Path, bin_dir: Path, owner: dict) -> None:
        self.folder, self.data, self.bin, self.owner = folder, folder / "data", bin_dir, owner
        self.log = folder / "server.log"
        # no PG* variable of the caller's (PGDATA, PGHOST, PGPORT, ...) redirects a program
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        self.env.update(LC_ALL="C", LANG="C")

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / program), *args],
            cwd=self.folder,  # a folder the postgres user may enter
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            **self.owner,
        )

    def server_log(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def must(self, program: str, *args: str) -> None:
        proc = self.run(program, *args)
        if proc.returncode:
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout}{proc.stderr}\nserver log:\n{self.server_log()}"
            )

    def stop(self) -> None:
        """Stop the server, if one runs on this folder, and remove the folder."""
        if (self.data / "postmaster.pid").exists():
            self.run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.folder, ignore_errors=True)


def _remove_orphaned_clusters(bin_dir: Path, owner: dict) -> None:
    """Stop and remove the clusters of earlier runs whose pytest process is gone (killed before
    its teardown); a folder without an owner yet is another worker's, being made."""
    for folder in Path(tempfile.gettempdir()).glob(PG_PREFIX + "*"):
        try:
            pid = int((folder / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not _alive(pid):
            _Cluster(folder, bin_dir, owner).stop()


@pytest.fixture(scope="session")
def postgres_url():
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip(
            "needs PostgreSQL's initdb, pg_ctl and createdb on PATH or in "
            "/usr/lib/postgresql/*/bin (apt-get install -y postgresql)"
        )
    owner = _postgres_owner()
    _remove_orphaned_clusters(bin_dir, owner)
    # mkdtemp: a folder no other worker or run has; short, so the socket's path stays well
    # under the 107 bytes a unix socket's name may have
    cluster = _Cluster(Path(tempfile.mkdtemp(prefix=PG_PREFIX)), bin_dir, owner)
    try:
        (cluster.folder / "owner.pid").write_text(str(os.getpid()))
        password = secrets.token_hex(16)
        (cluster.folder / "password").write_text(password + "\n")
        if owner:
            for path in (cluster.folder, cluster.folder / "password"):
                os.chown(path, owner["user"], owner["group"])
        cluster.must(
            "initdb",
            "--pgdata", str(cluster.data),
            "--username", PG_USER,
            "--pwfile", str(cluster.folder / "password"),
            "--auth-local=trust",  # the socket, in a folder only its owner may enter
            "--auth-host=scram-sha-256",  # TCP: the password in the URL
            "--no-locale",
            "--encoding=UTF8",
            "--no-sync",
        )  # fmt: skip
        socket_dir = str(cluster.folder).replace("'", "''")
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# the test fixture's (tests/conftest.py)\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{socket_dir}'\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "shared_buffers = 16MB\n"
            )
        start = ("start", "-D", str(cluster.data), "-l", str(cluster.log), "-w", "-t", "60")
        for attempt in (1, 2, 3):  # the free port may be taken before the server binds it
            port = str(_free_port())
            proc = cluster.run("pg_ctl", *start, "-o", f"-p {port}")
            if proc.returncode == 0:
                break
            if attempt == 3 or "Address already in use" not in cluster.server_log():
                raise RuntimeError(
                    f"pg_ctl start failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
                    f"\nserver log:\n{cluster.server_log()}"
                )
        cluster.must("createdb", "-h", str(cluster.folder), "-p", port, "-U", PG_USER, PG_USER)
        yield f"postgresql://{PG_USER}:{password}@127.0.0.1:{port}/{PG_USER}"
    finally:
        cluster.stop()


@pytest.fixture
def postgres_dataset(postgres_url) -> str:
    return "test_" + uuid.uuid4().hex[:16]
