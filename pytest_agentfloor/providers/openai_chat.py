"""OpenAI Chat Completions provider (the official `openai` client), for OpenAI and compatible servers.

Retries are ours, not the client's (`max_retries=0`), so every endpoint follows the same
policy and the error that ends an episode says what happened on the last attempt.

A 5xx whose message says the server could not parse the model's output into a tool call
(llama.cpp's `--jinja` parser, Ollama's /v1) is the model's malformed call (MalformedReply, with
the server's message), not an endpoint failure: it is neither retried nor held against the endpoint.

`config.think` is ignored here: Chat Completions has no portable on/off switch for reasoning.
Its reasoning knob is `config.reasoning_effort` (sent as `reasoning_effort` only when set,
since an unknown field can make a compatible server reject the request); reasoning tokens
are recorded when the usage reports `completion_tokens_details.reasoning_tokens`.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, cast

import openai
from openai.types.chat import ChatCompletion

from ..config import is_loopback, redact_secrets, redact_url
from ..context import LADDER_MAX_TURNS
from .base import (ContextLimitError, FreshClientOnExpiry, MalformedReply, ProviderError, Reply,
                   RequestExpired, ToolCallOut, await_endpoint, guarded, hold_if_asked,
                   busy_seconds, call_within, calls_so_far, completion_cap, is_context_overflow, is_unparseable_output,
                   key_problem, parse_retry_after, request_bound, seconds_text, usage_count, wire_safe, with_retries)
from .endpoints import endpoint as shared_endpoint
from .endpoints import note_served

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..suite.schema import ResolvedCase

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "not-needed"  # local servers ignore the key, but the client insists on one
_MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")
_TRANSIENT_STATUS = {429}  # plus every 5xx; other 4xx are configuration errors
#: openai >= 2 sends the API key only to requests that ask for bearer auth (`create` does so itself)
_AUTH_OPTIONS: dict[str, Any] = ({"security": {"bearer_auth": True}} if "security" in getattr(
    getattr(openai, "RequestOptions", None), "__annotations__", {}) else {})


def _backoff_sleep(seconds: float) -> None:
    # Looked up at call time so tests can monkeypatch time.sleep; with_retries' default is
    # bound when base.py is imported.
    time.sleep(seconds)


def read_api_key(env_name: str | None, endpoint: str) -> str | None:
    """The key named by `api_key_env`; a missing variable is a configuration error, not a retry."""
    if not env_name:
        return None
    value = os.environ.get(env_name)
    why = key_problem(value)
    if why:
        raise ProviderError(endpoint, f"environment variable {env_name} (api_key_env) {why}", transient=False)
    return value


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _connection_cause(exc: BaseException) -> str:
    root = _root_cause(exc)
    text = f"{type(root).__name__}: {root}"
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "disconnected" in low or "remoteprotocolerror" in low or "reset" in low:
        return "connection dropped by the server before a response"
    if "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low:
        return "host name could not be resolved"
    return f"connection failed ({text[:200]})"


class OpenAIProvider(FreshClientOnExpiry):
    """Chat Completions with `tools=` (tool_choice auto); arguments come back as raw strings.

    A loopback base_url (localhost, 127.0.0.0/8, ::1) is reached directly whatever HTTP(S)_PROXY
    or ALL_PROXY say; any other follows the user's proxy settings, as the client does by default.
    """

    def __init__(self, config: "ModelConfig"):
        self.config = config
        self.base_url = config.single_url or DEFAULT_BASE_URL
        self.endpoint = redact_url(self.base_url)
        self._cap_field = "max_completion_tokens" if self.endpoint.startswith(DEFAULT_BASE_URL) else "max_tokens"
        self._secret = read_api_key(config.api_key_env, self.endpoint)
        self.episode_turns = LADDER_MAX_TURNS  # the session's longest episode (set by make_provider)
        self.context_source = "models.toml context_window" if config.context_window else "set by the server"
        self.context_hint = (f"the prompt does not fit the server's context window: raise it on the server "
                             f"(llama-server --ctx-size, vLLM --max-model-len) and set context_window of "
                             f"models.{config.name} in models.toml to match")
        self.direct = is_loopback(self.base_url)
        self._start_client()
        self._shared = shared_endpoint(self.base_url)  # the process's Retry-After hold and health of this URL

    @property
    def context_window(self) -> int | None:
        """The context window in force, when known (models.toml); the server decides otherwise."""
        return self.config.context_window

    def _make_client(self) -> "openai.OpenAI":
        # trust_env=False for loopback: no proxy from the environment for a server on this machine; no
        # redirects followed: requests go to the configured endpoint only, never where a server points
        http_client = (openai.DefaultHttpxClient(follow_redirects=False, trust_env=False) if self.direct
                       else openai.DefaultHttpxClient(follow_redirects=False))
        return openai.OpenAI(
            base_url=self.base_url,
            api_key=self._secret or NO_KEY,
            max_retries=0,
            timeout=self.config.timeout_s,
            http_client=http_client,
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase | None" = None, json_reply: bool = False) -> Reply:
        """One completion; `json_reply` asks for JSON mode (`response_format` json_object)."""
        cfg = self.config
        request: dict[str, Any] = {
            "model": cfg.model,
            "messages": wire_safe([{k: m[k] for k in _MESSAGE_KEYS if k in m} for m in messages]),
            "temperature": cfg.temperature,
            # OpenAI's own API rejects max_tokens for its reasoning models; compatible servers
            # (llama.cpp, vLLM, LiteLLM, Ollama /v1) all read max_tokens
            self._cap_field: completion_cap(cfg, case),
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.reasoning_effort is not None:
            request["reasoning_effort"] = cfg.reasoning_effort
        if json_reply:
            request["response_format"] = {"type": "json_object"}
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
                resp = call_within(lambda: _post_completion(client, request, bound), bound, on_expire=on_expire)
        except RequestExpired:
            error = self._error(f"timed out after {seconds_text(bound)}s without a complete response", True)
        except openai.APITimeoutError:
            error = self._error(f"timed out after {seconds_text(bound)}s", True)
        except openai.APIConnectionError as exc:
            error = self._error(_connection_cause(exc), True)
        except openai.APIStatusError as exc:
            code = exc.status_code
            message = _status_message(exc)
            if code >= 500 and is_unparseable_output(message):  # the server says the model's call is unreadable
                error = MalformedReply(self._redact(
                    f"the server could not parse the model's output as a tool call: HTTP {code}: {message}"))
                error.server_refused = True  # type: ignore[attr-defined]
            elif 300 <= code < 400:  # not followed: only the configured endpoint is ever asked
                where = exc.response.headers.get("location", "") if exc.response is not None else ""
                error = self._error(f"HTTP {code}: a redirect{' to ' + _short(where, 120) if where else ''}, not "
                                    "followed (requests go only to the configured base_url)", False, status=code)
            elif is_context_overflow(message):
                error = ContextLimitError(self.endpoint, self._redact(f"HTTP {code}: {message}"),
                                          hint=self.context_hint)
            else:
                transient = code in _TRANSIENT_STATUS or code >= 500
                error = self._error(f"HTTP {code}: {message}", transient,
                                    retry_after=parse_retry_after(getattr(exc.response, "headers", None)),
                                    status=code)
        except openai.APIResponseValidationError as exc:
            error = self._error(f"unreadable response: {_short(str(exc))}", False)
        except Exception as exc:  # empty or garbage body, nesting too deep for the JSON parser, ...
            error = self._error(f"unreadable response ({type(exc).__name__}: {_short(str(exc))})", False)
        if error is not None:
            if isinstance(error, ProviderError):
                hold_if_asked(self._shared, error)
            else:
                note_served(self.endpoint)  # the endpoint answered: the failure is the model's
            # Raised outside the except block so the client's exception (which holds the
            # request, headers included) is not even reachable through __context__.
            raise error
        latency = time.perf_counter() - start
        note_served(self.endpoint)
        try:
            return self._parse(resp, latency, first_id)
        except (MalformedReply, ProviderError):
            raise
        except Exception as exc:  # a body of an unexpected shape
            error = self._error(f"unreadable response ({type(exc).__name__}: {_short(str(exc))})", False)
        raise error

    def _redact(self, text: str) -> str:
        """No API key and no password of the URL in what a server echoes back."""
        return redact_secrets(text, self.base_url, self._secret)

    def _error(self, cause: str, transient: bool, retry_after: float | None = None,
               status: int | None = None) -> ProviderError:
        return ProviderError(self.endpoint, self._redact(cause), transient=transient, retry_after=retry_after,
                             status=status)

    def _parse(self, resp: Any, latency: float, first_id: int) -> Reply:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise self._error(f"response has no choices: {str(resp)[:200]}", False)
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise self._error("response choice has no message", False)
        content = _text_of(getattr(message, "content", None))
        if content is not None and not isinstance(content, str):
            raise MalformedReply(f"message content is {type(content).__name__}, not a string")
        calls: list[ToolCallOut] = []
        raw_calls = getattr(message, "tool_calls", None) or []
        if not isinstance(raw_calls, list):
            raise MalformedReply(f"tool_calls is {type(raw_calls).__name__}, not a list")
        for i, tc in enumerate(raw_calls):
            fn = _field(tc, "function")
            name = _field(fn, "name")
            args = _field(fn, "arguments")
            if not isinstance(name, str) or not name:
                raise MalformedReply(f"tool call {i} has no function name")
            if not isinstance(args, str):
                raise MalformedReply(f"tool call {i} ({name}) has arguments of type "
                                     f"{type(args).__name__}, not a JSON string")
            cid = _field(tc, "id")
            calls.append(ToolCallOut(id=cid if isinstance(cid, str) and cid else f"call_{first_id + i}",
                                     name=name, arguments=args))
        reason = getattr(choice, "finish_reason", None)
        if reason == "length":
            finish = "length"
        elif calls or reason in ("tool_calls", "function_call"):
            finish = "tool_calls"  # some servers say "stop" even when they return calls
        else:
            finish = "stop"
        usage = getattr(resp, "usage", None)
        invalid: list[str] = []
        if usage is not None and not hasattr(usage, "prompt_tokens") and not isinstance(usage, dict):
            invalid.append("usage")  # e.g. a list: no count can be read
        tokens_in = usage_count(_field(usage, "prompt_tokens"), "tokens_in", invalid)
        tokens_out = usage_count(_field(usage, "completion_tokens"), "tokens_out", invalid)
        timings = getattr(resp, "timings", None)  # llama.cpp's server: its processing time, queueing excluded
        busy = busy_seconds(timings.get("prompt_ms"), timings.get("predicted_ms"), scale=1e-3) \
            if isinstance(timings, dict) else None
        if isinstance(timings, dict) and busy is None and (timings.get("prompt_ms"), timings.get("predicted_ms")) \
                != (None, None):
            invalid.append("busy_s")
        return Reply(
            content=content,
            tool_calls=calls,
            finish_reason=finish,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=latency,
            busy_s=busy,
            reasoning_tokens=_reasoning_tokens(usage),
            usage_invalid=invalid,
        )


def _post_completion(client: "openai.OpenAI", request: dict[str, Any], timeout: float) -> ChatCompletion:
    """POST /chat/completions through the client, without `create`'s walk of the body against its
    typed parameters: our body is plain JSON already, so the walk returns it unchanged, yet it cost
    this process about a third of its CPU per request (0.5-2.7 ms, growing with the tools and turns). Auth, headers,
    timeouts, status errors and the response model are the client's own, as with `create`."""
    return client.post("/chat/completions", body=request, cast_to=ChatCompletion,
                       options=cast("openai.RequestOptions", {"timeout": timeout, **_AUTH_OPTIONS}))


def _reasoning_tokens(usage: Any) -> int | None:
    value = _field(_field(usage, "completion_tokens_details"), "reasoning_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _field(obj: Any, key: str) -> Any:
    """Attribute or key: the client builds lenient models, so odd payloads may stay plain dicts."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


def _text_of(content: Any) -> Any:
    """The message's text: a string, or the text parts of a list of content parts (servers that answer
    in the request's part format, e.g. [{"type": "text", "text": ...}]) joined; anything else as it is."""
    if isinstance(content, list) and content and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type", "text") in ("text", "output_text")]
        if texts and all(isinstance(t, str) for t in texts):
            return "".join(texts)
    return content


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _detail(detail: Any) -> Any:
    """FastAPI's error body, ``{"detail": "text"}`` or ``{"detail": [{"loc": [...], "msg": "text"}, ...]}``
    (servers built on it: TGI's router, many proxies), as the text it holds."""
    if isinstance(detail, list):
        parts = [d.get("msg") for d in detail[:5] if isinstance(d, dict)]
        return "; ".join(p for p in parts if isinstance(p, str)) or None
    return detail


def _body_message(body: Any, depth: int = 0) -> str | None:
    """The message an error body holds, in the shapes servers use: OpenAI's {"error": {"message", "code"}}
    (the client hands over its inner object), {"message": ...}, {"error": "text"} (TGI, Ollama), FastAPI's
    {"detail": ...}, a bare string, or a list of such objects (Google's). An error code that its text
    does not repeat (e.g. "context_length_exceeded") is appended in brackets."""
    if depth > 4:
        return None
    if isinstance(body, str):
        return body or None
    if isinstance(body, list):
        return _body_message(body[0], depth + 1) if body else None
    if not isinstance(body, dict):
        return None
    text = None
    for key in ("message", "error", "detail"):
        value = _detail(body.get(key)) if key == "detail" else body.get(key)
        text = _body_message(value, depth + 1)
        if text:
            break
    code = body.get("code")
    if isinstance(code, str) and code and (text is None or code not in text):
        text = f"{text} ({code})" if text else code
    return text


def _status_message(exc: "openai.APIStatusError") -> str:
    try:
        msg: Any = _body_message(exc.body)
        if not msg:
            msg = exc.message or exc.response.reason_phrase
        return " ".join(str(msg).split())[:300]
    except Exception:  # an error body too odd to read (e.g. nested beyond the recursion limit)
        return str(getattr(exc.response, "reason_phrase", "") or "error")
