"""The server's life: starts, serves threads concurrently, stops cleanly; the CLI command."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sandbox_helpers import call

from invtools.sandbox import Faults, serve

ROOT = Path(__file__).resolve().parents[2]


def sandbox_threads():
    return [
        t
        for t in threading.enumerate()
        if t.name.startswith("invtools-sandbox") or "process_request_thread" in t.name
    ]


def test_exit_stops_every_thread_and_closes_the_port_even_with_open_connections():
    before = threading.active_count()
    with serve(size=200) as sb:
        port = int(sb.base_url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request(
            "GET", "/v1/teams/linked", headers={"Authorization": f"Bearer {sb.tokens['shop']}"}
        )
        assert json.loads(conn.getresponse().read())["mode"] == 2  # keep-alive left open
        sb.faults = Faults(on_requests={1}, kinds=("slow",), slow_seconds=30)
        outcome = []

        def slow_call():  # answered as the server stops, or cut: either is fine, never a hang
            try:
                outcome.append(call(sb, "/v1/members", timeout=30).status)
            except (OSError, http.client.HTTPException) as exc:
                outcome.append(type(exc).__name__)

        slow = threading.Thread(target=slow_call)
        slow.start()
        time.sleep(0.2)
        started = time.monotonic()
    assert time.monotonic() - started < 10  # the 30 s "slow" answer did not hold it up
    slow.join(10)
    assert outcome and not slow.is_alive()
    conn.close()
    assert not sandbox_threads()
    assert threading.active_count() == before
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_serves_concurrent_requests(shop_server):
    results, errors = [], []

    def worker(n):
        try:
            for k in range(5):
                r = call(shop_server, "/v1/location-txs", {"limit": 100, "type": "out"})
                results.append((n, k, r.status, r.json["items"][0]["id"]))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 30
    assert {r[2] for r in results} == {200} and len({r[3] for r in results}) == 1


def test_requests_are_logged_with_route_params_and_team(shop_server):
    shop_server.clear_log()
    call(shop_server, "/v1/items/100001", {"location_ids": [3101, 3102]})
    call(shop_server, "/v1/partners", team="basic")
    a, b = shop_server.requests
    assert (a.method, a.path, a.route, a.status, a.team) == (
        "GET",
        "/v1/items/100001",
        "/v1/items/{id}",
        200,
        "shop",
    )
    assert a.params == {"location_ids": ["3101", "3102"]}
    assert b.team == "basic" and b.route == "/v1/partners"


def test_cli_sandbox_prints_url_and_tokens_and_stops_on_ctrl_c():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "invtools",
            "sandbox",
            "--port",
            "0",
            "--size",
            "200",
            "--rate-limit",
            "0",
            "--seed",
            "2",
            "--latency",
            "0.2",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while not any(line.startswith("Ctrl-C") for line in lines):
            line = proc.stdout.readline()
            assert line, f"sandbox exited early: {proc.stderr.read()}"
            lines.append(line)
        url = lines[0].split()[-1]
        tokens = {ln.split()[0]: ln.split()[-1] for ln in lines if "(mode" in ln}
        assert set(tokens) == {"shop", "harrogate", "york", "basic"}  # the demo's teams
        with serve(seed=2, size=200, shops=3) as same:
            assert tokens == same.tokens  # seeded demo tokens
        port = int(url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            started = time.monotonic()
            conn.request(
                "GET", "/v1/teams/linked", headers={"Authorization": f"Bearer {tokens['basic']}"}
            )
            assert json.loads(conn.getresponse().read())["name"] == "Corner Café"
            assert time.monotonic() - started >= 0.15  # --latency 0.2, +-25 %
        finally:
            conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopped" in out
    assert "GET /v1/teams/linked 200" in err  # one line per request, no token
    assert tokens["basic"] not in err


def test_cli_reports_a_busy_port():
    with serve(size=200) as sb:
        port = sb.base_url.rsplit(":", 1)[1]
        proc = subprocess.run(
            [sys.executable, "-m", "invtools", "sandbox", "--port", port, "--size", "200"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1
    assert "--port" in proc.stderr


def test_cli_refuses_a_negative_latency_in_words():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "invtools",
            "sandbox",
            "--port",
            "0",
            "--size",
            "200",
            "--latency",
            "-1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "latency" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_refuses_too_many_shops_in_words():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "invtools",
            "sandbox",
            "--port",
            "0",
            "--size",
            "200",
            "--shops",
            "9",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "shops" in proc.stderr and "Traceback" not in proc.stderr
