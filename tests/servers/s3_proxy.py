"""A reverse proxy in front of an S3 API server (tests/servers/s3.py, moto's) that counts the requests and can add
a delay to each, as real object storage answers in tens of milliseconds where moto, unloaded, answers in a few.

The proxy is what the fast reader's tests and `bench/object_storage.py` measure with: requests per table are
counted where they arrive, whatever client sent them (obstore, s3fs, or S3A in the JVM), and the delay shows
whether a client keeps many requests in flight (20 ms per request, one at a time, is 20 s for 1,000 requests).
It forwards each request as it came (the Host header included, which the signature covers) on a connection of
its own per client connection, so concurrency is the client's.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers import LOCALHOST

# Headers of one hop, not forwarded (RFC 9110 §7.6.1); the body is sent whole with its length.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
)


def request_kind(method: str, target: str) -> str:
    """`list`, `get`, `head`, `put`, `delete` or `other`: what an S3 request does, from its method and target."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    if method == "GET" and ("list-type" in query or parts.path.strip("/").count("/") == 0):
        return "list"
    return {"GET": "get", "HEAD": "head", "PUT": "put", "DELETE": "delete"}.get(method, "other")


@dataclass
class CountingProxy:
    """A reverse proxy on 127.0.0.1 to `target` (an `http://host:port`), counting requests by kind and, per kind,
    by the object or prefix they name, each delayed by `delay` seconds before it is forwarded."""

    target: str
    delay: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)
    names: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://{LOCALHOST}:{self.server.server_address[1]}"

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.names.clear()

    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)

    def record(self, method: str, target: str) -> None:
        kind = request_kind(method, target)
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        listed = f"{parts.path}?prefix={query.get('prefix', [''])[0]}"
        if "start-after" in query:
            listed += f"&start-after={query['start-after'][0]}"
        with self.lock:
            self.counts[kind] += 1
            self.names.append((kind, listed if kind == "list" else parts.path))


def _handler(proxy: CountingProxy) -> type[BaseHTTPRequestHandler]:
    server = urlsplit(proxy.target)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        upstream: http.client.HTTPConnection | None = None

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _forward(self) -> None:
            body = self._body()
            proxy.record(self.command, self.path)
            if proxy.delay:
                time.sleep(proxy.delay)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            for attempt in range(2):
                if self.upstream is None:
                    self.upstream = http.client.HTTPConnection(str(server.hostname), server.port, timeout=120)
                try:
                    self.upstream.request(self.command, self.path, body=body, headers=headers)
                    response = self.upstream.getresponse()
                    data = response.read()
                    break
                except (http.client.HTTPException, OSError):
                    # moto closed an idle keep-alive connection: once more on a new one.
                    self.upstream.close()
                    self.upstream = None
                    if attempt:
                        # No server behind: a gateway's answer, which clients retry as S3's 5xx.
                        self.send_response(502)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
            self.send_response_only(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            length = response.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", length or "0")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's backlog of 5 drops the connections a client opens at once beyond it, and each dropped one
    # waits out TCP's retransmission (1 s, 3 s, ...): a stall of the proxy, not of the client measured.
    request_queue_size = 1024


@contextlib.contextmanager
def counting_proxy(target: str, delay: float = 0.0) -> Iterator[CountingProxy]:
    """A `CountingProxy` serving on a free port of 127.0.0.1, one thread per client connection."""
    proxy = CountingProxy(target, delay)
    server = _Server((LOCALHOST, 0), _handler(proxy))
    proxy.server = server
    thread = threading.Thread(target=server.serve_forever, name="s3-proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
