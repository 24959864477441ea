"""The tool-calling probe: can this endpoint make a *native* tool call at all?

AgentFloor admits a model to the benchmark only when one request with one simple tool comes
back with a call in the API's tool-call field. Everything else is excluded by design, with the
reason named:

- ``tool_capable``: the reply carries a native tool call, well-formed or not: a tool-call
  payload the provider cannot read (Ollama ``arguments`` as a string, OpenAI ``arguments`` as an
  object, a server's own "could not parse the model's tool call" 5xx) is a reply whose call is
  malformed (MalformedReply). The model is admitted, and its episodes read the same reply the
  same way: a malformed call, the model's failure (F2), with the server's words in the record;
- ``text_leaked``: no native call, but the text holds what reads as a call (JSON with the tool's
  name, ``<tool_call>`` tags, ``lookup_record(...)``): the model tried, the serving stack did not
  turn it into a call, and text is never parsed into calls;
- ``no_tools``: plain text, no call anywhere;
- ``error``: the request failed (ProviderError: a dead endpoint, a wrong key, an unknown model),
  or anything else went wrong.

Only ``text_leaked`` and ``no_tools`` are the paper's exclusions (the model's items are skipped).
An ``error`` says nothing about the model: it is a dead endpoint, a wrong key or an unknown model
name, so the model's items become pytest errors naming the endpoint and the cause (see
:func:`endpoint_hint`), and the run exits non-zero.

The probe gates only items whose requests carry tools (:func:`gate`): a call-site request sends
none, so a model served without a tool-call parser (seed 001's small models) still answers its
call sites, whatever the probe said; a dead endpoint shows there as each item's own infra error.

`classify` is the pure decision (a Reply or an exception in, a ProbeResult out); `probe` only
sends the one request and hands the outcome to it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from .episode import SYSTEM_PROMPTS
from .providers.base import MalformedReply, Provider, ProviderError, Reply
from .render import safe_text
from .sandbox import menu

Classification = Literal["tool_capable", "text_leaked", "no_tools", "error"]
CLASSIFICATIONS: tuple[str, ...] = ("tool_capable", "text_leaked", "no_tools", "error")

PROBE_TOOL = "lookup_record"
PROBE_RECORD = "CUS-4417"
PROBE_PROMPT = (f"Look up customer record {PROBE_RECORD} and tell me which city the customer is in. "
                "Use the tool; do not guess.")


@dataclass(frozen=True)
class ProbeResult:
    classification: Classification
    detail: str
    latency_s: float = 0.0

    @property
    def admitted(self) -> bool:
        """Only tool-capable models take part in the benchmark."""
        return self.classification == "tool_capable"


Gate = Literal["skip", "error"]


def sends_tools(kind: Any) -> bool:
    """Whether a case kind's requests carry tools (kinds say so with ``sends_tools``; default yes)."""
    return bool(getattr(kind, "sends_tools", True))


def gate(classification: str | None, kind: Any) -> Gate | None:
    """What the probe's verdict does to one item of `kind`: skip it, fail it in setup, or nothing.

    Items without tools (call sites) are never gated: the probe measured a capability they do not use.
    """
    if classification is None or not sends_tools(kind):
        return None
    if classification in ("text_leaked", "no_tools"):
        return "skip"
    return "error" if classification == "error" else None


def probe_messages() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPTS["default"]},
            {"role": "user", "content": PROBE_PROMPT}]


def probe_tools() -> list[dict[str, Any]]:
    return menu((PROBE_TOOL,))


def _leak_pattern(tool: str) -> re.Pattern[str]:
    name = re.escape(tool)
    return re.compile(
        r"<\s*(?:/\s*)?tool_call\s*>"                              # Hermes/Qwen tags (no \s*\s* backtracking)
        r"|<\|?\s*(?:tool_call|python_tag|function_call)"          # other families' call markers
        r"|\[TOOL_CALLS\]"                                         # Mistral
        r"|<function(?:=|\s*>|\s+name\s*=)"                        # <function=name> / <function name=...>
        rf"|[\"'](?:name|function|tool|tool_name)[\"']\s*:\s*[\"']{name}[\"']"  # {"name": "lookup_record"
        rf"|\b{name}\s*\("                                          # lookup_record(record_id=...)
        r"|[\"']record_id[\"']\s*:",                               # the argument object on its own
        re.IGNORECASE,
    )


def _short(text: str | None, limit: int = 160) -> str:
    """Model or server text, one line, shortened and with its control characters made visible."""
    flat = safe_text(" ".join((text or "").split()), multiline=False)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_HTTP = re.compile(r"\bHTTP (\d{3})\b")


def endpoint_hint(cause: str, *, model: str = "", name: str = "", api_key_env: str | None = None) -> str:
    """What to check for an endpoint failure, from the cause text of a ProviderError ('' if nothing useful)."""
    low = cause.lower()
    m = _HTTP.search(cause)
    code = int(m.group(1)) if m else None
    where = f"models.{name}." if name else ""
    if code in (401, 403):
        if api_key_env:
            return f"the server refused the API key: check environment variable {api_key_env} ({where}api_key_env)"
        return f"the server wants an API key: set {where}api_key_env to the name of the variable holding it"
    if code == 404:
        return f"the server does not know model {model!r} (or {where}base_url is not the API root): check {where}model"
    if code is not None and code >= 500:
        return "the server failed (HTTP 5xx): check its logs; is the model loaded?"
    if "refused" in low:
        return f"nothing listens there: is the server running, and is {where}base_url right?"
    if "timed out" in low:
        return f"no answer in time: is the server overloaded or still loading? ({where}timeout_s raises the limit)"
    if "could not be resolved" in low:
        return f"the host name of {where}base_url does not resolve"
    return ""


def classify(reply: Reply | None, error: BaseException | None = None, *,
             tool: str = PROBE_TOOL, latency_s: float | None = None) -> ProbeResult:
    """The probe's verdict for one reply (or the exception that came instead of one)."""
    if error is not None:
        if isinstance(error, MalformedReply):  # the endpoint answered: the model measured, not excluded
            return ProbeResult("tool_capable", f"native call with a malformed payload ({_short(str(error), 300)}); "
                               "its episodes grade such a reply as a malformed call (F2)", latency_s or 0.0)
        if isinstance(error, ProviderError):
            kind = "endpoint error"
        else:
            kind = f"unexpected {type(error).__name__}"
        return ProbeResult("error", f"{kind}: {_short(str(error), 300)}", latency_s or 0.0)
    if reply is None:
        return ProbeResult("error", "no reply and no error", latency_s or 0.0)
    lat = reply.latency_s if latency_s is None else latency_s
    if reply.tool_calls:
        names = [_short(c.name, 80) for c in reply.tool_calls]
        first = reply.tool_calls[0]
        notes = []
        if any(n != tool for n in names):
            notes.append(f"called {', '.join(n for n in names if n != tool)} instead of / besides {tool}")
        detail = f"native call {names[0]}({_short(first.arguments, 120)})"
        if len(names) > 1:
            detail += f" and {len(names) - 1} more"
        if notes:
            detail += "; " + "; ".join(notes)
        return ProbeResult("tool_capable", detail, lat)
    text = reply.content or ""
    cut = " (cut off at the completion cap)" if reply.finish_reason == "length" else ""
    if _leak_pattern(tool).search(text):
        return ProbeResult("text_leaked", f"call written in the text, not in tool_calls{cut}: {_short(text)!r}", lat)
    if not text.strip():
        return ProbeResult("no_tools", f"empty reply without a tool call{cut}", lat)
    return ProbeResult("no_tools", f"plain text without a tool call{cut}: {_short(text)!r}", lat)


def context_window(provider: Provider) -> tuple[int | None, str]:
    """The provider's context window in force (tokens, or None when the server decides) and where it came from.

    Read after the probe request, when an Ollama provider has sized its num_ctx.
    """
    window = getattr(provider, "context_window", None)
    source = getattr(provider, "context_source", "")
    window = window if isinstance(window, int) and not isinstance(window, bool) else None
    if window is None:
        return None, "context window set by the server"
    return window, f"context window {window} tokens" + (f" ({source})" if source else "")


def probe(provider: Provider) -> ProbeResult:
    """Send the probe request once and classify the outcome; never raises.

    An endpoint failure's detail ends with what to check (key variable, model name, server).
    """
    start = time.perf_counter()
    try:
        reply = provider.complete(probe_messages(), probe_tools(), case=None)
    except Exception as exc:  # every failure is a classification, not a crash
        result = classify(None, exc, latency_s=time.perf_counter() - start)
        cfg = getattr(provider, "config", None)
        if isinstance(exc, ProviderError) and cfg is not None:
            hint = endpoint_hint(exc.cause, model=cfg.model, name=cfg.name, api_key_env=cfg.api_key_env)
            if hint:
                result = ProbeResult(result.classification, f"{result.detail} -- {hint}", result.latency_s)
        return result
    return classify(reply, None)


def pool_of(provider: Any) -> Any:
    """The endpoint pool behind `provider` (through the recording and limits wrappers), or None."""
    seen = 0
    while provider is not None and seen < 5:
        if getattr(provider, "members", None) is not None and hasattr(provider, "choose"):
            return provider
        provider, seen = getattr(provider, "inner", None), seen + 1
    return None


def combine(results: list[tuple[str, ProbeResult]]) -> tuple[ProbeResult, list[str]]:
    """A pool's verdict from each replica's (endpoint, result), and a warning per replica that failed.

    The model is admitted when one replica is tool-capable: a dead replica (``error``) is a
    warning, not a failure, while another works. Replicas of one model that disagree on tool
    calling are a misconfiguration, warned about as well. With no working replica the verdict is
    the first non-error class (the model's own) or else the error, naming every endpoint.
    """
    ok = [(url, r) for url, r in results if r.admitted]
    warnings = [f"{url}: {r.classification} ({r.detail})" for url, r in results if not r.admitted]
    if ok:
        url, first = ok[0]
        return ProbeResult(first.classification, f"{first.detail} [{len(ok)} of {len(results)} endpoints answer]",
                           first.latency_s), warnings
    model_says = [(url, r) for url, r in results if r.classification != "error"]
    if model_says:
        url, first = model_says[0]
        return ProbeResult(first.classification, f"{first.detail} [{url}]", first.latency_s), warnings
    detail = "; ".join(f"{url}: {r.detail}" for url, r in results)
    return ProbeResult("error", f"every endpoint of the pool failed: {detail}", results[0][1].latency_s), []
