"""A real HTTP model server for tests and benchmarks: OpenAI Chat Completions and Ollama /api/chat.

Providers are tested over real sockets so that timeouts, dropped connections and status codes
go through the official clients exactly as they would against a live server. Behaviour is
scripted with a queue of actions (`push`) or a `responder(request_json) -> action` callable;
each action renders itself in whichever wire format the request path asked for.

Stdlib only, so benchmarks can import it without the test dependencies.

    with FakeModelServer() as server:
        server.push(status(500))
        server.push(reply(tool_calls=[("lookup_record", {"record_id": "R1"})]))
        ...  # point a provider at server.url (+ "/v1" for OpenAI clients)
        assert len(server.requests) == 2
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union

__all__ = [
    "Action", "Reply", "Status", "Stall", "Drop", "Raw", "Trickle", "Received", "FakeModelServer", "LoopbackServer",
    "reply", "status", "stall", "drop", "raw", "raw_tool_call", "trickle",
    "OPENAI_PATH", "OLLAMA_PATH", "OLLAMA_SHOW_PATH",
]

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"
OLLAMA_SHOW_PATH = "/api/show"
#: llama.cpp's server: render a chat request's prompt, complete a prompt raw (answered when `raw_text` is set)
LLAMA_TEMPLATE_PATH = "/apply-template"
LLAMA_COMPLETION_PATH = "/completion"

# (name, arguments) or (name, arguments, id); arguments is a dict (encoded as JSON) or a
# str sent verbatim, which is how a malformed tool call is scripted.
ToolCallSpec = Union[tuple[str, Any], tuple[str, Any, str]]


@dataclass
class Reply:
    """A successful completion. `finish_reason=None` means "tool_calls" if there are calls, else "stop"."""
    content: str | None = None
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    finish_reason: str | None = None
    tokens_in: int | None = 11
    tokens_out: int | None = 7  # None for either omits usage (OpenAI) / the counts (Ollama)


@dataclass
class Status:
    """An HTTP error status with an error body in the wire format's shape (and extra headers)."""
    code: int
    message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stall:
    """Wait `seconds` (interrupted when the server stops), then perform `then`."""
    seconds: float
    then: "Action | None" = None


@dataclass
class Drop:
    """Close the connection without writing a response."""


@dataclass
class Raw:
    """Send `body` as is (a dict is JSON-encoded), for payloads no well-behaved server sends."""
    body: Any
    code: int = 200
    content_type: str = "application/json"


@dataclass
class Trickle:
    """Send headers at once, then the body of `then` a few bytes every `every_s` seconds: each socket
    read succeeds, so only a wall-clock bound ends the request."""
    every_s: float = 1.0
    chunk: int = 2
    then: "Action | None" = None


Action = Union[Reply, Status, Stall, Drop, Raw, Trickle]


def reply(content: str | None = None, tool_calls: list[ToolCallSpec] | None = None,
          finish_reason: str | None = None, tokens_in: int | None = 11,
          tokens_out: int | None = 7) -> Reply:
    return Reply(content, list(tool_calls or []), finish_reason, tokens_in, tokens_out)


def status(code: int, message: str | None = None, headers: dict[str, str] | None = None) -> Status:
    return Status(code, message, dict(headers or {}))


def trickle(every_s: float = 1.0, chunk: int = 2, then: "Action | None" = None) -> Trickle:
    return Trickle(every_s, chunk, then)


def stall(seconds: float, then: Action | None = None) -> Stall:
    return Stall(seconds, then)


def drop() -> Drop:
    return Drop()


def raw(body: Any, code: int = 200, content_type: str = "application/json") -> Raw:
    return Raw(body, code, content_type)


def raw_tool_call(name: str, arguments: str, content: str | None = None) -> Reply:
    """A tool call whose arguments are the literal string given (e.g. invalid JSON).

    OpenAI format carries it verbatim in `function.arguments`; in Ollama format `arguments`
    becomes a JSON string instead of an object, which the official client cannot read.
    """
    return Reply(content, [(name, arguments)])


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON


#: every server started in this process, so tests/conftest.py can check responder errors after each test
_STARTED: "list[LoopbackServer]" = []


def started_servers() -> "list[LoopbackServer]":
    return list(_STARTED)


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1:<free port> in a daemon thread, with a queue of scripted
    actions; use as a context manager. Subclasses name their handler class and the attribute under
    which the handler finds its server object."""

    handler_class: type[BaseHTTPRequestHandler]
    owner_attr: str
    thread_name = "loopback-server"

    def __init__(self) -> None:
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def push(self, *actions: Any) -> "LoopbackServer":
        with self._lock:
            self._queue.extend(actions)
        return self

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> "LoopbackServer":
        handler = type("_Handler", (self.handler_class,), {self.owner_attr: self})
        server_class = type("_Server", (ThreadingHTTPServer,), {"request_queue_size": 1024})
        self._httpd = server_class(("127.0.0.1", 0), handler)  # a deep backlog: many episodes connect at once
        self._httpd.daemon_threads = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        _STARTED.append(self)
        return self

    def stop(self) -> None:
        """Interrupt stalls, stop accepting, and wait for every handler thread to end."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()  # joins handler threads; each is bounded by _stop / socket timeout
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeModelServer(LoopbackServer):
    """Answers OpenAI Chat Completions and Ollama /api/chat requests from scripted actions.

    `url` is the bare origin (http://127.0.0.1:PORT): Ollama clients use it as is, OpenAI
    clients need `openai_url` (origin + "/v1"). When the queue is empty the `responder` is
    asked, and without one the answer is a plain "done" text reply.
    """

    owner_attr = "fake"
    thread_name = "fake-model-server"

    def __init__(self, responder: Callable[[Any], Action] | None = None, *,
                 default: Action | None = None, max_stall_s: float = 30.0):
        super().__init__()
        self.responder = responder
        self.default = default or Reply(content="done")
        self.max_stall_s = max_stall_s
        self.received: list[Received] = []
        self.errors: list[BaseException] = []  # exceptions raised by the responder
        self._ids = itertools.count()
        #: what POST /api/show reports as the model's `<arch>.context_length`; None answers 404
        self.context_length: int | None = None
        self.show_requests = 0
        #: llama.cpp's /apply-template and /completion answer with this text as the model's (None: 404)
        self.raw_text: str | None = None
        self.raw_requests: list[tuple[str, Any]] = []

    @property
    def requests(self) -> list[Any]:
        """Every request body received so far, in order."""
        with self._lock:
            return [r.body for r in self.received]

    # -- internals ---------------------------------------------------------------------------
    def _next_action(self, body: Any) -> Action:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return self.default

    def _record(self, rec: Received) -> None:
        with self._lock:
            self.received.append(rec)

    def _call_id(self) -> str:
        return f"call_{next(self._ids)}"


def _openai_body(action: Reply, request: Any, fake: FakeModelServer) -> dict[str, Any]:
    calls = []
    for spec in action.tool_calls:
        name, args = spec[0], spec[1]
        cid = spec[2] if len(spec) > 2 else fake._call_id()  # type: ignore[misc]
        calls.append({"id": cid, "type": "function",
                      "function": {"name": name,
                                   "arguments": args if isinstance(args, str) else json.dumps(args)}})
    message: dict[str, Any] = {"role": "assistant", "content": action.content}
    if calls:
        message["tool_calls"] = calls
    finish = action.finish_reason or ("tool_calls" if calls else "stop")
    body: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": request.get("model", "") if isinstance(request, dict) else "",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if action.tokens_in is not None and action.tokens_out is not None:
        body["usage"] = {"prompt_tokens": action.tokens_in, "completion_tokens": action.tokens_out,
                         "total_tokens": action.tokens_in + action.tokens_out}
    return body


def _ollama_body(action: Reply, request: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": action.content or ""}
    if action.tool_calls:
        message["tool_calls"] = [{"function": {"name": spec[0], "arguments": spec[1]}}
                                 for spec in action.tool_calls]
    body: dict[str, Any] = {
        "model": request.get("model", "") if isinstance(request, dict) else "",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "message": message, "done": True,
        "done_reason": "length" if action.finish_reason == "length" else "stop",
    }
    if action.tokens_in is not None:
        body["prompt_eval_count"] = action.tokens_in
    if action.tokens_out is not None:
        body["eval_count"] = action.tokens_out
    return body


def _pieces(text: str) -> list[str]:
    """The reply text in up to three streamed pieces (none for an empty text)."""
    if not text:
        return []
    n = max(1, -(-len(text) // 3))
    return [text[i:i + n] for i in range(0, len(text), n)]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModelServer  # set on the per-server subclass
    protocol_version = "HTTP/1.0"  # one request per connection: handler threads end promptly
    timeout = 10  # a client that connects and sends nothing cannot pin a thread forever

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._send_json(404, {"error": f"no route for GET {self.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        path = self.path.split("?", 1)[0]
        if path == OLLAMA_SHOW_PATH:
            with self.fake._lock:
                self.fake.show_requests += 1
            if self.fake.context_length is None:
                self._send_json(404, {"error": "no route"})
            else:
                self._send_json(200, {"modelfile": "", "template": "", "details": {"family": "fake"},
                                      "model_info": {"general.architecture": "fake",
                                                    "fake.context_length": self.fake.context_length}})
            return
        if path in (LLAMA_TEMPLATE_PATH, LLAMA_COMPLETION_PATH) and self.fake.raw_text is not None:
            # llama.cpp's own endpoints: the prompt as the server renders it, and a raw completion
            with self.fake._lock:
                self.fake.raw_requests.append((path, body))
            if path == LLAMA_TEMPLATE_PATH:
                self._send_json(200, {"prompt": json.dumps(body, sort_keys=True)})
            else:
                self._send_json(200, {"content": self.fake.raw_text, "tokens_evaluated": 21, "tokens_predicted": 9,
                                      "stop_type": "eos", "timings": {"prompt_ms": 10.0, "predicted_ms": 20.0}})
            return
        if path not in (OPENAI_PATH, OLLAMA_PATH):
            self._send_json(404, {"error": f"no route for POST {path}"})
            return
        self.fake._record(Received(path, {k.lower(): v for k, v in self.headers.items()}, body))
        try:
            action = self.fake._next_action(body)
        except Exception as exc:  # a broken responder should fail the test loudly, not hang it
            self.fake.errors.append(exc)
            action = Status(500, f"fake server responder raised {type(exc).__name__}: {exc}")
        self._perform(action, path, body)

    def _perform(self, action: Action, path: str, body: Any) -> None:
        fake = self.fake
        if isinstance(action, Stall):
            if fake._stop.wait(min(action.seconds, fake.max_stall_s)):
                self.close_connection = True
                return
            self._perform(action.then or fake.default, path, body)
        elif isinstance(action, Drop):
            self.close_connection = True  # nothing written: the client sees EOF
        elif isinstance(action, Status):
            msg = action.message or f"fake server error {action.code}"
            if path == OPENAI_PATH:
                err = {"error": {"message": msg, "type": "fake_error", "param": None, "code": None}}
            else:
                err = {"error": msg}
            self._send(action.code, json.dumps(err).encode(), "application/json", action.headers)
        elif isinstance(action, Trickle):
            self._trickle(action, path, body)
        elif isinstance(action, Raw):
            data = action.body if isinstance(action.body, (bytes, str)) else json.dumps(action.body)
            self._send(action.code, data.encode() if isinstance(data, str) else data, action.content_type)
        elif isinstance(action, Reply) and isinstance(body, dict) and body.get("stream") is True:
            self._stream(action, path, body)
        elif isinstance(action, Reply):
            out = _openai_body(action, body, fake) if path == OPENAI_PATH else _ollama_body(action, body)
            self._send_json(200, out)
        else:
            self._send_json(500, {"error": f"fake server: unknown action {action!r}"})

    def _stream(self, action: Reply, path: str, body: dict[str, Any]) -> None:
        """A reply to ``"stream": true``: server-sent events (OpenAI) or JSON lines (Ollama), each piece
        written and flushed on its own, the body ending when the connection closes (HTTP/1.0)."""
        pieces = _pieces(action.content or "")
        events: list[bytes] = []
        if path == OPENAI_PATH:
            full = _openai_body(action, body, self.fake)
            base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
                    "model": full["model"]}

            def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
                data = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}])
                return b"data: " + json.dumps(data).encode() + b"\n\n"

            events.append(event({"role": "assistant", "content": ""}))
            events += [event({"content": p}) for p in pieces]
            for i, call in enumerate(full["choices"][0]["message"].get("tool_calls") or []):
                args = call["function"]["arguments"]
                half = len(args) // 2
                events.append(event({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                     "function": {"name": call["function"]["name"], "arguments": ""}}]}))
                for part in (args[:half], args[half:]):
                    events.append(event({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
            events.append(event({}, full["choices"][0]["finish_reason"]))
            if (body.get("stream_options") or {}).get("include_usage") and "usage" in full:
                events.append(b"data: " + json.dumps(dict(base, choices=[], usage=full["usage"])).encode() + b"\n\n")
            events.append(b"data: [DONE]\n\n")
            ctype = "text/event-stream"
        else:
            full = _ollama_body(action, body)
            head = {"model": full["model"], "created_at": full["created_at"]}
            for p in pieces:
                events.append(json.dumps(dict(head, message={"role": "assistant", "content": p}, done=False)).encode() + b"\n")
            if full["message"].get("tool_calls"):
                events.append(json.dumps(dict(head, message={"role": "assistant", "content": "",
                                                            "tool_calls": full["message"]["tool_calls"]},
                                              done=False)).encode() + b"\n")
            last = {k: v for k, v in full.items() if k != "message"}
            events.append(json.dumps(dict(last, message={"role": "assistant", "content": ""})).encode() + b"\n")
            ctype = "application/x-ndjson"
        try:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for e in events:
                self.wfile.write(e)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _trickle(self, action: Trickle, path: str, body: Any) -> None:
        then = action.then or self.fake.default
        if isinstance(then, Reply):
            out = _openai_body(then, body, self.fake) if path == OPENAI_PATH else _ollama_body(then, body)
            data = json.dumps(out).encode()
        else:
            data = json.dumps({"error": "trickle"}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(0, len(data), max(1, action.chunk)):
                if self.fake._stop.wait(action.every_s):
                    break
                self.wfile.write(data[i:i + action.chunk])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up, as it should
        self.close_connection = True

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, json.dumps(obj).encode(), "application/json")

    def _send(self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered


FakeModelServer.handler_class = _Handler
