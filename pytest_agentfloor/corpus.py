"""Recorded responses (record/replay) and the resume index over stored run records.

A cassette entry is keyed by the item (task, variant, instance, run) and the turn as well as by
everything that determines a model's answer: provider, model, base URL without credentials,
sampling parameters, messages and tools. Two runs of a sweep that send identical requests so
keep their own (possibly different) replies, and a replay equals the recorded sweep. Replay
never falls through to the live model: a miss is an error that names the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import ModelConfig, key_base_url, redact_url
from .masking import mask
from .providers.base import Provider, ProviderError, Reply, ToolCallOut
from .providers.endpoints import note_served, served_endpoint
from .results import MAX_LINE_NOTES, OPTIONAL_PROPERTY_FIELDS, PROPERTY_FIELDS, RunLog, _line_problem, read_records

if TYPE_CHECKING:
    from .kindspec import KindCase

CASSETTE_FILE = "cassettes.jsonl"


def request_key(config: ModelConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                item: tuple[str, str, str, int | None] | None = None) -> str:
    """The cassette key of one request of item (task, variant, instance, run) at its turn."""
    ident = {
        "item": list(item) if item is not None else None,
        "turn": sum(1 for m in messages if m.get("role") == "assistant"),
        "provider": config.provider,
        "model": config.model or config.policy,
        "base_url": config.key_base_url(),  # a pool's keys name no replica (config.key_base_url)
        "sampling": [config.temperature, config.seed, config.max_tokens, config.think, config.system_prompt]
        + ([config.reasoning_effort] if config.reasoning_effort is not None else [])  # old keys stay valid
        + ([{"repairs": list(config.repairs)}] if config.repairs else []),
        "messages": messages,
        "tools": tools,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _item(case: "KindCase | None", run: int | None) -> tuple[str, str, str, int | None] | None:
    """The item a request belongs to; None for requests outside an item (the session's probe)."""
    return None if case is None else (case.id, case.variant, case.instance, run)


#: the stored reply's fields, from the Reply dataclass itself (new fields need no change here)
_REPLY_FIELDS = {f.name for f in dataclasses.fields(Reply)}
_TEXT_FIELDS = {"content": True, "finish_reason": False, "refusal": True}  # name -> may be null


def _reply_from(data: Any) -> Reply:
    """A stored reply, checked field by field (a hand-edited cassette must not crash an item)."""
    if not isinstance(data, dict):
        raise ValueError("'reply' is not an object")
    extra = set(data) - _REPLY_FIELDS
    if extra:
        raise ValueError(f"'reply' has unknown field(s) {sorted(extra)}")
    calls = data.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and set(c) == {"id", "name", "arguments"} and all(isinstance(v, str) for v in c.values())
            for c in calls):
        raise ValueError("'reply.tool_calls' must be a list of {id, name, arguments} strings")
    for name, value in data.items():
        if name == "tool_calls":
            continue
        if name == "usage_invalid":
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ValueError("'reply.usage_invalid' must be a list of field names")
            continue
        if name in _TEXT_FIELDS:
            if not (isinstance(value, str) or (value is None and _TEXT_FIELDS[name])):
                raise ValueError(f"'reply.{name}' must be a string" + (" or null" if _TEXT_FIELDS[name] else ""))
        elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
                                    or value != value):
            raise ValueError(f"'reply.{name}' must be a non-negative number")
    return Reply(**{**data, "tool_calls": [ToolCallOut(**c) for c in calls]})


def read_cassette(path: Path, endpoints: dict[str, str] | None = None) -> tuple[dict[str, Reply], list[str]]:
    """Every usable entry of a cassette file by key, and a note naming each line that is not one.

    `endpoints`, when given, is filled with the (redacted) endpoint that served each recorded
    reply, where the entry names one: a replayed record names where the recording ran.
    """
    index: dict[str, Reply] = {}
    problems: list[str] = []
    if not path.exists():
        return index, problems
    if not path.is_file():  # a device reads without end (/dev/zero), a FIFO blocks: neither is a record file
        return index, [f"{path}: not a regular file, not read"]
    bad = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            got: list[dict[str, Any]] = []
            problem = _line_problem(raw, got)
            if problem is None and got:
                try:
                    if not isinstance(got[0].get("key"), str):
                        raise ValueError("no 'key' string")
                    index[got[0]["key"]] = _reply_from(got[0].get("reply"))
                    if endpoints is not None and isinstance(got[0].get("endpoint"), str):
                        endpoints[got[0]["key"]] = redact_url(got[0]["endpoint"])
                except (TypeError, ValueError) as exc:
                    problem = f"unusable cassette entry ({exc}), line ignored"
            if problem is not None:
                bad += 1
                if bad <= MAX_LINE_NOTES:
                    problems.append(f"{path}:{n}: {problem}")
    if bad > MAX_LINE_NOTES:
        problems.append(f"{path}: {bad} bad lines skipped in all ({bad - MAX_LINE_NOTES} more not shown)")
    return index, problems


class CassetteStore:
    """An append-only JSONL of (key, reply) pairs, shared by xdist workers through flock."""

    def __init__(self, path: Path, secrets: tuple[str, ...] = ()):
        self.path = path
        #: the session's keys and passwords (masking.py): masked in what is stored, and in the requests a
        #: key is computed from, so a recorded reply that echoed one replays under the same key
        self.secrets = secrets
        self._log = RunLog(path)
        self._index: dict[str, Reply] | None = None
        self._endpoints: dict[str, str] = {}
        self.problems: list[str] = []
        self._loading = threading.Lock()  # episode threads (--concurrency) may ask first at once

    def lookup(self, key: str) -> Reply | None:
        with self._loading:
            if self._index is None:
                self._index, self.problems = read_cassette(self.path, self._endpoints)
        return self._index.get(key)

    def endpoint_of(self, key: str) -> str | None:
        """The endpoint that served the recorded reply of `key`, when the cassette says."""
        return self._endpoints.get(key)

    def add(self, key: str, reply: Reply, model: str, item: tuple[str, str, str, int | None] | None = None,
            turn: int | None = None, endpoint: str | None = None) -> None:
        entry: dict[str, Any] = {"key": key, "model": model}
        if endpoint:
            entry["endpoint"] = redact_url(endpoint)
        if item is not None:
            entry.update(task=item[0], variant=item[1], instance=item[2], run=item[3], turn=turn)
        data = asdict(reply)
        for optional in ("cost_usd", "refusal", "usage_invalid"):  # set only for recorded outputs / server
            if not data.get(optional):  # refusals / wrong usage: cassettes keep their earlier form otherwise
                data.pop(optional, None)
        self._log.append(mask({**entry, "reply": data}, self.secrets))

    def key(self, config: ModelConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
            item: tuple[str, str, str, int | None] | None) -> str:
        """request_key over the messages as stored (secrets masked): recording and replay agree."""
        return request_key(config, mask(messages, self.secrets) if self.secrets else messages, tools, item)

    def close(self) -> None:
        self._log.close()


class _AtRun:
    """A record/replay provider bound to one item's run number (the cassette key needs it)."""

    def __init__(self, owner: "RecordingProvider | ReplayProvider", run: int):
        self.owner, self.run, self.config = owner, run, owner.config

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "KindCase | None") -> Reply:
        return self.owner.complete(messages, tools, case=case, run=self.run)

    def close(self) -> None:
        pass


class RecordingProvider:
    """Passes requests to the live provider and stores every reply."""

    def __init__(self, inner: Provider, store: CassetteStore):
        self.inner, self.store, self.config = inner, store, inner.config

    def at_run(self, run: int) -> _AtRun:
        return _AtRun(self, run)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "KindCase | None", run: int | None = None) -> Reply:
        reply = self.inner.complete(messages, tools, case=case)
        item = _item(case, run)
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        self.store.add(self.store.key(self.config, messages, tools, item), reply, self.config.name, item, turn,
                       endpoint=served_endpoint())
        return reply

    def close(self) -> None:
        self.inner.close()


class ReplayProvider:
    """Serves stored replies only; the live provider is never constructed."""

    def __init__(self, config: ModelConfig, store: CassetteStore):
        self.config, self.store = config, store

    def at_run(self, run: int) -> _AtRun:
        return _AtRun(self, run)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "KindCase | None", run: int | None = None) -> Reply:
        key = self.store.key(self.config, messages, tools, _item(case, run))
        reply = self.store.lookup(key)
        if reply is None:
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            skipped = f"; {len(self.store.problems)} note(s) on unusable cassette lines" if self.store.problems else ""
            where = f"case {case.id} {case.variant}-{case.instance}-r{run}" if case is not None else "the probe"
            raise ProviderError(f"replay:{self.store.path}",
                                f"no recorded response for model {self.config.name!r}, {where} "
                                f"turn {turn} (key {key[:12]}){skipped}",
                                transient=False)
        served = self.store.endpoint_of(key)
        if served:
            note_served(served)  # the record names where the recording ran, as it does its latency
        return reply

    def close(self) -> None:
        pass


# -- resume ---------------------------------------------------------------------------------
def config_fingerprint(public_config: dict[str, Any], protocol: dict[str, Any] | None = None) -> str:
    """The run's condition: model configuration (prompt and reasoning ablations included) and the
    protocol with its parameters (step-budget scale included); records without a protocol keep
    their old fingerprint, and so never resume a run under a protocol."""
    public_config = {k: v for k, v in public_config.items()
                     if k not in ModelConfig.LIMIT_FIELDS and k not in ModelConfig.LABEL_FIELDS}
    if "base_url" in public_config:  # a pool's replicas are where runs ran, not their condition
        public_config["base_url"] = key_base_url(public_config["base_url"])
    ident: dict[str, Any] = public_config if protocol is None else {"config": public_config, "protocol": protocol}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def resume_key(model: str, task: str, variant: str, instance: str, run: int, case_hash: str,
               config_fp: str) -> str:
    return f"{model}|{task}|{variant}|{instance}|{run}|{case_hash}|{config_fp}"


def record_key(r: dict[str, Any]) -> str:
    """The resume key of a stored record (KeyError, TypeError or ValueError if a field is missing or wrong)."""
    if not isinstance(r["config"], dict):  # a hand-edited `"config": null` must not crash the resume
        raise TypeError("'config' is not an object")
    model, task, variant, instance = (_text(r[k]) for k in ("model", "task", "variant", "instance"))
    return resume_key(model, task, variant, instance, int(r["run"]),
                      _text(r["case_hash"]), config_fingerprint(r["config"], r.get("protocol_params")))


def completed_records(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The last complete, graded record of every item in a runs.jsonl, by resume key.

    Infrastructure errors are not results: those items run again.
    """
    records, problems = read_records(path)
    done: dict[str, dict[str, Any]] = {}
    incomplete = 0
    for r in records:
        if r.get("infra_error") or r.get("termination") == "context_limit" or "trajectory" not in r or "config" not in r:
            continue
        try:
            key = record_key(r)
        except (KeyError, TypeError, ValueError):
            incomplete += 1
            continue
        if any(k not in r for k in PROPERTY_FIELDS if k not in OPTIONAL_PROPERTY_FIELDS):
            incomplete += 1
            continue
        done[key] = r
    if incomplete:
        problems.append(f"{path}: {incomplete} record(s) lacking fields a resume needs were ignored (they run again)")
    return done, problems


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value
