"""The stand-in server's HTTP plumbing and :func:`serve`.

A real ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (HTTP/1.1, keep-alive), run in a
background thread by :func:`serve`, one thread per client connection. What it answers is
decided by :meth:`invtools.sandbox.service.Sandbox.respond`; this module only moves bytes, drops
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from invtools.sandbox.service import Sandbox

__all__ = ["serve", "Server", "Handler"]

# SO_LINGER on with a zero timeout: close() sends RST rather than FIN.
_LINGER_RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"


class Handler(BaseHTTPRequestHandler):
    """One client connection: reads requests, writes what :meth:`Sandbox.respond` answers."""

    protocol_version = "HTTP/1.1"
    server_version = "invtools-sandbox"
    sys_version = ""
    timeout = 30  # idle keep-alive connections are closed after this long
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits
    # for the client's delayed ACK (~40 ms a response). Real servers set TCP_NODELAY too.
    disable_nagle_algorithm = True
    server: Server  # the socketserver.BaseServer this handler is given is always ours

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        sandbox, auth = self.server.sandbox, self.headers.get("Authorization")
        reply = sandbox.respond(self.command, self.path, auth)
        if reply is None:  # a "drop" fault: the client sees a reset connection, no response
            self.close_connection = True
            with suppress(OSError):
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            return
        status, headers, body = reply
        self.log_request(status)
        self.send_response_only(status)
        self.send_header("Server", self.version_string())
        # Date among them: the service states it (no Date at all under date_skew="missing").
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
    *, port: int = 0, log: Callable[[str], None] | None = None, **options
) -> Iterator[Sandbox]:
    """Run the stand-in server on 127.0.0.1 in a background thread; yield its :class:`Sandbox`.

    ``options`` are the :class:`Sandbox`'s (the demo data's ``seed``, ``size`` and ``shops``,
    the budget's ``rate_limit`` and its models, ``latency`` and ``jitter``, ``clock``,
    ``quirks``, ``faults``, ``date_skew``). ``log`` receives one line per request (method,
    path, status) when given. Leaving the block closes every client connection (idle
    keep-alive ones included) and joins every thread; none of its threads holds up the exit
    of the process, whether or not the block was left.

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
    sandbox = Sandbox(**options)
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
