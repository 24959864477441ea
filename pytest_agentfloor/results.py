"""Run records: what one item leaves behind, for reports, resume and re-grading.

Each record is one JSON line appended to runs.jsonl with a single write under an exclusive
lock, so xdist workers never interleave and a reader never sees half a record as whole.
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import __version__
from .config import ModelConfig
from .grading import Grade
from .memo import PerObject
from .suite.schema import ResolvedCase
from .trajectory import Trajectory

RECORD_SCHEMA = 1
#: longest text stored for one message field (content, arguments, answer, error), in UTF-8 bytes
MAX_TEXT_BYTES = 64 * 1024
#: longest record (bytes of JSON): beyond it the transcript's messages, then later turns, are dropped
MAX_RECORD_BYTES = 1024 * 1024
#: the semantic-check counts (judge.assess.Assessment.scalars); records from before the judge lack them
JUDGE_FIELDS: tuple[str, ...] = (
    "judge_model", "judge_verdicts", "keyword_verdicts", "judge_fails", "judge_cached", "judge_requests", "judge_error",
    "judge_cost_usd", "judge_latency_s",
)
#: fields a record may lack (written by older versions, or by a later helper): read with .get()
OPTIONAL_PROPERTY_FIELDS: tuple[str, ...] = (
    "busy_s", "calls_malformed", "calls_hallucinated", "calls_repeated", "turns_leaked", "usage_invalid",
    "endpoint_wait_s", "queue_s", *JUDGE_FIELDS,
    "case_hash",  # the case version: the gate and compare refuse to pair runs of different ones
)
#: terminations that are the harness's or the endpoint's doing, never the model's: infrastructure errors
INFRA_TERMINATIONS = frozenset({"provider_error", "timeout"})
#: the scalar fields that travel to the controller on each report, and as JUnit XML properties
PROPERTY_FIELDS: tuple[str, ...] = (
    "model", "protocol", "task", "tier", "variant", "instance", "run", "passed", "infra_error", "first_unmet",
    "failure_mode", "terminal_flag", "termination", "turns", "calls", "tokens_in", "tokens_out",
    "latency_s", "wall_s", "cost_usd", "kind", "facets", *OPTIONAL_PROPERTY_FIELDS,
)
#: per-run values a server reports, with the largest plausible value (see stats.records.PLAUSIBLE_MAX)
_USAGE_MAX = {"tokens_in": 1e8, "tokens_out": 1e8, "latency_s": 7 * 86400.0}


def usage_invalid(tokens_in: object, tokens_out: object, latency_s: object) -> list[str]:
    """Names of server-reported usage figures that are negative, non-numeric or absurd (kept raw, flagged)."""
    if (type(tokens_in) is int and type(tokens_out) is int and type(latency_s) is float  # the usual turn, at once
            and 0 <= tokens_in <= _USAGE_MAX["tokens_in"] and 0 <= tokens_out <= _USAGE_MAX["tokens_out"]
            and 0 <= latency_s <= _USAGE_MAX["latency_s"]):
        return []
    bad = []
    for name, value in (("tokens_in", tokens_in), ("tokens_out", tokens_out), ("latency_s", latency_s)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= _USAGE_MAX[name]:
            bad.append(name)
    return bad


def turn_usage_invalid(turn: Any) -> list[str]:
    """The usage figures of one turn that cannot be charged: out of range, or no count (named by its provider)."""
    named = getattr(turn, "usage_invalid", None) or ()
    found = usage_invalid(turn.tokens_in, turn.tokens_out, turn.latency_s)
    return sorted(set(found) | set(named)) if found or named else []


def episode_usage_invalid(traj: Trajectory) -> list[str]:
    """Usage figures of the episode a server got wrong: any turn's, and the totals' (a negative turn can
    hide in a positive sum, an absurd one in nothing else)."""
    bad = set(usage_invalid(traj.tokens_in, traj.tokens_out, traj.latency_s))
    for turn in traj.turns:
        bad.update(turn_usage_invalid(turn))
    return sorted(bad)


def _priced_cost(config: ModelConfig, traj: Trajectory, bad_usage: list[str]) -> tuple[float | None, float | None]:
    """(cost_usd, cost_known_usd): the priced cost of the run, None when a usage figure is wrong (unknown,
    never a negative or made-up figure); and then what the turns with sane usage cost, a lower bound
    that --max-cost still counts (a server's wrong figure must not switch the cap off)."""
    pricing = config.pricing
    if not bad_usage and not usage_invalid(traj.tokens_in, traj.tokens_out, traj.busy_s):
        usd = pricing.cost(traj.tokens_in, traj.tokens_out, traj.busy_s)
        return (round(usd, 10), None) if _valid_cost(usd) else (None, None)
    known = 0.0
    for t in traj.turns:
        busy = t.latency_s if t.busy_s is None else t.busy_s
        if not turn_usage_invalid(t) and not usage_invalid(None, None, busy):
            known += pricing.cost(t.tokens_in, t.tokens_out, busy)
    return None, (round(known, 10) if _valid_cost(known) and known > 0 else None)


def _valid_cost(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x < 1e6


def build_record(case: ResolvedCase, traj: Trajectory, grade: Grade | None, config: ModelConfig,
                 nodeid: str, *, protocol: dict[str, Any] | None = None, judging: Any = None,
                 harness_error: str | None = None, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """One run's record (see record_and_text, which also returns its runs.jsonl text)."""
    return record_and_text(case, traj, grade, config, nodeid, protocol=protocol, judging=judging,
                           harness_error=harness_error, secrets=secrets)[0]


def encode_record(record: Mapping[str, Any]) -> str:
    """A record's one JSON text: its runs.jsonl line (without the newline), and the size bound_record bounds."""
    return json.dumps(record, separators=(",", ":"), default=str)


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Only JSON's own types (tuples as lists), string keys, finite numbers: json and pydantic-core
    write the same values for it."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCALARS):
            if isinstance(node, float) and not math.isfinite(node):
                return False
        elif isinstance(node, dict):
            if not all(type(k) is str for k in node):
                return False
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        else:
            return False
    return True


def _kinds_values_plain(record: Mapping[str, Any]) -> bool:
    """Whether the values a case kind (a plug-in's too) puts into a record are JSON's own types: its
    facets and its verdicts' expected/observed. Every other field is built by record_and_text from
    numbers and strings, or by pydantic's model_dump(mode="json") (trajectory, config; or the Trajectory
    itself, which pydantic-core encodes the same), the protocol's
    params and the judge's own record: checked once by tests, not per record (a walk of the whole
    record costs more than json's encoder saves)."""
    facets = record.get("facets")
    if facets is not None and not (isinstance(facets, dict) and all(isinstance(v, _SCALARS) for v in facets.values())
                                   and _plain(facets)):
        return False
    for v in record.get("verdicts") or ():
        if not (isinstance(v.get("expected", ""), str) and isinstance(v.get("observed", ""), str)):
            return _plain(record.get("verdicts"))
    return True


def _fast_text(record: Mapping[str, Any]) -> str | None:
    """encode_record's text through pydantic-core's serializer (several times faster than json's on a
    record's many small values), or None where the two could differ: a value outside JSON's own types
    (json hands it to `default`, pydantic has its own forms for sets, bytes, dates), a non-finite
    float, any non-ASCII character (json escapes it; a raw U+2028 or U+0085 would also split the line
    for a reader that splits text lines). A number may be spelled differently (1e-5 for 1e-05): the
    same JSON value."""
    if not _kinds_values_plain(record):
        return None
    from pydantic_core import to_json

    try:
        data = to_json(record, inf_nan_mode="constants")
    except Exception:  # e.g. a lone surrogate in a string: json's encoder escapes it
        return None
    if not data.isascii() or b"NaN" in data or b"Infinity" in data:
        return None  # (NaN/Infinity inside a string match too: json then decides, which is only slower)
    return data.decode("ascii")


def record_and_text(case: ResolvedCase, traj: Trajectory, grade: Grade | None, config: ModelConfig,
                    nodeid: str, *, protocol: dict[str, Any] | None = None, judging: Any = None,
                    harness_error: str | None = None, secrets: tuple[str, ...] = (),
                    text_only: bool = False) -> tuple[dict[str, Any], str]:
    """One run's record and its encode_record text; `protocol` is the Protocol's params(), so the record
    says its rules.

    `text_only`: the caller stores the text and reads no more of the record than its scalar fields (no
    hook will see it): the trajectory is then encoded straight from the model, without the dict of it
    (the same text), and the record may hold the Trajectory itself under "trajectory" and the configuration's
    shared public view (never to be changed) under "config".

    The record is encoded once: the usual record's text is shorter than MAX_TEXT_BYTES, so no text
    in it can need cap_text's cut (each string's UTF-8 is no longer than its ASCII-escaped JSON)
    and the record is under bound_record's limit; that text is then the runs.jsonl line too.

    `judging`: the item's judge.assess.Assessment; a judge error makes the run an infrastructure
    error (the judged model's cost and latency stay its own; the judge's are reported apart).
    `harness_error`: the harness failed after the episode (a grader crashed): an infrastructure
    error too, never the model's failure, with the episode kept in the record.
    `secrets`: forms of the session's keys and passwords (RunState.model_secrets): masked as *** in the
    whole record after grading and before the text cap, so no cut leaves a piece of one.
    """
    judge_error = getattr(judging, "error", None) or harness_error
    infra = traj.termination in INFRA_TERMINATIONS or judge_error is not None
    # a prompt cut by the context window: no model verdict (no failure mode), only the harness flag
    harness = traj.termination == "context_limit"
    passed = bool(grade and grade.passed and not infra and not harness)
    calls = traj.calls
    tokens_in, tokens_out = traj.tokens_in, traj.tokens_out  # sums over the turns: once each
    priced = any(v is not None for v in (config.pricing.hourly_usd, config.pricing.input_per_mtok,
                                         config.pricing.output_per_mtok))
    # outputs brought from elsewhere may carry the cost their source paid (providers/recorded.py)
    recorded = [t.cost_usd for t in traj.turns if t.cost_usd is not None]
    bad_usage = episode_usage_invalid(traj)
    cost, cost_known = (None, None)
    if recorded:
        cost = round(sum(recorded), 10) if all(_valid_cost(c) for c in recorded) else None
    elif priced:
        cost, cost_known = _priced_cost(config, traj, bad_usage)
    record: dict[str, Any] = {
        "schema": RECORD_SCHEMA,
        "plugin_version": __version__,
        "nodeid": nodeid,
        "model": config.name,
        "protocol": (protocol or {}).get("name", traj.protocol),
        "protocol_params": protocol,
        "task": case.id,
        "tier": case.tier,
        "variant": case.variant,
        "instance": case.instance,
        "run": traj.run,
        "passed": passed,
        "infra_error": infra,
        "first_unmet": None if passed or infra or harness or grade is None or grade.first_unmet is None
        else grade.first_unmet.code,
        "failure_mode": None if passed or infra or harness or grade is None else grade.failure_mode,
        "terminal_flag": "context_limit" if harness else
        None if passed or infra or grade is None else grade.terminal_flag,
        "termination": traj.termination,
        "turns": len(traj.requests),  # model requests (a controller turn is none)
        "calls": len(calls),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "reasoning_tokens": traj.reasoning_tokens,
        "latency_s": round(traj.latency_s, 6),
        "wall_s": round(traj.wall_s, 6),
        "busy_s": round(traj.busy_s, 6),
        # where it ran (an endpoint pool: each turn's endpoint when they differ) and how long it waited
        # on endpoints' Retry-After pauses; redacted URLs, never a key
        "endpoint": traj.endpoint,
        "endpoint_wait_s": traj.endpoint_wait_s,
        # time queued before requests were sent (slots, rate limits, holds): not the episode's, not its deadline's
        "queue_s": traj.queue_s,
        # hourly pricing charges the time the model was busy serving the episode, not the item's
        # wall clock (which grows with -n when workers queue on one server); no pricing: unknown, never $0
        # usage the server got wrong (negative, absurd) makes the cost unknown: it never lowers --max-cost's meter;
        # a cost recorded elsewhere (providers/recorded.py) counts only when it is a finite, non-negative figure
        "cost_usd": cost,
        "calls_malformed": sum(1 for c in calls if c.malformed),
        "calls_rejected": sum(t.calls_rejected for t in traj.turns),  # beyond MAX_CALLS_PER_TURN, none kept
        "calls_hallucinated": sum(1 for c in calls if c.hallucinated),
        "calls_repeated": sum(1 for c in calls if c.repeated),
        "turns_leaked": sum(1 for t in traj.turns if t.leaked_call),
        "usage_invalid": bad_usage,
        "error": harness_error or (traj.error if traj.error or judge_error is None else judge_error),
        "case_hash": case.content_hash,
        "config": _PUBLIC(config) if text_only else _public(config),  # text only: no one holds the dict
        "obligations": {v.code: v.ok for v in grade.verdicts} if grade else {},
        "kind": getattr(case, "kind", "episode"),
        # kind-specific scalar facts (a call site's site, group, whether it acted or refused, ...)
        "facets": getattr(grade, "facets", None) or _facets(case),
        # the grader's account, for the transcript viewer: expected vs observed of each unmet obligation
        "verdicts": [{"code": v.code, "ok": v.ok, **({} if v.ok else {"expected": v.expected, "observed": v.observed})}
                     for v in grade.verdicts] if grade else [],
        "trajectory": traj if text_only and not secrets else traj.model_dump(mode="json"),
    }
    if cost_known is not None:  # placed early: plan.CostMeter reads the first cost fields of each line
        record = _insert_after(record, "cost_usd", "cost_known_usd", cost_known)
    if judging is not None:
        record["judge"] = judging.record()
        record.update(judging.scalars())
    if secrets:
        from .masking import mask

        record = mask(record, secrets)
    text = _fast_text(record)
    if record["trajectory"] is traj and (text is None or len(text) > MAX_TEXT_BYTES):
        record["trajectory"] = traj.model_dump(mode="json")  # json's encoder, or a cap, needs the plain data
        text = None
    if text is None:
        try:
            text = encode_record(record)
        except (TypeError, ValueError, RecursionError):
            text = None  # cap_text and bound_record decide, as for a large record (and raise what they raise)
    if text is not None and len(text) <= MAX_TEXT_BYTES:
        return record, text
    stored, capped = cap_text({"error": record["error"], "trajectory": record["trajectory"],
                                "verdicts": record["verdicts"]})
    record.update(stored)
    capped.update(bound_record(record))
    if capped:
        record["capped"] = capped
    return record, encode_record(record)


def _insert_after(record: dict[str, Any], after: str, key: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in record.items():
        out[k] = v
        if k == after:
            out[key] = value
    return out


def bound_record(record: dict[str, Any], limit: int = MAX_RECORD_BYTES) -> dict[str, int]:
    """Keep one record under `limit` bytes of JSON (each text is capped already, their number is not):
    first the transcript's messages go (the turns keep what was said and called), then later turns,
    then the later calls of the one turn left, then that turn. The counts (calls, turns, tokens) stay.
    Returns what was dropped, by path, with the record's size before."""
    size = len(encode_record(record))
    if size <= limit:
        return {}
    traj = record.get("trajectory")
    if not isinstance(traj, dict):
        return {}
    dropped = {"trajectory.messages": size}
    traj["messages"] = []
    turns = traj.get("turns") or []

    def over() -> bool:
        return len(encode_record(record)) > limit

    while len(turns) > 1 and over():
        turns = turns[: len(turns) // 2]
        traj["turns"] = turns
        dropped["trajectory.turns"] = size
    calls = turns[0].get("calls") if turns and isinstance(turns[0], dict) else None
    while isinstance(calls, list) and len(calls) > 1 and over():  # one turn of many large calls
        calls = calls[: len(calls) // 2]
        turns[0]["calls"] = calls
        dropped["trajectory.turns[0].calls"] = size
    if over():  # a single call still too large (each text is capped, their nesting is not): no transcript
        traj["turns"] = []
        dropped["trajectory.turns"] = size
    return dropped


def cap_text(value: Any, limit: int = MAX_TEXT_BYTES) -> tuple[Any, dict[str, int]]:
    """`value` with every string longer than `limit` bytes cut, and the original sizes by path.

    A model can answer with megabytes; the record keeps the first `limit` bytes of each text, a
    visible marker, and (in `capped`) where it cut and how large the text was.
    """
    capped: dict[str, int] = {}
    try:  # the usual record: its whole JSON (ASCII-escaped: never fewer bytes than a text's UTF-8) fits
        if len(json.dumps(value, default=str)) <= limit:
            return value, capped
    except (TypeError, ValueError, RecursionError):
        pass

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, str):
            if len(node) * 4 <= limit:  # cannot exceed the limit even as 4-byte characters
                return node
            data = node.encode("utf-8", "surrogatepass")
            if len(data) <= limit:
                return node
            capped[path] = len(data)
            kept = data[:limit].decode("utf-8", "ignore")
            return f"{kept}...[cut: {len(data)} bytes in all]"
        if isinstance(node, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    return walk(value, ""), capped


def _facets(case: Any) -> dict[str, Any] | None:
    """Facets of a run that was never graded (an infrastructure error): what the case says."""
    describe = getattr(case, "facets", None)
    return describe() if callable(describe) else None


def compact(record: dict[str, Any]) -> dict[str, Any]:
    """The PROPERTY_FIELDS of a record: what travels to the controller on the item's report."""
    return {k: record.get(k) for k in PROPERTY_FIELDS}


def _public(config: ModelConfig) -> dict[str, Any]:
    """config.public(), computed once per configuration (it is frozen) and copied per record: a model_dump
    per item cost more than the rest of the record's fields together."""
    return {k: dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v
            for k, v in _PUBLIC(config).items()}


_PUBLIC: "PerObject[ModelConfig, dict[str, Any]]" = PerObject(lambda config: config.public())


def junit_value(value: Any) -> str:
    """A property value as dashboards parse it: `true`/`false`, empty for None, else the plain text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def properties(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, text) pairs for user_properties, and so JUnit XML <property> elements (junit_value,
    inline: this runs for every item)."""
    get = record.get
    return [(k, v if type(v) is str else "" if v is None else ("true" if v else "false") if v is True or v is False
             else str(v)) for k in PROPERTY_FIELDS for v in (get(k),)]


class RunLog:
    """Appends records to a JSONL file; one O_APPEND write per record, under a cross-process lock.

    The lock (locking.AppendLock) excludes other processes; episode threads (--concurrency)
    share this descriptor, so a threading.Lock orders them first.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._end = -1  # the file's size after this writer's last append (-1: none yet)
        self._lock: Any = None
        self._thread_lock = threading.Lock()

    def append(self, record: dict[str, Any], text: str | None = None) -> None:
        """Append `record`; `text` is its encode_record text when the caller has it already."""
        self.append_line(((encode_record(record) if text is None else text) + "\n").encode())

    def append_line(self, line: bytes) -> None:
        """Append one complete line (other JSONL stores, e.g. the judge cache, share this writer)."""
        with self._thread_lock:
            self._append(line)

    def _append(self, line: bytes) -> None:
        if self._fd is None:
            from .locking import AppendLock

            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_BINARY: Windows would otherwise write every newline as CRLF
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
            self._lock = AppendLock(self.path, self._fd)
        with self._lock:
            # a writer killed mid-write (this session's earlier one, or another xdist worker) leaves a
            # torn last line: start a new line, never extend it (one fstat per append, and a 1-byte read
            # unless the file ends where this writer's own last complete line ended)
            size = os.fstat(self._fd).st_size
            if size and size != self._end:
                os.lseek(self._fd, size - 1, os.SEEK_SET)  # reads only: O_APPEND writes go to the end anyway
                if os.read(self._fd, 1) != b"\n":
                    line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
            self._end = size + len(line)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._lock = None
            self._end = -1


#: bad lines named one by one before the reader only counts them
MAX_LINE_NOTES = 5


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Complete records of a runs.jsonl, and a note for every line that is not one.

    A bad line (torn, not UTF-8, not JSON, not a JSON object) is skipped, named with its line
    number, and counted; after MAX_LINE_NOTES of them only the count grows.
    """
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    if not path.exists():
        return records, problems
    if not path.is_file():  # a device reads without end (/dev/zero), a FIFO blocks: neither is a record file
        return records, [f"{path}: not a regular file, not read"]
    bad = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            problem = _line_problem(raw, records)
            if problem is None:
                continue
            bad += 1
            if bad <= MAX_LINE_NOTES:
                problems.append(f"{path}:{n}: {problem}")
    if bad > MAX_LINE_NOTES:
        problems.append(f"{path}: {bad} bad lines skipped in all ({bad - MAX_LINE_NOTES} more not shown)")
    return records, problems


def _line_problem(raw: bytes, records: list[dict[str, Any]]) -> str | None:
    """Append the line's record and return None, or say why the line is not a record."""
    if not raw.endswith(b"\n"):
        return "truncated last line ignored"
    if not raw.strip():
        return None  # a blank line (e.g. the newline that closes a torn one) is no record and no harm
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}), line ignored"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return "not a JSON record, ignored"
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")
        return f"a JSON {kind}, not a record object, ignored"
    records.append(value)
    return None


#: what every consumer of a run (reports, gate) reads, with the type it needs
RUN_KEY_FIELDS: dict[str, type] = {"model": str, "task": str, "tier": str, "variant": str, "instance": str,
                                   "run": int, "passed": bool}


def run_problem(r: Any) -> str | None:
    """Why `r` cannot be used as a run outcome, or None."""
    from .suite.schema import TIERS

    if not isinstance(r, dict):
        return "not an object"
    for key, typ in RUN_KEY_FIELDS.items():
        if key not in r:
            return f"no {key!r} field"
        if not isinstance(r[key], typ) or (typ is int and isinstance(r[key], bool)):
            return f"field {key!r} is {type(r[key]).__name__}, expected {typ.__name__}"
    kind = r.get("kind") or "episode"
    if kind == "episode" and r["tier"] not in TIERS:
        return f"unknown tier {r['tier']!r}"
    if kind in ("callsite", "pressure") and not isinstance(r.get("facets"), dict) and "facets" in r:
        return f"a {kind} record whose 'facets' is not an object"
    return None


def usable_runs(runs: list[Any], source: str, what: str = "record") -> tuple[list[dict[str, Any]], list[str]]:
    """The runs a report or gate can use, and a note for each one skipped (the first few, then a count)."""
    good, bad = [], []
    for n, r in enumerate(runs, 1):
        why = run_problem(r)
        if why is None:
            good.append(r)
        else:
            bad.append(f"{what} {n}: {why}")
    notes = [f"{source}: {b}, skipped" for b in bad[:MAX_LINE_NOTES]]
    if len(bad) > MAX_LINE_NOTES:
        notes.append(f"{source}: {len(bad)} unusable {what}s skipped in all")
    return good, notes


#: what identifies one run of one item (records of several configs of one model collapse too)
RUN_KEY: tuple[str, ...] = ("model", "task", "variant", "instance", "run")
#: the one rule for a run recorded more than once (a resume, a rerun plugin, overlapping shards,
#: a file given twice): every command (report, compare, the gate, resume, the terminal summary) applies it
DUPLICATE_RULE = "the last record of a run wins (files in the order given, lines in file order)"


def run_key(record: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(record.get(k)) for k in RUN_KEY)


def latest_runs(records: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """One record per run by DUPLICATE_RULE, in the order of each run's last record; and how many
    earlier records were replaced."""
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    replaced = 0
    for r in records:
        key = run_key(r)
        if key in out:
            replaced += 1
            del out[key]  # insertion order = order of the last occurrence
        out[key] = dict(r)
    return list(out.values()), replaced


def duplicate_note(replaced: int, where: str = "") -> list[str]:
    """The note every command prints when it applied DUPLICATE_RULE."""
    if not replaced:
        return []
    return [f"{where}{replaced} repeated run record(s) replaced: {DUPLICATE_RULE}"]
