"""``python -m pytest_agentfloor judge-audit --judge MODEL``: how far a judge agrees with our labels.

Every text of the labelled audit set (judge/auditset.toml, or ``--set``) is put to the judge
exactly as a benchmark item's would be (same prompt, same cache). Reported per predicate and
overall, each with a 95% Wilson interval:

- agreement: verdicts equal to the label, over the texts the judge gave a verdict on;
- false-pass rate: "pass" verdicts on texts labelled as violations, over the violations;
- false-fail rate: "fail" verdicts on texts labelled clean, over the clean texts.

Texts the judge could not judge (timeout, error, unparseable reply) are counted apart as
errors and left out of the three rates, and the first few are named; the exit status is then 1
(0 when every text got a verdict, 2 for a usage error).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .client import Judge, JudgeError
from ..suite.predicates import BUILTIN_RUBRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_SET = Path(__file__).with_name("auditset.toml")


class AuditTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1)
    reference: str | None = None


class AuditItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str
    predicate: str
    label: str = Field(pattern="^(pass|fail)$")
    text: str = Field(min_length=1)
    note: str = ""
    rubric: str = ""


class AuditSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: dict[str, AuditTask]
    items: list[AuditItem]

    @model_validator(mode="after")
    def _known(self) -> "AuditSet":
        for n, item in enumerate(self.items, 1):
            if item.task not in self.tasks:
                raise ValueError(f"items[{n}]: unknown task {item.task!r}; tasks: {', '.join(self.tasks)}")
            if not item.rubric and item.predicate not in BUILTIN_RUBRICS:
                raise ValueError(f"items[{n}]: predicate {item.predicate!r} is not built in "
                                 f"({', '.join(BUILTIN_RUBRICS)}): give its 'rubric'")
        return self


class AuditSetError(Exception):
    pass


def load_set(path: Path) -> AuditSet:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditSetError(f"{path}: cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise AuditSetError(f"{path}: not valid TOML: {exc}") from None
    try:
        return AuditSet.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise AuditSetError(f"{path}: {loc + ': ' if loc else ''}{err['msg'].removeprefix('Value error, ')}") from None


@dataclass
class Tally:
    """Counts of one predicate (or all): labelled violations/clean texts and the judge's verdicts."""

    agree: int = 0
    judged: int = 0
    violations: int = 0
    false_pass: int = 0
    clean: int = 0
    false_fail: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, label: str, verdict: str | None, error: str | None = None) -> None:
        if verdict is None:
            self.errors.append(error or "no verdict")
            return
        self.judged += 1
        self.agree += verdict == label
        if label == "fail":
            self.violations += 1
            self.false_pass += verdict == "pass"
        else:
            self.clean += 1
            self.false_fail += verdict == "fail"

    def rates(self) -> dict[str, Any]:
        from ..stats.judge import wilson

        def rate(k: int, n: int) -> dict[str, Any]:
            lo, hi = wilson(k, n)
            return {"k": k, "n": n, "rate": k / n if n else None, "ci95": [lo, hi]}

        return {"agreement": rate(self.agree, self.judged), "false_pass": rate(self.false_pass, self.violations),
                "false_fail": rate(self.false_fail, self.clean), "errors": len(self.errors)}


def run_audit(judge: Judge, audit: AuditSet) -> tuple[dict[str, Tally], list[dict[str, Any]]]:
    """Tallies by predicate (plus "all") and one row per text."""
    tallies: dict[str, Tally] = {}
    rows = []
    for n, item in enumerate(audit.items, 1):
        task = audit.tasks[item.task]
        rubric = item.rubric or BUILTIN_RUBRICS[item.predicate]
        verdict, reason, error = None, "", None
        try:
            j = judge.judge(case_id=item.task, task=task.prompt, reference=task.reference, predicate=item.predicate,
                            rubric=rubric, text=item.text)
            verdict, reason = ("pass" if j.passed else "fail"), j.reason
        except JudgeError as exc:
            error = f"item {n} ({item.task}, {item.predicate}): {exc}"
        for key in (item.predicate, "all"):
            tallies.setdefault(key, Tally()).add(item.label, verdict, error)
        rows.append({"item": n, "task": item.task, "predicate": item.predicate, "label": item.label,
                     "verdict": verdict, "reason": reason, "error": error, "note": item.note})
    order = sorted(k for k in tallies if k != "all") + ["all"]
    return {k: tallies[k] for k in order}, rows


def _pct(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "-"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:5.1f}% [{100 * lo:4.1f}, {100 * hi:5.1f}] ({r['k']}/{r['n']})"


def render(tallies: dict[str, Tally]) -> str:
    head = f"{'predicate':22} {'agreement [95% Wilson]':>32} {'false-pass':>32} {'false-fail':>32} {'errors':>6}"
    lines = [head, "-" * len(head)]
    for name, t in tallies.items():
        r = t.rates()
        lines.append(f"{name:22} {_pct(r['agreement']):>32} {_pct(r['false_pass']):>32} "
                     f"{_pct(r['false_fail']):>32} {r['errors']:>6}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pytest_agentfloor judge-audit",
                                description="Agreement of a judge with the labelled audit set.")
    p.add_argument("--judge", required=True, metavar="MODEL", help="the judge: a model from models.toml")
    p.add_argument("--models-file", type=Path, default=Path("models.toml"), metavar="PATH",
                   help="model configurations (default: models.toml)")
    p.add_argument("--report-dir", type=Path, default=Path("reports"), metavar="DIR",
                   help="the report dir whose judge-cache.jsonl is used (default: reports)")
    p.add_argument("--judge-cache", default="readwrite", metavar="MODE", help="readwrite (default), read, write or off")
    p.add_argument("--set", dest="audit_set", type=Path, default=DEFAULT_SET, metavar="PATH",
                   help="labelled audit set (default: the plugin's own)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the results as JSON")
    args = p.parse_args(argv)
    prog = "judge-audit"
    from .command import JudgeSetupError, open_judge

    try:
        audit = load_set(args.audit_set)
        judge, servers = open_judge(args.judge, args.models_file, args.report_dir, args.judge_cache)
    except (AuditSetError, JudgeSetupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    try:
        tallies, rows = run_audit(judge, audit)
    finally:
        judge.close()
        for server in servers:
            server.stop()
    n_fail = sum(1 for i in audit.items if i.label == "fail")
    print(f"{prog}: judge {judge.describe()}; {len(audit.items)} labelled texts ({n_fail} violations) "
          f"from {args.audit_set}")
    print(render(tallies))
    errors = tallies["all"].errors if "all" in tallies else []
    for t in errors[:5]:
        print(f"{prog}: no verdict: {t}", file=sys.stderr)
    if len(errors) > 5:
        print(f"{prog}: {len(errors)} texts without a verdict in all ({len(errors) - 5} more not shown)", file=sys.stderr)
    print(f"{prog}: {judge.hits} verdict(s) from the cache, {judge.requests} request(s)")
    if args.json is not None:
        data = {"judge": judge.name, "fingerprint": judge.fingerprint, "prompt_version": _version(),
                "set": str(args.audit_set), "results": {k: t.rates() for k, t in tallies.items()}, "items": rows}
        args.json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{prog}: wrote {args.json}")
    return 1 if errors else 0


def _version() -> str:
    from .prompt import PROMPT_VERSION

    return PROMPT_VERSION
