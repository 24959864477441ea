"""Ollama provider: the official `ollama` client on the native /api/chat endpoint.

The native endpoint (not Ollama's OpenAI-compatible one) is used because only it honours
`think` and reports `done_reason`, so a reply truncated at `num_predict` is recognisable.
Messages arrive in OpenAI chat format and are translated both ways here: Ollama wants tool
arguments as objects and tool results tagged with the tool's name rather than a call id.

Ollama parses tool calls on the server, so a model's invalid JSON never reaches us as a
string: depending on the Ollama version it is either returned as plain content or answered
with an HTTP 500 "error parsing tool call", which is mapped to MalformedReply (a model
failure that a retry at fixed temperature and seed would only repeat).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import httpx
import ollama
import pydantic

from ..config import is_loopback, redact_secrets, redact_url
from ..context import DEFAULT_CONTEXT_MAX, LADDER_MAX_TURNS, context_need
from .base import (ContextLimitError, FreshClientOnExpiry, MalformedReply, ProviderError, Reply,
                   RequestExpired, ToolCallOut, await_endpoint, guarded, hold_if_asked,
                   busy_seconds, call_within, calls_so_far, completion_cap, is_context_overflow, is_unparseable_output,
                   key_problem, parse_retry_after, request_bound, seconds_text, usage_count, wire_safe, with_retries)
from .endpoints import endpoint as shared_endpoint
from .endpoints import note_served

#: below this a reported context length is no window (the probe's own prompt takes some 300 tokens)
MIN_MODEL_CONTEXT = 512

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..suite.schema import ResolvedCase

DEFAULT_HOST = "http://localhost:11434"


def _backoff_sleep(seconds: float) -> None:
    # Looked up at call time so tests can monkeypatch time.sleep; with_retries' default is
    # bound when base.py is imported.
    time.sleep(seconds)


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _arguments_object(arguments: Any) -> dict[str, Any]:
    """OpenAI-style arguments (a JSON string) as the object Ollama requires.

    Arguments that are not a JSON object (a malformed call the episode already flagged)
    become {}: Ollama cannot carry them, and the tool result that follows says what went wrong.
    """
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def to_ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Translate OpenAI chat messages to Ollama's: object arguments, `tool_name` on tool results."""
    names_by_id: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        msg: dict[str, Any] = {"role": role, "content": content or ""}
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function") or {}
                name = fn.get("name", "")
                if tc.get("id"):
                    names_by_id[tc["id"]] = name
                calls.append({"function": {"name": name, "arguments": _arguments_object(fn.get("arguments"))}})
            msg["tool_calls"] = calls
        elif role == "tool":
            name = m.get("name") or names_by_id.get(m.get("tool_call_id") or "")
            if name:
                msg["tool_name"] = name
        out.append(msg)
    return out


class OllamaProvider(FreshClientOnExpiry):
    """Native Ollama chat with `tools=`; tool arguments are re-serialised to JSON strings.

    Every request carries `options.num_ctx`: Ollama's own default window (2,048 or 4,096 tokens)
    ignores what the model supports and cuts longer prompts from the front. The value is
    `context_window` from models.toml, else enough for the longest episode of the session
    (`context.context_need`), bounded by `context_window_max` and by the model's own maximum
    from /api/show. A loopback host is reached directly whatever the proxy variables say.
    """

    def __init__(self, config: "ModelConfig"):
        self.config = config
        self.host = config.single_url or DEFAULT_HOST
        self.endpoint = redact_url(self.host)
        self.direct = is_loopback(self.host)
        #: options.num_ctx of the last request, and where it came from
        self.context_window: int | None = config.context_window
        self.context_source = "models.toml context_window" if config.context_window else "not yet sized"
        self._model_max: object = None  # what /api/show reported as the context length, unchecked
        self._asked = False
        #: the session's longest episode in model turns (set by make_provider from the protocol)
        self.episode_turns = LADDER_MAX_TURNS
        self.context_hint = (f"raise context_window of models.{config.name} in models.toml (sent to Ollama as "
                             f"options.num_ctx)" + ("" if config.context_window else
                                                    " or its context_window_max"))
        # the Retry-After of the last error response, per thread: the response hook runs in the
        # thread that made the request, and many episodes share this provider (--agentfloor-concurrency)
        self._seen = threading.local()
        self._secret: str | None = None
        headers: dict[str, str] = {}
        if config.api_key_env:  # e.g. Ollama behind an authenticating proxy, or ollama.com
            value = os.environ.get(config.api_key_env)
            why = key_problem(value)
            if why:
                raise ProviderError(self.endpoint, f"environment variable {config.api_key_env} (api_key_env) {why}",
                                    transient=False)
            self._secret = value
            headers["Authorization"] = f"Bearer {value}"
        self._headers = headers
        self._start_client()
        self._shared = shared_endpoint(self.host)  # the process's Retry-After hold and health of this URL

    def _make_client(self) -> "ollama.Client":
        # no redirects followed: requests go to the configured endpoint only, never where a server points
        extra: dict[str, Any] = {"event_hooks": {"response": [self._note_response]}, "follow_redirects": False}
        if self.direct:
            extra["trust_env"] = False  # no proxy from the environment for a server on this machine
        return ollama.Client(host=self.host, timeout=self.config.timeout_s, headers=self._headers, **extra)

    def _note_response(self, response: httpx.Response) -> None:
        self._seen.retry_after = parse_retry_after(response.headers) if response.status_code >= 400 else None
        self._seen.response = response  # its body, read again when the client's typed model refuses it

    # -- context window -------------------------------------------------------------------------
    def num_ctx(self, case: "ResolvedCase | None" = None) -> int:
        """options.num_ctx for a request: configured, or sized for the session's longest episode."""
        cfg = self.config
        if cfg.context_window:
            return cfg.context_window
        # one value for the whole session (never per case): a different num_ctx reloads the model
        bound = cfg.context_window_max or DEFAULT_CONTEXT_MAX
        if not self._asked:
            self._asked = True
            self._model_max = self._ask_model_max()
        value = min(context_need(self.episode_turns, cfg.max_tokens), bound)
        source = f"sized for {self.episode_turns}-turn episodes, bound {bound}"
        reported = self._model_max
        if isinstance(reported, int) and not isinstance(reported, bool) and reported >= MIN_MODEL_CONTEXT:
            if reported < value:
                value, source = reported, "the model's maximum from /api/show (episodes want more)"
            else:
                source += f", model maximum {reported}"
        elif reported is not None:  # a bool, a float, a string, a window smaller than the probe's prompt
            source += f"; /api/show's context_length {repr(reported)[:40]} ignored (not a plausible window)"
        self.context_window, self.context_source = value, source
        return value

    def _ask_model_max(self) -> object:
        """What /api/show reports as the model's context length (`<arch>.context_length`), None if
        nothing; `num_ctx` checks it, since the server's word is not trusted to end every item in a
        context error."""
        try:
            with self._client_for_request() as (client, on_expire):
                info = call_within(lambda: client.show(self.config.model), request_bound(self.config.timeout_s),
                                   on_expire=on_expire)
            for key, value in (getattr(info, "modelinfo", None) or {}).items():
                if str(key).endswith(".context_length"):
                    return value
        except Exception:  # an older server, a proxy without the route: size without the maximum
            return None
        return None

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase | None" = None, json_reply: bool = False) -> Reply:
        """One chat turn; `json_reply` asks for Ollama's JSON mode (`format: "json"`)."""
        cfg = self.config
        options: dict[str, Any] = {"temperature": cfg.temperature, "num_predict": completion_cap(cfg, case),
                                   "num_ctx": self.num_ctx(case)}
        if cfg.seed is not None:
            options["seed"] = cfg.seed
        request: dict[str, Any] = {
            "model": cfg.model,
            "messages": wire_safe(to_ollama_messages(messages)),
            "tools": tools or None,
            "stream": False,
            "options": options,
        }
        if cfg.think is not None:
            request["think"] = cfg.think
        if json_reply:
            request["format"] = "json"
        first_id = calls_so_far(messages)
        return with_retries(lambda: self._attempt(request, first_id), retries=cfg.retries,
                            endpoint=self.endpoint, sleep=_backoff_sleep)

    #: False for a pool's replica, whose health the pool keeps
    breaker = True

    def _attempt(self, request: dict[str, Any], first_id: int) -> Reply:
        """One attempt, through the endpoint's breaker (paused after a run of failures: base.guarded)."""
        if not self.breaker:
            return self._once(request, first_id)
        return guarded(self._shared, self.endpoint, lambda: self._once(request, first_id))

    def close(self) -> None:
        self._client.close()

    # -- one attempt --------------------------------------------------------------------------
    def _chat(self, client: "ollama.Client", request: dict[str, Any]) -> Any:
        """client.chat in the request's own thread, its error carrying that response's Retry-After."""
        self._seen.retry_after = None
        self._seen.response = None
        try:
            return client.chat(**request)
        except ollama.ResponseError as exc:
            exc.agentfloor_retry_after = getattr(self._seen, "retry_after", None)  # type: ignore[attr-defined]
            raise
        except pydantic.ValidationError as exc:  # the response it refused, from this (the request's) thread
            raise _Refused(exc, getattr(self._seen, "response", None)) from None

    def _once(self, request: dict[str, Any], first_id: int) -> Reply:
        await_endpoint(self._shared, self.endpoint)
        start = time.perf_counter()
        bound = request_bound(self.config.timeout_s)
        if bound <= 0:
            late = self._error("no time left in the episode for a request", False)
            late.out_of_time = True
            raise late
        error: Exception | None = None
        try:
            with self._client_for_request() as (client, on_expire):
                resp = call_within(lambda: self._chat(client, request), bound, on_expire=on_expire)
        except RequestExpired:
            error = self._error(f"timed out after {seconds_text(bound)}s without a complete response", True)
        except ollama.ResponseError as exc:
            code = exc.status_code
            text = _short(str(exc.error), 300)
            if "error parsing tool call" in text or (code >= 500 and is_unparseable_output(text)):
                error = MalformedReply(self._redact(f"Ollama could not parse the model's tool call: {text}"))
            elif is_context_overflow(text):
                error = ContextLimitError(self.endpoint, self._redact(f"HTTP {code}: {text}"), hint=self.context_hint)
            else:
                error = self._error(f"HTTP {code}: {text}", code == 429 or code >= 500,
                                    getattr(exc, "agentfloor_retry_after", None), status=code)
        except httpx.TimeoutException:
            error = self._error(f"timed out after {seconds_text(bound)}s", True)
        except httpx.RemoteProtocolError:
            error = self._error("connection dropped by the server before a response", True)
        except (httpx.TransportError, ConnectionError) as exc:
            # The client turns httpx.ConnectError into a bare ConnectionError with a generic
            # "is Ollama running?" text; the real reason is on the suppressed context.
            root = _root_cause(exc)
            detail = "connection refused" if "refused" in str(root).lower() else \
                f"connection failed ({type(root).__name__}: {str(root)[:200]})"
            error = self._error(f"{detail} (is Ollama running at {self.endpoint}?)", True)
        except _Refused as refused:
            invalid = refused.error
            if any("tool_calls" in map(str, err.get("loc", ())) for err in invalid.errors()):
                error = MalformedReply(f"unreadable tool calls in the reply: {_first_error(invalid)}")
            else:
                resp, error = self._lenient(invalid, refused.response)
        except json.JSONDecodeError as exc:
            error = self._error(f"response is not JSON ({exc.msg})", False)
        except (RecursionError, ValueError) as exc:
            # A JSON body nested past the parser's limit or holding an integer past Python's digit
            # limit: in a chat reply only the model's output (its tool calls' arguments, which Ollama
            # sends as objects) can be that shape, so it is the model's unreadable call, as the same
            # arguments are under the OpenAI wire, where they arrive as a string.
            why = "nested too deep" if isinstance(exc, RecursionError) else "holding a number too long"
            error = MalformedReply(f"unreadable reply from {self.endpoint}: the model's output is {why} to read")
        except Exception as exc:  # a body of an odd shape, ...
            error = self._error(f"unreadable response ({type(exc).__name__}: {_short(str(exc))})", False)
        if error is not None:
            if isinstance(error, ProviderError):
                hold_if_asked(self._shared, error)
            # Raised outside the except block so the client's exception (which holds the
            # request, headers included) is not even reachable through __context__.
            raise error
        latency = time.perf_counter() - start
        note_served(self.endpoint)
        try:
            return self._parse(resp, latency, first_id)
        except (MalformedReply, ProviderError):
            raise
        except Exception as exc:
            error = self._error(f"unreadable response ({type(exc).__name__}: {_short(str(exc))})", False)
        raise error

    def _lenient(self, exc: pydantic.ValidationError, response: Any) -> tuple[Any, Exception | None]:
        """A 200 body the client's typed model refused, read again: an `error` it carries (Ollama reports
        a runner's crash that way) is the endpoint's error with its text; counts and durations that are
        no number (past an int64, a string) are left out and named in usage_invalid, so the model's
        answer is still read. Anything else stays an unreadable response."""
        try:
            data = response.json() if response is not None else None
        except Exception:  # noqa: BLE001 - the body was read already; anything odd is the unreadable case
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str) and "message" not in data:
            return None, self._error(f"HTTP {getattr(response, 'status_code', 200)}: {_short(data['error'], 300)}",
                                     True)
        bad = {str(err.get("loc", ("",))[0]) for err in exc.errors()}
        if isinstance(data, dict) and bad and bad <= _USAGE_FIELDS:
            kept = {k: v for k, v in data.items() if k not in bad}
            try:
                resp = ollama.ChatResponse(**kept)
            except Exception:  # noqa: BLE001 - still unreadable
                pass
            else:
                self._seen.usage_invalid = sorted(_USAGE_NAMES.get(b, b) for b in bad)
                return resp, None
        return None, self._error(f"unreadable response: {_first_error(exc)}", False)

    def _redact(self, text: str) -> str:
        """No API key and no password of the URL in what a server echoes back."""
        return redact_secrets(text, self.host, self._secret)

    def _error(self, cause: str, transient: bool, retry_after: float | None = None,
               status: int | None = None) -> ProviderError:
        return ProviderError(self.endpoint, self._redact(cause), transient=transient, retry_after=retry_after,
                             status=status)

    def _parse(self, resp: "ollama.ChatResponse", latency: float, first_id: int) -> Reply:
        message = resp.message
        calls: list[ToolCallOut] = []
        for i, tc in enumerate(message.tool_calls or []):
            fn = tc.function
            if not fn.name:
                raise MalformedReply(f"tool call {i} has no function name")
            cid = getattr(tc, "id", None)  # newer servers may send ids; the client model may drop them
            calls.append(ToolCallOut(id=cid if isinstance(cid, str) and cid else f"call_{first_id + i}",
                                     name=fn.name, arguments=json.dumps(dict(fn.arguments))))
        if resp.done_reason == "length":
            finish = "length"
        elif calls:
            finish = "tool_calls"
        else:
            finish = "stop"
        invalid: list[str] = list(getattr(self._seen, "usage_invalid", None) or [])
        self._seen.usage_invalid = None
        tokens_in = usage_count(resp.prompt_eval_count, "tokens_in", invalid)
        tokens_out = usage_count(resp.eval_count, "tokens_out", invalid)
        # prompt evaluation plus generation, in ns: the server's work, not the time queued
        durations = (resp.prompt_eval_duration, resp.eval_duration)
        busy = busy_seconds(*durations, scale=1e-9)
        if busy is None and durations != (None, None) and "busy_s" not in invalid:
            invalid.append("busy_s")
        return Reply(
            content=message.content or None,
            tool_calls=calls,
            finish_reason=finish,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=latency,
            busy_s=busy,
            usage_invalid=sorted(set(invalid)),
        )


class _Refused(Exception):
    """The client's typed model refused a 200 body: its error and the response it came in."""

    def __init__(self, error: pydantic.ValidationError, response: Any):
        super().__init__(str(error))
        self.error, self.response = error, response


#: the counters and durations of an Ollama reply: when one is no number, the reply is still the model's
_USAGE_FIELDS = frozenset({"prompt_eval_count", "eval_count", "prompt_eval_duration", "eval_duration",
                           "total_duration", "load_duration"})
_USAGE_NAMES = {"prompt_eval_count": "tokens_in", "eval_count": "tokens_out", "prompt_eval_duration": "busy_s",
                "eval_duration": "busy_s", "total_duration": "busy_s", "load_duration": "busy_s"}


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _first_error(exc: pydantic.ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg', '')}"[:200]
