"""The stand-in server's HTTP plumbing and :func:`serve`.

A real ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (HTTP/1.1, keep-alive), run in a
background thread by :func:`serve`, one thread per client connection. What it answers is
decided by :func:`invtools.sandbox.service.respond`; this module only moves bytes, drops
connections for the ``"drop"`` fault and stops cleanly.

Stopping: leaving :func:`serve` stops accepting, shuts every open connection down (idle
keep-alive ones included, so their threads wake at once) and joins every thread. Connection
threads are daemon threads, so none of them holds up the exit of a process that never left
:func:`serve` or never closed its HTTP clients (see :class:`Server`).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from invtools.sandbox.data import build
from invtools.sandbox.limits import Faults
from invtools.sandbox.service import Sandbox, respond

__all__ = ["serve", "Server", "Handler"]

# SO_LINGER on with a zero timeout: close() sends RST rather than FIN.
_LINGER_RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"


class Handler(BaseHTTPRequestHandler):
    """One client connection: reads requests, writes what :func:`respond` answers."""

    protocol_version = "HTTP/1.1"
    server_version = "invtools-sandbox"
    sys_version = ""
    timeout = 30  # idle keep-alive connections are closed after this long
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits
    # for the client's delayed ACK (~40 ms a response). Real servers set TCP_NODELAY too.
    disable_nagle_algorithm = True
    server: Server  # the socketserver.BaseServer this handler is given is always ours

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        reply = respond(self.server.sandbox, self.command, self.path, self.headers)
        if reply is None:  # a "drop" fault: the client sees a reset connection, no response
            self.close_connection = True
            with suppress(OSError):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            return
        status, headers, body = reply
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # answered 405 by the service

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        log = self.server.log
        if log is not None:
            # requestline holds path and query only; tokens travel in headers, never here.
            log(f"{self.command} {urlsplit(self.path).path} {args[1] if len(args) > 1 else ''}")


class Server(ThreadingHTTPServer):
    """One daemon thread per connection, tracked here so that :meth:`stop` can wake and join
    them.

    Daemon, because the interpreter joins every non-daemon thread *before* it runs its atexit
    hooks: a thread waiting on a client's idle keep-alive connection (up to
    ``Handler.timeout``) would hold up the exit of any script or kernel that did not close its
    HTTP session, and the hook that stops the demo server (which would close that connection)
    would run only after the wait.
    """

    daemon_threads = True
    block_on_close = False  # stop() joins the connection threads itself
    allow_reuse_address = True

    def __init__(self, addr, sandbox: Sandbox, log: Callable[[str], None] | None) -> None:
        self.sandbox = sandbox
        self.log = log
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        super().__init__(addr, Handler)

    def process_request(self, request, client_address) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            daemon=True,
            name=f"invtools-sandbox-{self.server_address[1]}-connection",
        )
        with self._open_lock:
            self._open[request] = thread
        thread.start()

    def shutdown_request(self, request) -> None:
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def stop(self, serving: threading.Thread) -> None:
        """Stop serving, close every connection (waking the threads that wait on idle keep-alive
        connections), join every thread of this server."""
        self.sandbox.stopping.set()  # wakes "slow" faults
        if sys.is_finalizing():
            # serve() was never left and the interpreter is tearing down: daemon threads no
            # longer run, so waiting for one (shutdown() waits for serve_forever) would never
            # end. The process is going away; the OS closes its sockets.
            return
        self.shutdown()
        with self._open_lock:
            open_now = list(self._open.items())
        for sock, _thread in open_now:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.server_close()
        for _sock, thread in open_now:
            thread.join()
        serving.join()


@contextmanager
def serve(
    *,
    port: int = 0,
    rate_limit: int = 5,
    seed: int = 0,
    size: int | None = None,
    quirks=(),
    faults: Faults | None = None,
    log: Callable[[str], None] | None = None,
    clock=time,
    latency: float = 0.0,
    jitter: float = 0.25,
    rate_limit_scope: str = "endpoint",
    shops: int = 1,
    rate_window: float = 1.0,
    stated_budget: bool = False,
    count_after_latency: bool = False,
    coarse_budget: bool = False,
) -> Iterator[Sandbox]:
    """Run the stand-in server on 127.0.0.1 in a background thread.

    ``size`` is the number of the shop's transactions (default ``data.DEFAULT_SIZE``);
    ``shops`` how many location-mode teams it serves (1 to ``data.MAX_SHOPS``): the shop and
    its first ``shops - 1`` branches (``"harrogate"``, ``"york"``, ...: each with its own
    token, seeded data and a size that is a fraction of the shop's), besides the Basic-mode
    ``"basic"``;
    ``log`` receives one line per request (method, path, status) when given. ``clock`` (any
    object with ``monotonic()``, the :mod:`time` module by default) is the time the rate
    window runs on: a test gives the server and the client one fake clock, and pacing is
    tested without sleeping. ``latency`` (seconds, 0 by default) makes every answer take about
    that long, uniformly within ``+-jitter`` (a fraction), seeded by ``seed``: ``latency=0.8``
    answers like the real service. ``rate_limit_scope``: ``"endpoint"`` (the documented
    budget, per token and endpoint) or ``"token"`` (one budget per token for all endpoints, as
    some production clients report). Other models of the service's budget, which is not pinned
    down: ``rate_window`` (seconds the budget counts over: ``rate_limit=300,
    rate_window=60`` is a minute's budget of 300), ``stated_budget=True`` (``X-Ratelimit-Limit``,
    ``-Remaining`` and ``-Reset`` on every answer; by default a success says Limit and
    Remaining, a 429 all three), ``coarse_budget=True`` (all three on every answer in the common
    coarse form: ``Limit`` per minute while the budget counts per ``rate_window``, ``Reset`` in
    whole seconds rounded up) and ``count_after_latency=True`` (the latency, with its jitter,
    comes before the request is counted, as network time does; by default a request is counted
    on arrival and its answer delayed). Leaving the block
    closes every client connection (idle keep-alive ones included) and joins every thread;
    none of its threads holds up the exit of the process, whether or not the block was left.

    >>> import json, urllib.request
    >>> with serve(size=200) as sb:
    ...     req = urllib.request.Request(sb.base_url + "/v1/teams/linked",
    ...                                  headers={"Authorization": "Bearer " + sb.tokens["shop"]})
    ...     with urllib.request.urlopen(req) as resp:
    ...         json.load(resp)["mode"]
    2
    >>> with serve(size=200, shops=3) as sb:
    ...     sorted(sb.tokens)
    ['basic', 'harrogate', 'shop', 'york']
    """
    if rate_limit_scope not in ("endpoint", "token"):
        raise ValueError(f"rate_limit_scope is 'endpoint' or 'token', not {rate_limit_scope!r}")
    sandbox = Sandbox(
        build(seed=seed, size=size, shops=shops),
        seed=seed,
        rate_limit=rate_limit,
        quirks=quirks,
        faults=faults,
        clock=clock,
        latency=latency,
        jitter=jitter,
        rate_window=rate_window,
        stated_budget=stated_budget,
        count_after_latency=count_after_latency,
        coarse_budget=coarse_budget,
    )
    if rate_limit_scope == "token":
        sandbox.quirks = sandbox.quirks | {"shared_rate_limit"}
    server = Server(("127.0.0.1", port), sandbox, log)
    sandbox.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name=f"invtools-sandbox-{server.server_address[1]}",
        daemon=True,
    )
    thread.start()
    try:
        yield sandbox
    finally:
        server.stop(thread)
