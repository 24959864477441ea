"""Read case files and expand them into resolved (variant, instance) cases.

Validation happens once per file; the short error names the file, the field and the problem,
so a broken case never hides the rest of the suite.
"""

from __future__ import annotations

import copy
import hashlib
import string
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .schema import Case, Fixtures, ResolvedCase

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class CaseError(Exception):
    """A case file that cannot be used; the message is meant to be shown as is."""

    def __init__(self, path: Path | str, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid case file {self.path}:"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_case(data: dict[str, Any], path: Path | str) -> Case:
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            # the case-wide checks name their field themselves
            problems.append(f"{_loc(err['loc'])}: {msg}" if err["loc"] else msg)
        raise CaseError(path, problems[:8] + ([f"... and {len(problems) - 8} more"] if len(problems) > 8 else []))
    stem = Path(path).stem
    if case.id != stem:
        raise CaseError(path, [f"id: {case.id!r} must match the file name {stem!r}"])
    folder = Path(path).parent.name
    if folder.startswith("tier_") and folder != f"tier_{case.tier}":
        raise CaseError(path, [f"tier: {case.tier!r} but the file is in {folder}/; move it to tier_{case.tier}/ "
                               f"or correct the tier"])
    return case


def read_toml(path: Path | str) -> tuple[dict[str, Any], bytes]:
    """The TOML table of a case file and its raw bytes; a CaseError says what is wrong and where."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CaseError(path, [f"cannot be read: {exc.strerror or exc}"]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CaseError(path, [f"line {line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {column}); "
                               "save the file as UTF-8"]) from None
    try:
        return tomllib.loads(text), raw
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(path, [f"not valid TOML: {exc}"]) from None


def load_case(path: Path | str) -> tuple[Case, str]:
    """Parse and validate one case file; returns the case and a hash of its content."""
    data, raw = read_toml(path)
    return parse_case(data, path), hashlib.sha256(raw).hexdigest()[:16]


def _substitute(text: str, variables: dict[str, str]) -> str:
    return string.Template(text).safe_substitute(variables) if variables else text


def resolve(case: Case, variant: str, instance: str, content_hash: str) -> ResolvedCase:
    """Apply an instance's overrides and a prompt variant to a case."""
    if variant not in case.prompts:
        raise KeyError(f"{case.id} has no prompt variant {variant!r}")
    fixtures = case.fixtures
    gold, steps, reference = case.gold, case.steps, case.reference
    variables = dict(case.vars)
    if instance != "i0":
        inst = case.instances[instance]
        variables.update(inst.vars)
        fx = copy.deepcopy(fixtures.model_dump())
        for rec in fx["records"]:
            if rec["id"] in inst.patch_records:
                rec["fields"].update(inst.patch_records[rec["id"]])
        if inst.options is not None:
            fx["options"] = inst.options
        if inst.constraints is not None:
            fx["constraints"] = [c.model_dump() for c in inst.constraints]
        fixtures = Fixtures.model_validate(fx)
        gold = inst.gold or gold
        steps = inst.steps if inst.steps is not None else steps
        reference = inst.reference if inst.reference is not None else reference
    n_calls = sum(len(t.calls) for t in reference)
    return ResolvedCase(
        id=case.id,
        tier=case.tier,
        title=case.title,
        variant=variant,
        instance=instance,
        prompt=_substitute(case.prompts[variant], variables),
        tools=tuple(case.tools),
        turn_budget=case.turn_budget,
        call_limit=case.call_limit if case.call_limit is not None else n_calls + 2,
        fixtures=fixtures,
        gold=gold,
        steps=tuple(steps),
        forbidden=tuple(case.forbidden),
        reference=tuple(reference),
        content_hash=content_hash,
        declared_forbidden=tuple(case.forbidden) if "forbidden" in case.model_fields_set else (),
        repeat_threshold=case.repeat_threshold,
    )


def iter_case_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.toml") if p.parent.name.startswith("tier_"))


def case_names(paths: list[Path]) -> tuple[set[str], set[str]]:
    """Prompt variant and instance names of the case files at or under `paths`, found by their content
    as collection finds them (a light read: TOML only, no validation; files that do not parse are
    skipped here and reported by collection)."""
    from ..casefiles import shaped_as_case

    variants: set[str] = set()
    instances: set[str] = set()
    files: list[Path] = []
    for p in paths:
        if p.is_file() and p.suffix == ".toml" and shaped_as_case(p):
            files.append(p)
        elif p.is_dir():
            files += sorted(f for f in p.rglob("*.toml") if f.is_file() and shaped_as_case(f))
    for f in files:
        try:
            data = tomllib.loads(f.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        prompts, inst = data.get("prompts"), data.get("instances", {})
        if isinstance(prompts, dict):
            variants.update(k for k in prompts if isinstance(k, str) and k[:1] == "v" and k[1:].isdigit())
        if isinstance(inst, dict):
            instances.update(k for k in inst if isinstance(k, str) and k[:1] == "i" and k[1:].isdigit())
        instances.add("i0")
    return variants, instances
