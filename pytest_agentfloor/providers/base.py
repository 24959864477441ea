"""The one protocol every provider speaks, and the retry policy they share.

Messages are OpenAI-style chat dicts (role, content, tool_calls, tool_call_id); providers
translate to and from their own wire format. Tool-call arguments come back as the raw JSON
string the model produced, so the episode can tell a malformed call from a valid one.
"""

from __future__ import annotations

import contextlib
import contextvars
import email.utils
import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol, TypeVar

from ..config import redact_text
from .endpoints import HOLD_STATUSES, RETRY_AFTER_CAP_S, Endpoint, current_net, note_waited
from .endpoints import endpoint as shared_endpoint

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..kindspec import KindCase

T = TypeVar("T")


@dataclass
class ToolCallOut:
    id: str
    name: str
    arguments: str  # raw JSON text as produced by the model


@dataclass
class Reply:
    content: str | None
    tool_calls: list[ToolCallOut] = field(default_factory=list)
    finish_reason: str = "stop"  # "stop", "tool_calls" or "length" (truncated at the cap)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    #: the server's own processing time for this request (llama.cpp ``timings``, Ollama durations),
    #: without time spent queued behind other requests; None when the server does not report it
    busy_s: float | None = None
    reasoning_tokens: int | None = None  # where the server reports them (part of tokens_out)
    cost_usd: float | None = None  # the call's cost as its source recorded it (recorded outputs); None: priced
    #: the server refused to parse this output into tool calls, and the text is what the model wrote
    #: (asked again without tool parsing: providers/local.py); the server's message
    refusal: str | None = None
    #: usage figures the server sent that are no count (a float, a string, a number past any plausible
    #: one): read as 0 here, named in the record, and never charged (cost unknown)
    usage_invalid: list[str] = field(default_factory=list)


#: the largest token count one request can plausibly report (results.usage_invalid uses the same bound)
MAX_TOKENS_PER_REQUEST = 100_000_000
#: the longest processing time one request can plausibly report, in seconds
MAX_BUSY_S = 7 * 86400.0


def key_problem(value: str | None) -> str | None:
    """Why an API key read from the environment cannot be sent (None: it can). A line break or control
    character would be refused by the HTTP client on every request, or split a header."""
    if not value:
        return "is not set (it must hold the API key)"
    if any(ord(c) < 32 or ord(c) == 127 for c in value) or not value.isascii():
        return "holds a line break, a control or a non-ASCII character (a key is printable ASCII); check how it was set"
    return None


def usage_count(value: Any, name: str, invalid: list[str]) -> int:
    """A server-reported token count as an int, or 0 with `name` added to `invalid` when it is no count.

    Absent (None) is 0 and not invalid: the server reports no usage. Negative counts are kept as
    they are (and flagged by the record), so a re-grade sees what the server said."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value <= MAX_TOKENS_PER_REQUEST:
        return value
    invalid.append(name)
    return 0


def wire_safe(value: Any) -> Any:
    """`value` (a request's messages) with lone surrogates replaced by U+FFFD: a model's output may hold
    them (escaped in its JSON), and sent back in the history they make the request body unencodable,
    which would end the episode as the endpoint's failure although the server did nothing wrong."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
    if isinstance(value, list):
        return [wire_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: wire_safe(v) for k, v in value.items()}
    return value


def busy_seconds(*parts: object, scale: float) -> float | None:
    """Sum of server-reported durations (times ``scale`` to seconds), or None unless all are sane numbers."""
    vals = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    if len(vals) != len(parts) or any(v != v or v < 0 for v in vals):
        return None
    try:
        total = float(sum(vals)) * scale
    except OverflowError:  # an integer past any float
        return None
    return total if total <= MAX_BUSY_S else None  # a week of work for one request is no measurement


class ProviderError(Exception):
    """The endpoint failed; `transient` errors are retried, the rest end the episode at once.

    Every message passes through `redact_text`, so a URL with credentials never reaches a
    terminal, a JUnit file or a record through an error. `retry_after` is the server's
    Retry-After in seconds, when it sent one; `status` the HTTP status, when there was one.
    """

    def __init__(self, endpoint: str, cause: str, *, transient: bool, retry_after: float | None = None,
                 status: int | None = None):
        self.endpoint = redact_text(endpoint)
        self.cause = redact_text(cause)
        self.transient = transient
        self.retry_after = retry_after
        self.status = status
        self.out_of_time = False  # set when the episode's deadline, not the endpoint, ended the attempts
        self.held: str | None = None  # the endpoint a Retry-After put on hold (hold_if_asked)
        super().__init__(f"{self.endpoint}: {self.cause}")

    def annotated(self, note: str) -> "ProviderError":
        """The same error (same class and fields) with `note` added to its cause."""
        err = type(self).__new__(type(self))
        err.__dict__.update(self.__dict__)
        err.cause = f"{self.cause} ({note})"
        err.args = (f"{self.endpoint}: {err.cause}",)
        return err


class ContextLimitError(ProviderError):
    """The prompt did not fit the model's context window: a harness limit, not the model's
    failure and not a broken endpoint. `hint` names the setting to raise."""

    def __init__(self, endpoint: str, cause: str, *, hint: str):
        self.hint = hint
        super().__init__(endpoint, f"{cause}; {hint}", transient=False)


# Servers' words for a prompt longer than the context: llama.cpp ("exceeds the available context
# size"), vLLM ("maximum context length is"), OpenAI (context_length_exceeded), Ollama ("exceeds
# ... context length"), LM Studio / others ("context window", "context overflow"), Hugging Face TGI
# ("`inputs` tokens + `max_new_tokens` must be <= N"), Google's ("The input token count (N) exceeds
# the maximum number of tokens allowed").
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(length|size|window)[ _-]?(exceeded|overflow)"
    r"|inputs?`? tokens \+ `?max_new_tokens`? must be <="
    r"|input token count\b.{0,40}\bexceeds? the maximum"
    r"|exceeds? (the )?(available |maximum |model'?s? )?context"
    r"|maximum context length"
    r"|context (window|overflow|size) (is )?(exceeded|too small|full)"
    r"|prompt is too long|too many (prompt |input )?tokens"
    r"|input (length|tokens?) exceeds?|longer than the (model'?s? )?context"
    r"|too long for (the |this )?(model'?s? )?context",
    re.IGNORECASE)


def is_context_overflow(text: str) -> bool:
    """Whether an error text from a server says the request did not fit its context window."""
    return bool(_CONTEXT_OVERFLOW.search(text or ""))


# A server's own statement that the model's output did not parse as the tool-call format its chat
# template announced: llama.cpp's server ("The model produced output that does not match the
# expected peg-native format", "Failed to parse input at pos N", "failed to parse tool call"),
# Ollama ("error parsing tool call", on /api/chat and /v1). Only with a 5xx: it is the model's
# malformed call, on every provider.
_UNPARSEABLE_OUTPUT = re.compile(
    r"does not match the expected [\w-]+ format|failed to parse (tool call|input at)|error parsing tool call",
    re.IGNORECASE)


def is_unparseable_output(message: str) -> bool:
    """Whether a server's error text says it could not parse the model's output (its tool call)."""
    return bool(_UNPARSEABLE_OUTPUT.search(message or ""))


class MalformedReply(Exception):
    """The server answered, but its tool-call payload could not be read (a model failure)."""


class Provider(Protocol):
    config: "ModelConfig"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "KindCase | None") -> Reply: ...
    # case=None: a request outside an item (the session's probe, the judge)
    # the judge also passes json_reply=True (JSON mode where the API has one); openai, ollama and
    # local accept it

    def close(self) -> None: ...


def completion_cap(config: "ModelConfig", case: Any) -> int:
    """The model's completion cap, lowered where the case caps its call (an intent router: 10 tokens)."""
    cap = getattr(case, "max_tokens", None)
    return min(config.max_tokens, cap) if cap else config.max_tokens


def calls_so_far(messages: list[dict[str, Any]]) -> int:
    """Tool calls already in the conversation: generated call ids continue from here."""
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def parse_retry_after(headers: Mapping[str, str] | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (delta seconds or an HTTP date); None if absent or bad."""
    if not headers:
        return None
    low = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in low:
            value = float(low["retry-after-ms"]) / 1000.0
            return value if math.isfinite(value) and value >= 0 else None
        raw = low.get("retry-after", "").strip()
        if not raw:
            return None
        if re.fullmatch(r"\d+(\.\d+)?", raw):
            return float(raw)
        when = email.utils.parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - now())
    except (ValueError, TypeError, OverflowError, IndexError):
        return None


def backoff_delay(attempt: int, retry_after: float | None, *, base_s: float = 0.5,
                  rand: Callable[[], float] = random.random) -> float:
    """Exponential backoff with jitter (x0.5-1.0); a Retry-After (capped) is a floor with up to 10 % jitter on top."""
    delay = base_s * (2**attempt) * (0.5 + rand() / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_S) * (1.0 + rand() / 10))
    return delay


def with_retries(fn: Callable[[], T], *, retries: int, endpoint: str,
                 backoff_s: float = 0.5, sleep: Callable[[float], None] = time.sleep,
                 failover: Callable[[ProviderError], bool] | None = None) -> T:
    """Call `fn`, retrying transient ProviderErrors with jittered exponential backoff.

    The server's Retry-After is honoured up to RETRY_AFTER_CAP_S; a retry that would start after
    the episode's deadline (`time_left`) is not made: the last error stands. `failover(error)`
    (an endpoint pool) says whether another endpoint can take the request at once: then it is
    tried without a pause and without counting as a retry.
    """
    attempt = 0
    tries = 0
    while True:
        try:
            return fn()
        except ProviderError as exc:
            tries += 1
            if exc.transient and failover is not None and failover(exc):
                left = time_left()
                if left is None or left > 0:
                    continue
            delay = backoff_delay(attempt, exc.retry_after, base_s=backoff_s)
            left = time_left()
            too_late = left is not None and delay >= left
            capped = exc.retry_after is not None and exc.retry_after > RETRY_AFTER_CAP_S
            if not exc.transient or attempt >= retries or too_late or capped:
                why = ""
                if exc.transient and attempt < retries:
                    why = (f"; Retry-After {exc.retry_after:g}s is over the {RETRY_AFTER_CAP_S:g}s cap" if capped
                           else "; no time left in the episode for another attempt")
                if tries > 1 or why:
                    err = exc.annotated(f"after {tries} attempts{why}")
                    err.out_of_time = exc.out_of_time or (too_late and not capped)
                    raise err from None
                raise
            sleep(delay)
            if exc.retry_after is not None:  # paused because the endpoint asked for it
                note_waited(delay)
                held = getattr(exc, "held", None)  # a subclass may not run ProviderError.__init__
                if held is not None:
                    shared_endpoint(held).waited_for()
            attempt += 1


def await_endpoint(ep: Endpoint, name: str) -> None:
    """Before a request: wait out the endpoint's Retry-After hold (shared by every episode of the
    process), or end the episode as out of time when the hold outlasts its deadline."""
    left = time_left()
    if ep.wait_turn(left) is None:
        error = ProviderError(name, f"the endpoint asked every request to wait {ep.held_for():.1f}s more "
                              "(Retry-After), past the episode's deadline", transient=False)
        error.out_of_time = True
        raise error


def hold_if_asked(ep: Endpoint, error: ProviderError) -> None:
    """A 429 or 503 with Retry-After holds the endpoint for every episode of the process."""
    if error.retry_after is not None and error.status in HOLD_STATUSES:
        ep.hold(error.retry_after)
        error.held = ep.url  # with_retries' own pause covers this hold: the retry does not wait for it again


# -- a dead endpoint: paused and re-probed ----------------------------------------------------
#: consecutive failed requests (connection refused or dropped, timeouts, 5xx; not 429, not the
#: episode's own deadline, not the model's malformed output) after which one endpoint is down:
#: five is more than the attempts of one request with up to three retries, so one unlucky request
#: never takes an endpoint out, and a dead server costs five attempts, not every item's retries
BREAK_AFTER = 5


def counts_against(error: ProviderError) -> bool:
    """Whether a failure says the endpoint is unwell: transient and not a 429 (rate limit) or the deadline."""
    return error.transient and not error.out_of_time and error.status != 429


def guarded(ep: Endpoint, name: str, attempt: Callable[[], T], *, clock: Callable[[], float] = time.monotonic) -> T:
    """One attempt at an endpoint that is taken out after BREAK_AFTER failures in a row.

    While it is out, requests fail at once (not retried: an infrastructure error naming the
    endpoint, which --agentfloor-resume runs again later); after its pause (endpoints.COOL_DOWN_S,
    doubled after each failed trial) the next request is the re-probe (half-open trial), and
    its success puts the endpoint back for every episode. Pool replicas have their own (pool.py).
    """
    now = clock()
    with ep.lock:
        if ep.evicted_until is not None:
            if now >= ep.evicted_until and not ep.trial:
                ep.trial = True  # this request re-probes the endpoint
            else:
                wait = max(0.0, ep.evicted_until - now)
                error = ProviderError(name, f"endpoint down: {ep.failures} requests in a row failed "
                                      f"(last: {ep.last_cause or 'unknown'}); paused, probed again in "
                                      f"{wait:.0f}s; run --agentfloor-resume later for this item", transient=False)
                error.endpoint_down = True  # type: ignore[attr-defined]
                raise error
    try:
        out = attempt()
    except ProviderError as exc:
        if counts_against(exc):
            ep.last_cause = exc.cause[:200]
            ep.failed_once(clock(), evict_after=BREAK_AFTER)
        else:
            with ep.lock:
                ep.trial = False  # the trial said nothing either way: due again
        raise
    except MalformedReply:  # the endpoint answered; the model's output was unreadable
        ep.succeeded()
        raise
    ep.succeeded()
    return out


# -- hard wall-clock bounds ------------------------------------------------------------------
# The episode's deadline (time.monotonic) for every request made on its behalf; a context
# variable so it reaches providers through wrappers (recording) without changing signatures.
# It is stored with the episode's queued seconds when it was set: time queued since (a
# connection slot, rpm spacing, a Retry-After hold; endpoints.note_queued) moves it later, so
# waiting the harness or the endpoint imposes is never charged to the model's deadline.
_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "agentfloor_deadline", default=None)


def _queued_now() -> float:
    net = current_net()
    return 0.0 if net is None else net.queued_s


class deadline_in:  # noqa: N801 - used as a function: `with deadline_in(s):`
    """Requests made inside the block end (as timeouts) no later than `seconds` of unqueued time from now.

    A class, not a contextlib generator: the episode loop enters one per model request, and this
    costs a quarter of that."""

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float | None):
        self._seconds = seconds

    def __enter__(self) -> None:
        seconds = self._seconds
        self._token = _DEADLINE.set(None if seconds is None else (time.monotonic() + max(0.0, seconds), _queued_now()))

    def __exit__(self, *exc: object) -> None:
        _DEADLINE.reset(self._token)


def time_left() -> float | None:
    """Seconds until the current episode's deadline (never negative), or None without one."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    at, queued0 = deadline
    return max(0.0, at + (_queued_now() - queued0) - time.monotonic())


class FreshClientOnExpiry:
    """Mixin of the HTTP providers: a request that outlived its hard bound abandons its client and
    every later request uses a fresh one from ``_make_client``.

    Under concurrency one client serves many requests at once, so the abandoned client is closed
    (killing the expired request's socket) only when its other requests have returned, never
    under them."""

    _client: Any

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _start_client(self) -> None:
        self._client = self._make_client()
        self._client_lock = threading.Lock()
        self._in_flight: dict[int, int] = {}  # id(client) -> its requests not yet returned
        self._retired: set[int] = set()  # abandoned clients waiting for their last request

    @contextlib.contextmanager
    def _client_for_request(self) -> Iterator[tuple[Any, Callable[[], None]]]:
        """The client for one request, and the `on_expire` that abandons it (for call_within)."""
        with self._client_lock:
            client = self._client
            self._in_flight[id(client)] = self._in_flight.get(id(client), 0) + 1
        expired = False

        def on_expire() -> None:
            nonlocal expired
            expired = True
            fresh = self._make_client()
            with self._client_lock:
                if self._client is client:
                    self._client, fresh = fresh, None
                    self._retired.add(id(client))
            if fresh is not None:  # another request abandoned this client first
                fresh.close()
            self._release(client)  # the expired request counts as returned: its socket should die

        try:
            yield client, on_expire
        finally:
            if not expired:
                self._release(client)

    def _release(self, client: Any) -> None:
        with self._client_lock:
            left = self._in_flight.pop(id(client)) - 1
            if left:
                self._in_flight[id(client)] = left
            close = not left and id(client) in self._retired
            if close:
                self._retired.discard(id(client))
        if close:
            try:
                client.close()
            except Exception:
                pass


class RequestExpired(Exception):
    """A request outlived its hard wall-clock bound."""


def call_within(fn: Callable[[], T], seconds: float, *, on_expire: Callable[[], None] = lambda: None) -> T:
    """`fn()` in a helper thread, waited for at most `seconds` of wall-clock time.

    HTTP clients' timeouts bound each socket read, so a server that trickles a byte every
    few seconds can keep one request alive for ever; this bound holds whatever the server does.
    On expiry `on_expire` runs (close the client, so the abandoned thread's socket dies) and
    RequestExpired is raised; exceptions of `fn` are re-raised in the caller.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=target, name="agentfloor-request", daemon=True)
    thread.start()
    if not done.wait(max(0.0, seconds)):
        try:
            on_expire()
        finally:
            raise RequestExpired(f"no complete response within {seconds:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def seconds_text(seconds: float) -> str:
    """0.98 -> "1", 0.5 -> "0.5", 30 -> "30": a bound as a user set it, not to the microsecond."""
    return f"{seconds:.1f}".rstrip("0").rstrip(".")


def request_bound(timeout_s: float) -> float:
    """This request's hard bound: the model's timeout, or less if the episode ends sooner."""
    left = time_left()
    return timeout_s if left is None else min(timeout_s, left)


# -- proxies ---------------------------------------------------------------------------------
