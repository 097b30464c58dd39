"""The ``postgres_url`` and ``postgres_dataset`` fixtures (``tests/conftest.py``): a real
PostgreSQL cluster that dlt loads into, private to the session, one empty schema per test, and
gone when the session ends, whether its tests passed, failed, or its process was killed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from contextlib import closing, suppress
from pathlib import Path
from urllib.parse import urlsplit

import pytest

dlt = pytest.importorskip("dlt")
psycopg2 = pytest.importorskip("psycopg2")  # dlt's postgres driver

pytestmark = pytest.mark.network

TESTS = Path(__file__).resolve().parent


@dlt.resource(
    name="items",
    primary_key="id",
    write_disposition="merge",
    columns={"deleted": {"hard_delete": True}},
)
def items(rows):
    yield from rows


def _pipeline(url: str, dataset: str, tmp_path: Path):
    return dlt.pipeline(
        "pg_fixture",
        pipelines_dir=str(tmp_path / "pipelines"),
        destination=dlt.destinations.postgres(credentials=url),
        dataset_name=dataset,
    )


def _loaded(pipeline) -> list[tuple]:
    with pipeline.sql_client() as client:
        table = client.make_qualified_table_name("items")
        return [tuple(row) for row in client.execute_sql(f"SELECT id, name, qty FROM {table}")]


def _tables(url: str, schema: str) -> list[str]:
    with closing(psycopg2.connect(url)) as con, con.cursor() as cur:
        cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )
        return sorted(name for (name,) in cur.fetchall())


def test_dlt_merges_on_the_primary_key_and_hard_deletes_in_the_fixtures_postgres(
    postgres_url, postgres_dataset, tmp_path
):
    assert _tables(postgres_url, postgres_dataset) == []  # an empty schema of its own
    pipeline = _pipeline(postgres_url, postgres_dataset, tmp_path)
    first = [
        {"id": 1, "name": "bolt", "qty": 5, "deleted": False},
        {"id": 2, "name": "nut", "qty": 9, "deleted": False},
        {"id": 3, "name": "washer", "qty": 2, "deleted": False},
    ]
    pipeline.run(items(first))
    assert sorted(_loaded(pipeline)) == [(1, "bolt", 5), (2, "nut", 9), (3, "washer", 2)]
    assert "items" in _tables(postgres_url, postgres_dataset)  # really in that schema

    # a second run: key 1 changed, key 2 deleted, key 3 not sent (merge keeps it)
    pipeline.run(
        items(
            [
                {"id": 1, "name": "bolt", "qty": 7, "deleted": False},
                {"id": 2, "name": "nut", "qty": 9, "deleted": True},
            ]
        )
    )
    assert sorted(_loaded(pipeline)) == [(1, "bolt", 7), (3, "washer", 2)]


@pytest.mark.parametrize("tag", ["first", "second"])
def test_each_test_loads_into_an_empty_schema_of_its_own(
    postgres_url, postgres_dataset, tmp_path, tag
):
    # Both cases use the same table name; in one cluster (one worker), the second would see the
    # first's rows if they shared a schema.
    assert _tables(postgres_url, postgres_dataset) == []
    pipeline = _pipeline(postgres_url, postgres_dataset, tmp_path)
    pipeline.run(items([{"id": 1, "name": tag, "qty": 1, "deleted": False}]))
    assert _loaded(pipeline) == [(1, tag, 1)]


def test_the_cluster_listens_on_127_0_0_1_only_and_wants_the_password(postgres_url):
    url = urlsplit(postgres_url)
    assert url.scheme == "postgresql" and url.hostname == "127.0.0.1" and url.password
    with closing(psycopg2.connect(postgres_url)) as con, con.cursor() as cur:
        settings = {}
        for name in ("listen_addresses", "unix_socket_directories", "fsync", "data_directory"):
            cur.execute(f"SHOW {name}")
            settings[name] = cur.fetchone()[0]
        cur.execute("SELECT current_user, current_database()")
        assert cur.fetchone() == (url.username, url.path.lstrip("/"))
    assert settings["listen_addresses"] == "127.0.0.1"
    assert settings["fsync"] == "off"
    # the socket is in the cluster's own folder, not the system's /var/run/postgresql
    assert Path(settings["unix_socket_directories"]) == Path(settings["data_directory"]).parent
    wrong = postgres_url.replace(f":{url.password}@", ":not-the-password@")
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(wrong)


# -- the end of a session -----------------------------------------------------------------------

# Run by a pytest of its own, with tests/conftest.py as a plugin: notes where its cluster is,
# then fails, or dies as a killed process does (no teardown).
INNER = """
import os
from contextlib import closing

import psycopg2


def test_uses_the_cluster(postgres_url):
    with closing(psycopg2.connect(postgres_url)) as con, con.cursor() as cur:
        cur.execute("SHOW data_directory")
        data = cur.fetchone()[0]
    with open(os.environ["SEEN_FILE"], "w") as seen:
        seen.write(data + "\\n" + postgres_url)
    if os.environ["END"] == "killed":
        os._exit(3)
    assert os.environ["END"] == "passes"
"""


@pytest.fixture
def temp_dir():
    """A temporary directory for the inner sessions' clusters, so that only they (and not a
    cluster this session's workers start meanwhile) find and remove the one a killed session
    left; one that the postgres user may enter, as /tmp."""
    folder = tempfile.mkdtemp(prefix="invtools-pgtest-")
    os.chmod(folder, 0o755)
    yield folder
    # a server the inner sessions did not stop (the fixture failed): an immediate stop
    for pid_file in Path(folder).glob("*/data/postmaster.pid"):
        with suppress(OSError, ValueError):  # gone meanwhile
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
    shutil.rmtree(folder, ignore_errors=True)


def _session(
    tmp_path: Path, temp_dir: str, end: str
) -> tuple[subprocess.CompletedProcess[str], Path, int]:
    """Run INNER in a pytest of its own; its cluster's folder and port."""
    (tmp_path / "test_inner.py").write_text(INNER)
    seen = tmp_path / f"seen-{end}"
    env = dict(os.environ, SEEN_FILE=str(seen), END=end, TMPDIR=temp_dir)
    env["PYTHONPATH"] = str(TESTS) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rs",
         "--rootdir", str(tmp_path), "test_inner.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    skipped = re.search(r"^SKIPPED \[1\] [^:]+:\d+: (.+)$", proc.stdout, re.MULTILINE)
    if skipped:  # no PostgreSQL here: the fixture's own reason
        pytest.skip(skipped.group(1))
    assert seen.exists(), proc.stdout + proc.stderr
    data, url = seen.read_text().splitlines()
    port = urlsplit(url).port
    assert port is not None
    return proc, Path(data).parent, port


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return False
    return True


@pytest.mark.slow
def test_a_session_whose_test_fails_stops_and_removes_its_cluster(tmp_path, temp_dir):
    proc, folder, port = _session(tmp_path, temp_dir, "fails")
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout + proc.stderr
    assert not folder.exists()
    assert not _accepts(port)


@pytest.mark.slow
def test_a_cluster_left_by_a_killed_session_is_removed_by_the_next(tmp_path, temp_dir):
    proc, folder, port = _session(tmp_path, temp_dir, "killed")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert folder.exists() and _accepts(port)  # left running: no teardown ran
    proc, _, _ = _session(tmp_path, temp_dir, "passes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not folder.exists()
    assert not _accepts(port)
