"""Bring your own outputs: a provider that answers call-site requests from a JSONL of recorded outputs.

Production logs or a released corpus already hold what a model said; grading them needs no model
call. Each line is one output::

    {"case_id": "intent-crud-01", "model": "haiku", "output": "home_assistant",
     "latency_s": 0.9, "input_tokens": 348, "output_tokens": 2, "cost_usd": 0.0003}

``case_id``, ``model`` and ``output`` are required; the usage fields are optional (absent: 0, and
the cost comes from the model's pricing); other fields are ignored, so a scored corpus reads as is.
A failed call is recorded as ``"output": null`` with its ``"error"`` text: it becomes the item's
infrastructure error, as a live endpoint failure would.
A models.toml entry ``provider = "recorded"`` with ``path`` picks the lines whose ``model`` is its
``model`` (or, without one, its name). The outputs go through the normal items, graders, records
and reports; a case without a recorded output is an infrastructure error naming it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ProviderError, Reply

if TYPE_CHECKING:
    from ..config import ModelConfig

REQUIRED: tuple[str, ...] = ("case_id", "model", "output")
#: optional usage fields and their Reply counterparts
OPTIONAL: dict[str, str] = {"latency_s": "latency_s", "input_tokens": "tokens_in", "output_tokens": "tokens_out",
                            "cost_usd": "cost_usd"}


class RecordedOutputsError(ValueError):
    """A line of a recorded-outputs file is unusable; the message names file:line and the field."""


@dataclass(frozen=True)
class RecordedOutput:
    case_id: str
    model: str
    output: str
    latency_s: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    line: int = 0
    error: str | None = None  # a call that failed where it was recorded (output null)


def _number(where: str, key: str, value: Any, *, integer: bool) -> float | int:
    kind = "a whole number >= 0" if integer else "a number >= 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordedOutputsError(f"{where}: field {key!r} must be {kind}, not {json.dumps(value)[:40]}")
    if integer and not float(value).is_integer() or not math.isfinite(value) or value < 0:
        raise RecordedOutputsError(f"{where}: field {key!r} must be {kind}, not {value!r}")
    return int(value) if integer else float(value)


def parse_line(text: str, path: Path | str, line: int) -> RecordedOutput | None:
    """One JSONL line (None for a blank line); errors name ``path:line`` and the field."""
    where = f"{path}:{line}"
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordedOutputsError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordedOutputsError(f"{where}: expected a JSON object with {', '.join(REQUIRED)}, "
                                   f"got {type(data).__name__}")
    error = data.get("error")
    failed = data.get("output", "") is None and isinstance(error, str) and bool(error.strip())
    for key in REQUIRED:
        if key not in data:
            raise RecordedOutputsError(f"{where}: missing field {key!r} (required: {', '.join(REQUIRED)})")
        if key == "output" and failed:
            continue
        if not isinstance(data[key], str) or (key != "output" and not data[key].strip()):
            raise RecordedOutputsError(f"{where}: field {key!r} must be a{' non-empty' if key != 'output' else ''} "
                                       f"string, not {json.dumps(data[key])[:40]}"
                                       + (" (a failed call: output null with its 'error' text)" if key == "output"
                                          else ""))
    usage: dict[str, Any] = {}
    for key, attr in OPTIONAL.items():
        if data.get(key) is not None:
            usage[attr] = _number(where, key, data[key], integer=key.endswith("_tokens"))
    return RecordedOutput(case_id=data["case_id"], model=data["model"], output=data["output"] or "", line=line,
                          error=error if failed else None, **usage)


def read_outputs(path: Path) -> dict[tuple[str, str], RecordedOutput]:
    """Every output of a file by (model, case_id); a pair recorded twice is an error naming both lines."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordedOutputsError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    out: dict[tuple[str, str], RecordedOutput] = {}
    for n, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{n}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise RecordedOutputsError(f"{where}: not UTF-8; save the file as UTF-8") from None
        rec = parse_line(text, path, n)
        if rec is None:
            continue
        key = (rec.model, rec.case_id)
        if key in out:
            raise RecordedOutputsError(f"{where}: case_id {rec.case_id!r} of model {rec.model!r} is recorded twice "
                                       f"(first on line {out[key].line}); keep one output per case and model")
        out[key] = rec
    return out


def source_model(config: "ModelConfig") -> str:
    """The ``model`` value this configuration's lines carry: its ``model``, else its name."""
    return config.model or config.name


class RecordedProvider:
    """Answers each call-site request with its recorded output; never calls a model."""

    def __init__(self, config: "ModelConfig"):
        self.config = config
        self.path = Path(config.path or "")
        self.source = source_model(config)
        outputs = read_outputs(self.path)
        self.outputs = {case: rec for (model, case), rec in outputs.items() if model == self.source}

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any = None,
                 **_: Any) -> Reply:
        if case is None or getattr(case, "kind", "episode") != "callsite":
            raise ProviderError(str(self.path), "recorded outputs answer call-site cases only (one request, one "
                                "output); a ladder episode needs a model", transient=False)
        rec = self.outputs.get(case.id)
        if rec is None:
            raise ProviderError(str(self.path), f"no recorded output for case {case.id!r} of model "
                                f"{self.source!r}", transient=False)
        if rec.error is not None:
            raise ProviderError(str(self.path), f"the recorded call of case {case.id!r} failed: {rec.error}",
                                transient=False)
        return Reply(content=rec.output, tokens_in=rec.tokens_in, tokens_out=rec.tokens_out,
                     latency_s=rec.latency_s, cost_usd=rec.cost_usd)

    def close(self) -> None:
        pass
