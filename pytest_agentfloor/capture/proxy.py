"""The recording proxy: forwards each request unchanged, returns the reply unchanged, stores the pair.

Standard library on both sides: ``ThreadingHTTPServer`` in front (one thread per agent
connection, HTTP/1.1 keep-alive) and ``http.client`` to the upstream (:mod:`.upstream`: one
keep-alive connection per thread, TLS, timeouts, no environment proxy variables). Why: no
dependency and no event loop, the agent's own client keeps its connection open, and the bytes
arrive as the upstream sent them and undecoded (a gzip body stays gzip). httpx, which the
providers use, cost three times the CPU per forwarded request (docs/capture.md, "Overhead").

What "unchanged" means here: the request's method, path (less a ``/site/NAME`` prefix), query,
body and headers go upstream as received, less the hop-by-hop headers (``Connection``,
``Keep-Alive``, ``Transfer-Encoding``, ``TE``, ``Trailer``, ``Upgrade``, ``Proxy-*``), ``Host``
(the upstream's own) and ``X-Agentfloor-Site``; the reply's status, reason, headers (less
hop-by-hop) and body bytes come back as sent, streaming chunks forwarded as they arrive. Only
the framing is the proxy's: a body without ``Content-Length`` is re-chunked to an HTTP/1.1 agent.
An upstream that cannot be reached is a 502 (a timeout a 504) with an OpenAI-shaped error body,
recorded as such.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .config import CaptureConfig
from .redact import Redactor, clean_query, secret_values
from .sites import HEADER, assign, split_path
from .store import SCHEMA, CaptureStore
from .upstream import Upstream, UpstreamError
from .wire import api_of, decoded, is_terminal_chunk, read_reply, read_request

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade", "proxy-connection"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class CaptureProxy:
    """The proxy's state: the upstream, the client to it, the store, the site rules and the redactor."""

    def __init__(self, upstream: str, store: CaptureStore, config: CaptureConfig | None = None, *,
                 redactor: Redactor | None = None, timeout_s: float = 600.0, ca_bundle: str | None = None):
        self.upstream = upstream.rstrip("/")
        self.store = store
        self.config = config or CaptureConfig()
        self.redactor = redactor or Redactor(self.config.patterns, self.config.replacement, self.config.plugins)
        self.client = Upstream(self.upstream, timeout_s, ca_bundle=ca_bundle)
        self.captured = 0
        self._count_lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None

    def record(self, rec: dict[str, Any], secrets: list[str], done: frozenset[str] = frozenset()) -> None:
        self.store.append(self.redactor.apply(rec, secrets, done=done))
        with self._count_lock:
            self.captured += 1

    def serve(self, host: str, port: int) -> ThreadingHTTPServer:
        handler = type("_BoundHandler", (ProxyHandler,), {"proxy": self})
        server_class = type("_ProxyServer", (ThreadingHTTPServer,), {"request_queue_size": 256,
                                                                     "daemon_threads": True})
        self.httpd = server_class((host, port), handler)
        return self.httpd

    def close(self) -> None:
        if self.httpd is not None:
            self.httpd.server_close()
        self.store.close()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ProxyHandler(BaseHTTPRequestHandler):
    proxy: CaptureProxy
    protocol_version = "HTTP/1.1"
    #: TCP_NODELAY: the head and the body are separate writes; with Nagle's algorithm and the agent's
    #: delayed ACK the body would wait ~40 ms (measured: +43 ms per request before this line)
    disable_nagle_algorithm = True
    timeout = 900  # an idle keep-alive connection is closed after this

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._forward()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    # -- request ---------------------------------------------------------------------------
    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        proxy = self.proxy
        start = time.perf_counter()
        when = _now()
        body = self._body()
        path_site, path = split_path(self.path)
        bare, _, query = path.partition("?")
        api = api_of(bare)
        connection = {t.strip().lower() for t in (self.headers.get("Connection") or "").split(",")}
        incoming = [(k, v) for k, v in self.headers.items()]
        headers = [(k, v) for k, v in incoming
                   if k.lower() not in HOP_BY_HOP and k.lower() not in connection
                   and k.lower() not in ("host", HEADER, "content-length")]
        rec: dict[str, Any] | None = None
        secrets: list[str] = []
        if api is not None and self.command == "POST":
            req = read_request(body)
            site, how = assign(self.headers.get(HEADER), path_site, proxy.config.rules, req)
            secrets = secret_values(incoming, query)
            rec = {"v": SCHEMA, "id": uuid.uuid4().hex[:16], "site": site, "site_from": how, "time": when,
                   "api": api, "path": bare + ("?" + clean_query(query, proxy.redactor.replacement) if query else ""),
                   "model": req["model"], "stream": req["stream"],
                   "request": {"messages": req["messages"], "tools": req["tools"], "params": req["params"]}}
            if req.get("error"):
                rec["request"]["error"] = req["error"]
        self._relay((self.command, path, headers, body), api, rec, secrets, start)

    # -- reply -----------------------------------------------------------------------------
    def _relay(self, request: tuple[str, str, list[tuple[str, str]], bytes], api: str | None, rec: dict[str, Any] | None, secrets: list[str],
               start: float) -> None:
        proxy = self.proxy
        written = False
        redacted: frozenset[str] = frozenset()
        chunks: list[bytes] = []
        status, ctype, encoding, ttfb = 0, None, None, None
        error: str | None = None

        def finish(extra_error: str | None = None) -> None:
            nonlocal written
            if rec is None or written:
                return
            written = True
            reply = read_reply(api or "", status, decoded(b"".join(chunks), encoding), ctype)
            if extra_error and not reply.get("error"):
                reply["error"] = extra_error
            rec.update({"upstream_model": reply.pop("model"), "status": status, "reply": reply,
                        "latency_s": round(time.perf_counter() - start, 6),
                        "ttfb_s": None if ttfb is None else round(ttfb, 6)})
            try:
                proxy.record(rec, secrets, redacted)
            except Exception as exc:  # a capture failure must never break the agent's call
                print(f"agentfloor capture: could not store a capture: {type(exc).__name__}: {exc}",
                      file=sys.stderr, flush=True)

        def while_upstream_works() -> None:
            """The request's part of the record is redacted while the upstream computes its reply, off the
            path of the reply's last bytes (the record must be written before they reach the agent)."""
            nonlocal redacted
            if rec is not None and not redacted:
                try:
                    rec["request"] = proxy.redactor.part(rec["request"], secrets)
                    redacted = frozenset({"request"})
                except Exception:  # left to finish(), which reports a failure
                    pass

        try:
            resp = proxy.client.send(*request, sent=while_upstream_works)
        except UpstreamError as exc:
            status = 504 if exc.timeout else 502
            error = f"upstream {proxy.upstream}: {exc}"
            if exc.certificate:  # every call will fail the same way: the operator must see it, not only the agent
                print(f"agentfloor capture: {error}", file=sys.stderr, flush=True)
            data = json.dumps({"error": {"message": f"agentfloor capture proxy: {error}", "type": "upstream_error",
                                         "param": None, "code": None}}).encode()
            chunks.append(data)
            ctype = "application/json"
            finish(error)
            self._send_head(status, "Bad Gateway" if status == 502 else "Gateway Timeout",
                            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
            self._write(data)
            return
        complete = False
        try:
            ttfb = time.perf_counter() - start
            status, ctype = resp.status, resp.getheader("content-type")
            encoding = resp.getheader("content-encoding")
            length = resp.getheader("content-length")
            keep = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
            bodiless = self.command == "HEAD" or status in (204, 304) or status < 200
            chunked = length is None and self.request_version == "HTTP/1.1" and not bodiless
            if chunked:
                keep.append(("Transfer-Encoding", "chunked"))
            elif length is None and not bodiless:
                self.close_connection = True  # an HTTP/1.0 agent: the body ends when the connection does
            self._send_head(status, resp.reason, keep)
            expected = int(length) if length is not None and length.isdigit() else None
            got = 0
            try:
                for chunk in proxy.client.chunks(resp):
                    if not chunk:
                        continue
                    chunks.append(chunk)
                    got += len(chunk)
                    if (expected is not None and got >= expected) or (api and is_terminal_chunk(api, chunk)):
                        finish()  # on disk before the agent can see its reply complete
                    self._write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                complete = True
                finish()
                if chunked:
                    self._write(b"0\r\n\r\n")
            except UpstreamError as exc:
                finish(f"upstream broke off the reply: {exc}")
                self.close_connection = True
            except (BrokenPipeError, ConnectionResetError) as exc:
                finish(f"the agent closed the connection: {type(exc).__name__}")
                self.close_connection = True
        finally:
            if not complete:  # the reply was not read to its end: this connection cannot carry another
                proxy.client.drop()
            resp.close()
            finish()

    def _send_head(self, status: int, reason: str, headers: list[tuple[str, str]]) -> None:
        self.send_response_only(status, reason or None)
        for k, v in headers:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def upstream_ok(url: str) -> str | None:
    """Why an --upstream URL is unusable, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"--upstream {url!r}: expected http(s)://HOST[:PORT][/PATH]"
    return None
