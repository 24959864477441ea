"""The cause-first headline of a failed run, shared by pytest's failure message and the viewer.

The first unmet obligation often names a symptom ("Q: no final answer") when the cause is a
harness limit or a failure mode ("turn budget of 4 exhausted (F4)"). The headline puts the
cause first, then the unmet obligations, short enough that pytest's one-line summaries of
different failures differ at 80 columns. Pure functions over plain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..render import safe_text

#: how long a tool argument or error may be in a headline before it is cut with an ellipsis
ARG_CHARS = 40


def cut(text: Any, limit: int = ARG_CHARS) -> str:
    """`text` on one line, at most `limit` characters, cut with an ellipsis."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: max(limit - 1, 1)] + "…"


def _limit_cause(termination: str | None, limits: Sequence[Any], turns: int) -> str | None:
    turn_budget, call_limit, token_budget = (list(limits) + [None, None, None])[:3]
    return {
        "turn_budget": f"turn budget exhausted ({turns} of {turn_budget} turns)" if turn_budget else
                       "turn budget exhausted",
        "call_limit": f"call limit of {call_limit} reached" if call_limit else "call limit reached",
        "token_budget": f"token budget of {token_budget} exceeded" if token_budget else "token budget exceeded",
        "truncated": "reply truncated at the completion cap",
        "timeout": "episode timed out",
        "context_limit": "prompt outgrew the context window",
        "infeasible": "stopped: the work left exceeds the call limit",
    }.get(termination or "")


def _call_text(call: dict[str, Any]) -> str:
    return f"{cut(call.get('name', '?'), 24)}({cut(call.get('raw_arguments', ''), ARG_CHARS)})"


def _mode_cause(mode: str | None, calls: Sequence[dict[str, Any]]) -> str | None:
    if mode == "F1":
        bad = next((c for c in calls if c.get("hallucinated")), None)
        return f"hallucinated tool {cut(bad.get('name', '?'), 24)}" if bad else "hallucinated tool"
    if mode == "F2":
        bad = next((c for c in calls if c.get("malformed")), None)
        return f"malformed call {_call_text(bad)}" if bad else "malformed call"
    return {"F5": "resigned after working", "F5b": "planned without executing", "F6": "wrong tool",
            "F7": "partial completion"}.get(mode or "")


def headline(*, failure_mode: str | None, unmet: Sequence[str], first_unmet_text: str | None,
             termination: str | None, limits: Sequence[Any], turns: int,
             calls: Sequence[dict[str, Any]]) -> str:
    """One line: the cause (harness limit or failure mode) first, then the unmet obligations.

    ``unmet``: codes of the unmet obligations in order; ``first_unmet_text``: the first one
    described ("Q (answer): expected …; observed …"); ``calls``: the trajectory's calls as dicts.
    """
    codes = ", ".join(unmet) or "?"
    mode = f" ({failure_mode})" if failure_mode else ""
    limit, by_mode = _limit_cause(termination, limits, turns), _mode_cause(failure_mode, calls)
    if failure_mode in ("F1", "F2") and by_mode:
        # a hallucinated or malformed call explains a failure better than the limit it ran into after
        cause: str | None = f"{by_mode}{mode}" + (f"; {limit}" if limit else "")
    else:
        cause = f"{limit or by_mode}{mode}" if (limit or by_mode) else None
    if cause:
        return safe_text(f"{cause} — unmet: {codes}", multiline=False)
    first = cut(first_unmet_text, 100) if first_unmet_text else codes
    rest = list(unmet[1:])
    return safe_text(f"unmet {first}{mode}" + (f" — also unmet: {', '.join(rest)}" if rest else ""),
                     multiline=False)


def failed_calls(calls: Sequence[dict[str, Any]], limit: int = 8) -> list[str]:
    """One line per call whose result was an error: the call (arguments cut) and its error message."""
    lines = []
    bad = [c for c in calls if (c.get("result") or {}).get("status") not in (None, "ok")]
    for c in bad[:limit]:
        r = c.get("result") or {}
        kind = r.get("error_type") or r.get("status")
        lines.append(safe_text(f"turn {c.get('turn', '?')}: {_call_text(c)} -> {kind}: "
                               f"{cut(r.get('message', ''), 120)}", multiline=False))
    if len(bad) > limit:
        lines.append(f"... {len(bad) - limit} more failed call(s)")
    return lines


def record_headline(record: dict[str, Any]) -> str:
    """The headline of a stored run record (runs.jsonl), for the viewer and compare."""
    if record.get("infra_error"):
        return safe_text(f"infrastructure error: {cut(record.get('error') or 'endpoint failed', 100)}",
                         multiline=False)
    raw_traj = record.get("trajectory")
    traj: dict[str, Any] = raw_traj if isinstance(raw_traj, dict) else {}
    calls = [c for t in traj.get("turns") or [] if isinstance(t, dict) for c in t.get("calls") or []
             if isinstance(c, dict)]
    verdicts = record.get("verdicts")
    first_text = None
    if isinstance(verdicts, list):
        failed = [v for v in verdicts if isinstance(v, dict) and not v.get("ok")]
        unmet = [str(v.get("code")) for v in failed]
        if failed:
            v = failed[0]
            first_text = f"{v.get('code')}: expected {v.get('expected', '')}; observed {v.get('observed', '')}"
    else:
        raw_obl = record.get("obligations")
        obl: dict[str, Any] = raw_obl if isinstance(raw_obl, dict) else {}
        unmet = [k for k, ok in obl.items() if not ok]
    if not unmet and record.get("first_unmet"):
        unmet = [str(record["first_unmet"])]
    return headline(failure_mode=record.get("failure_mode"), unmet=unmet, first_unmet_text=first_text,
                    termination=record.get("termination"),
                    limits=[traj.get("turn_budget"), traj.get("call_limit"), traj.get("token_budget")],
                    turns=int(record.get("turns") or 0), calls=calls)
