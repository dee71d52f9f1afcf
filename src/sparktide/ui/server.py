"""The live page's HTTP server: ``/`` (the page), ``/state`` (its JSON), ``/metrics``.

Read-only: GET and HEAD only (anything else: 405). It binds 127.0.0.1 unless an address
names another host; on the loopback it answers only requests that name it by a loopback
address or ``localhost`` (403 otherwise: another site's page cannot reach it by DNS
rebinding). It runs in daemon threads beside the job; :meth:`UiServer.stop` ends it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from sparktide.errors import ConfigError
from sparktide.ui.prom import registry_of
from sparktide.ui.state import LiveState

__all__ = ["DEFAULT_HOST", "UiServer", "parse_address"]

#: The host the server binds when the address names none.
DEFAULT_HOST = "127.0.0.1"
#: Longest a ``/state?after=N`` request waits for a new record (seconds).
LONG_POLL = 10.0
#: The page's policy: its own inline script and style, requests to this server only.
_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


def parse_address(text: str, option: str = "ui") -> tuple[str, int]:
    """``[HOST:]PORT`` as ``(host, port)``; the host is 127.0.0.1 when not given
    (``[::1]:8080`` for an IPv6 host). Port 0 picks a free port.

    Raises
    ------
    ConfigError
        Naming ``option``, when the text is not such an address.
    """
    host, sep, port = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if sep else DEFAULT_HOST
    if not port.isdigit() or int(port) > 65535 or not host:
        raise ConfigError(
            option, f"expected [HOST:]PORT such as 8080 or 0.0.0.0:8080, got {text!r}"
        )
    return host, int(port)


def _page() -> bytes:
    return resources.files("sparktide.ui").joinpath("page.html").read_bytes()


class _Handler(BaseHTTPRequestHandler):
    """One request; ``server.view`` is the :class:`UiServer`."""

    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):  # every other method: 405
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"GET and HEAD only\n", "text/plain", True)

    def _answer(self, *, head: bool) -> None:
        url = urlsplit(self.path)
        view = self.server.view
        if not self._host_allowed():  # (DNS rebinding: another site's page, named as us)
            self._send(HTTPStatus.FORBIDDEN, b"unknown Host\n", "text/plain", head)
        elif url.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, view.page, "text/html; charset=utf-8", head)
        elif url.path == "/state":
            after = parse_qs(url.query).get("after")
            seen = int(after[0]) if after and after[0].isdigit() else 0
            if not head and after:
                view.state.wait(seen, LONG_POLL)
            body = json.dumps(view.state.snapshot(seen), default=str).encode()
            self._send(HTTPStatus.OK, body, "application/json", head)
        elif url.path == "/metrics":
            self._send(HTTPStatus.OK, view.exposition(), CONTENT_TYPE_LATEST, head)
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", head)

    def _host_allowed(self) -> bool:
        """Whether the request names this server by a loopback address or ``localhost``
        when it listens on the loopback (any name otherwise)."""
        if not self.server.loopback:
            return True
        try:
            name = urlsplit("//" + (self.headers.get("Host") or "")).hostname or ""
        except ValueError:
            return False
        if name == "localhost":
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False

    def _send(self, status: HTTPStatus, body: bytes, kind: str, head: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", _POLICY)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET, HEAD")
            self.close_connection = True
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no line per request."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    view: UiServer
    loopback = True  # (it listens on the loopback only)

    def __init__(self, address: tuple[str, int], handler: type[_Handler]) -> None:
        super().__init__(address, handler)
        self.open: set[socket.socket] = set()  # connections (kept alive between requests)
        self.open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.open_lock:
            self.open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.open_lock:
            self.open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End every open connection: none is answered once the server stopped."""
        with self.open_lock:
            for connection in self.open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (a closed page) is no error; others are reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class UiServer:
    """Serves the live page and ``/metrics`` of a :class:`LiveState`.

    Parameters
    ----------
    state
        The records to show.
    address
        ``[HOST:]PORT`` (:func:`parse_address`); ``"0"`` picks a free port on 127.0.0.1.
    option
        The option or parameter that gave the address, named in errors.

    Raises
    ------
    ConfigError
        The address is not ``[HOST:]PORT``, or cannot be bound (a port in use).

    Attributes
    ----------
    url
        The page's address, such as ``http://127.0.0.1:8080/``.
    """

    def __init__(self, state: LiveState, address: str = "0", *, option: str = "ui") -> None:
        self.state = state
        self.registry = registry_of(state)
        self.page = _page()
        self._exposed: tuple[int, bytes] = (-1, b"")
        self._exposed_lock = threading.Lock()
        host, port = parse_address(address, option)
        try:
            self._server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
        except OSError as exc:
            raise ConfigError(
                option, f"cannot serve on {address!r}: {exc.strerror or exc}"
            ) from None
        self._server.view = self
        self._server.loopback = ipaddress.ip_address(self._server.server_address[0]).is_loopback
        host, port = self._server.server_address[:2]
        self.url = f"http://{host if ':' not in str(host) else f'[{host}]'}:{port}/"
        self._thread: threading.Thread | None = None

    def exposition(self) -> bytes:
        """``/metrics``' text: made once per record, whoever scrapes it."""
        with self._exposed_lock:
            seq = self.state.seq
            if self._exposed[0] != seq:
                self._exposed = (seq, generate_latest(self.registry))
            return self._exposed[1]

    def start(self) -> UiServer:
        """Serve in a daemon thread; returns itself."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="sparktide-ui", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (waiting pages are woken first)."""
        self.state.end()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self._server.close_connections()
