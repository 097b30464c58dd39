"""The stand-in server never holds up the end of a process or of ``serve()``.

A script, a notebook kernel or ``python -m invtools sandbox`` must exit promptly whether or not
its HTTP clients were closed and whether or not it left ``serve()``; a client's idle keep-alive
connection must not keep the server (or the interpreter) waiting.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from invtools.sandbox import serve

ROOT = Path(__file__).resolve().parents[2]
EXIT_BOUND = 10.0  # seconds from start to exit; the work itself takes about one
HANG = 45.0  # a run still going after this long is reported as hanging, then killed

SCRIPTS = {
    # The README's first lines, saved as a script: connect() starts the demo server in this
    # process; the client's session (and its keep-alive connection) is never closed.
    "connect": """
        import invtools
        client = invtools.connect(quiet=True)
        print(client.team().name)
    """,
    # serve() left, the client's keep-alive connection left open.
    "serve-left": """
        import requests
        from invtools.sandbox import serve
        session = requests.Session()
        with serve(size=200) as sb:
            auth = {"Authorization": "Bearer " + sb.tokens["shop"]}
            print(session.get(sb.base_url + "/v1/teams/linked", headers=auth).json()["name"])
    """,
    # serve() never left (as a notebook kernel that is shut down does), client not closed.
    "serve-never-left": """
        import requests
        from invtools.sandbox import serve
        running = serve(size=200)
        sb = running.__enter__()
        session = requests.Session()
        auth = {"Authorization": "Bearer " + sb.tokens["shop"]}
        print(session.get(sb.base_url + "/v1/teams/linked", headers=auth).json()["name"])
    """,
    # sys.exit() inside the with block, the client still connected.
    "exit-inside-serve": """
        import sys
        import requests
        from invtools.sandbox import serve
        session = requests.Session()
        with serve(size=200) as sb:
            auth = {"Authorization": "Bearer " + sb.tokens["shop"]}
            print(session.get(sb.base_url + "/v1/teams/linked", headers=auth).json()["name"])
            sys.exit(0)
    """,
}


def run_script(code: str, tmp_path: Path) -> tuple[float, subprocess.CompletedProcess]:
    # tests/conftest.py has removed every INVTOOLS_* variable: the demo server it is
    env = {**os.environ, "INVTOOLS_CACHE_DIR": str(tmp_path / "cache")}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the script was still running after {HANG:.0f} s (output {out!r})")
    elapsed = time.monotonic() - started
    return elapsed, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_script_exits_promptly_with_clients_left_open(name, tmp_path):
    elapsed, proc = run_script(SCRIPTS[name], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Greenfield Hardware & Garden"]
    assert elapsed < EXIT_BOUND, f"{name}: exited after {elapsed:.1f} s"


def test_leaving_serve_with_an_idle_keep_alive_client_returns_at_once():
    with serve(size=200) as sb:
        port = int(sb.base_url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request(
            "GET", "/v1/teams/linked", headers={"Authorization": f"Bearer {sb.tokens['shop']}"}
        )
        assert json.loads(conn.getresponse().read())["mode"] == 2  # the connection stays open
        started = time.monotonic()
    try:
        assert time.monotonic() - started < 2.0
    finally:
        conn.close()


def test_cli_stops_promptly_on_ctrl_c_with_a_client_still_connected():
    proc = subprocess.Popen(
        [sys.executable, "-m", "invtools", "sandbox", "--port", "0", "--size", "200", "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    conn = None
    try:
        first = proc.stdout.readline()
        assert first.startswith("invtools sandbox listening on"), proc.stderr.read()
        lines = [first]
        while not lines[-1].startswith("Ctrl-C"):
            lines.append(proc.stdout.readline())
            assert lines[-1], proc.stderr.read()
        token = next(ln.split()[-1] for ln in lines if ln.strip().startswith("shop"))
        port = int(first.split()[-1].rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/v1/teams/linked", headers={"Authorization": f"Bearer {token}"})
        assert json.loads(conn.getresponse().read())["mode"] == 2  # left open
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG)
        elapsed = time.monotonic() - started
    finally:
        if conn is not None:
            conn.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopped" in out
    assert elapsed < 2.0 + 3.0  # under 2 s in practice; slack for a loaded machine
