"""The call-site case kind: a site table expands into one item per case; a case plays as one request.

The request is the site's system prompt and the user turn with its call-time context (the
installation's entity registry, the running agents and their topics), no tools. It is recorded
as a one-turn Trajectory, so records, resume, replay, xdist and reports are the ladder's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..grading import Grade
from ..grading.obligations import Verdict
from ..kinds import Entry
from ..providers.base import MalformedReply, ProviderError
from ..providers.endpoints import episode_net
from ..suite.loader import CaseError, _loc, read_toml
from ..trajectory import ToolCall, Trajectory, Turn
from .graders import GRADERS, Outcome
from .schema import CallSiteCase, Installation, SiteTable


MARKERS: dict[str, str] = {
    "callsite": "a call-site case (one model request graded by an output contract)",
    "intent": "call site: intent routing label",
    "action_label": "call site: Home Assistant action label",
    "actuator": "call site: grounded actuation (service calls against an entity registry)",
    "planner": "call site: pipeline planning",
    "codegen": "call site: agent code generation",
}


def _problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        msg = err["msg"].removeprefix("Value error, ")
        out.append(f"{_loc(err['loc'])}: {'unknown field' if err['type'] == 'extra_forbidden' else msg}")
    return out[:8] + ([f"... and {len(out) - 8} more"] if len(out) > 8 else [])


def load_installation(path: Path) -> Installation:
    data, _ = read_toml(path)
    data.pop("kind", None)
    try:
        return Installation.model_validate(data)
    except ValidationError as exc:
        raise CaseError(path, _problems(exc)) from None


def _installations(table: SiteTable, path: Path) -> dict[str, Installation]:
    """Installations named by the table's cases, read from ``<installations_dir>/<id>.toml``."""
    names = {c.installation or table.installation for c in table.cases} - {None}
    out = {}
    folder = path.parent / table.installations_dir
    for name in sorted(names):  # type: ignore[type-var]
        if not (folder / f"{name}.toml").is_file():
            have = sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []
            raise CaseError(path, [f"installation: no file {table.installations_dir}/{name}.toml for {name!r}; "
                                   f"available: {', '.join(have) or 'none'}"])
        inst = load_installation(folder / f"{name}.toml")
        if inst.id != name:
            raise CaseError(path, [f"installation {name!r}: its file declares id {inst.id!r}"])
        out[name] = inst
    return out


def _reference(table: SiteTable, case: Any) -> str | None:
    if case.reference is not None:
        return case.reference
    if case.label is not None:
        return case.label
    if case.actions is not None:
        return json.dumps([a.model_dump(exclude_defaults=True) for a in case.actions])
    if case.plan is not None and case.plan.refuse:
        return "[]"
    return None


def _context(grader: str, inst: Installation | None) -> str:
    if inst is None:
        return ""
    if grader == "actuator":
        return f"AVAILABLE HA ENTITIES ({inst.name}):\n{inst.registry_text()}"
    if grader == "planner":
        return (f"AVAILABLE HA ENTITIES ({inst.name}):\n{inst.registry_text()}\n\n"
                f"AVAILABLE AGENTS:\n{inst.agents_text()}")
    return ""


def expand_table(data: dict[str, Any], path: Path, content_hash: str) -> list[CallSiteCase]:
    """Validate a site table and resolve each of its cases (ids numbered within a sub-group)."""
    try:
        table = SiteTable.model_validate(data)
    except ValidationError as exc:
        raise CaseError(path, _problems(exc)) from None
    installs = _installations(table, path)
    counters: dict[str, int] = {}
    out, seen, problems = [], set(), []
    for n, c in enumerate(table.cases):
        counters[c.group] = counters.get(c.group, 0) + 1
        cid = c.id or f"{table.site}-{c.group}-{counters[c.group]:02d}"
        if cid in seen:
            problems.append(f"case[{n}]: id {cid!r} appears twice")
            continue
        seen.add(cid)
        inst = installs.get(c.installation or table.installation or "")
        ref = _reference(table, c)
        if ref is None:
            problems.append(f"case[{n}] ({cid}): needs a 'reference' output that passes")
            continue
        if c.actions is not None and inst is not None:
            missing = [a.entity_id for a in c.actions if a.entity_id not in inst.entity_ids()]
            if missing:
                problems.append(f"case[{n}] ({cid}): gold action on {missing} which {inst.id} does not own")
                continue
        out.append(CallSiteCase(
            id=cid, site=table.site, grader=table.grader, group=c.group, system_prompt=table.system_prompt,
            prompt=c.prompt, context=_context(table.grader, inst), labels=tuple(table.labels),
            max_tokens=table.max_tokens, installation=inst, naming=c.naming, label=c.label,
            actions=tuple(c.actions) if c.actions is not None else None, plan=c.plan, code=c.code,
            reference=ref, content_hash=content_hash))
    if problems:
        raise CaseError(path, problems[:8] + ([f"... and {len(problems) - 8} more"] if len(problems) > 8 else []))
    return out


def markers_of(case: CallSiteCase) -> tuple[str, ...]:
    names = ["callsite", case.site, case.group]
    if case.installation is not None:
        names.append(case.installation.id)
    if case.naming:
        names.append(f"naming_{case.naming}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class SiteGrade(Grade):
    """A call-site grade: the rules in order, plus facets the statistics read."""

    facets: dict[str, Any] = field(default_factory=dict)

    def message(self, traj: Trajectory) -> str:
        if self.passed or self.first_unmet is None:
            return "passed"
        out = traj.final_answer if traj.final_answer is not None else ""
        shown = " ".join(out.split())
        return (f"failed rule {self.first_unmet.code}: expected {self.first_unmet.expected}; "
                f"observed {self.first_unmet.observed}\n"
                f"output ({traj.termination}): {shown[:300]!r}" + ("..." if len(shown) > 300 else ""))


def facets(case: CallSiteCase, outcome: Outcome | None) -> dict[str, Any]:
    """Kind-specific, scalar facts of one graded call, carried by the record for the statistics."""
    out = case.facets()
    if outcome is not None:
        out["rule"] = outcome.first_failed.code if outcome.first_failed else None
        out.update({k: v for k, v in outcome.details.items() if isinstance(v, (bool, int, float, str)) or v is None})
    return out


def grade_call(case: CallSiteCase, traj: Trajectory, hook: Any = None) -> SiteGrade:
    """Grade the one output; a grader registered through the hook decides first."""
    output = traj.final_answer or ""
    outcome = None
    if hook is not None:
        outcome = hook.pytest_agentfloor_callsite_grade(case=case, output=output)
    if outcome is None:
        grader = GRADERS.get(case.grader)
        if grader is None:
            outcome = Outcome([Verdict(f"{case.grader}.grader", False, f"a grader named {case.grader!r}",
                                       "none registered (implement pytest_agentfloor_callsite_grade)")])
        else:
            outcome = grader(case, output)
    if traj.calls:
        outcome = Outcome([Verdict(f"{case.grader}.no_tools", False, "a text reply (no tools are offered)",
                                   f"tool call {traj.calls[0].name}")] + outcome.verdicts, outcome.details)
    first = outcome.first_failed
    flag = None if first is None else ("truncation" if traj.termination == "truncated" else "wrong_conclusion")
    return SiteGrade(first is None, outcome.verdicts, first, None, flag, facets(case, outcome))


def play_call(case: CallSiteCase, provider: Any, *, model: str, run: int = 0, protocol: str | None = None,
              clock: Any = time.perf_counter) -> Trajectory:
    """One request, recorded as a one-turn trajectory; never raises for model or endpoint failures."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": case.system_prompt},
                                      {"role": "user", "content": case.user_message}]
    traj = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=run,
                      model=model, tools=[], messages=messages, turn_budget=1, call_limit=0, protocol=protocol)
    start = clock()
    try:
        with episode_net() as net:  # time queued for a connection or a hold: queue_s, not the call's
            try:
                reply = provider.complete(messages, [], case=case)
            finally:
                traj.queue_s = round(net.queued_s, 6)
    except ProviderError as exc:
        traj.termination, traj.error = "provider_error", str(exc)
    except MalformedReply as exc:
        traj.turns.append(Turn(index=0, finish_reason="malformed"))
        traj.termination, traj.error, traj.final_answer = "malformed_call", str(exc), ""
    else:
        turn = Turn(index=0, content=reply.content, finish_reason=reply.finish_reason, tokens_in=reply.tokens_in,
                    tokens_out=reply.tokens_out, latency_s=reply.latency_s)
        turn.calls = [ToolCall(turn=0, id=c.id, name=c.name, raw_arguments=c.arguments, hallucinated=True)
                      for c in reply.tool_calls]
        traj.turns.append(turn)
        messages.append({"role": "assistant", "content": reply.content or ""})
        traj.final_answer = reply.content or ""
        traj.termination = "truncated" if reply.finish_reason == "length" else "final_answer"
    traj.wall_s = max(0.0, clock() - start - traj.queue_s)
    return traj


class CallSiteKind:
    name = "callsite"
    markers = MARKERS

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        entries = []
        for case in expand_table(data, path, content_hash):
            entries.append(Entry(case.id, content_hash, (("v0", "i0"),), markers_of(case),
                                 lambda v, i, _c=case: _c))
        return entries

    def play(self, settings: Any, case: CallSiteCase, model: Any, provider: Any, run: int) -> Trajectory:
        # one request without tools: the episode protocol's budgets have nothing to limit; its name is kept
        return play_call(case, provider, model=model.name, run=run, protocol=settings.protocol.name)

    def grade(self, case: CallSiteCase, trajectory: Trajectory, hook: Any) -> SiteGrade:
        return grade_call(case, trajectory, hook)


class InstallationKind:
    """An installation file is data for the call-site tables next to it: it holds no items."""

    name = "installation"
    markers: dict[str, str] = {}

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        try:
            Installation.model_validate(data)
        except ValidationError as exc:
            raise CaseError(path, _problems(exc)) from None
        return []

    def play(self, settings: Any, case: Any, model: Any, provider: Any, run: int) -> Any:  # pragma: no cover
        raise TypeError("an installation has no items")

    def grade(self, case: Any, trajectory: Any, hook: Any) -> Any:  # pragma: no cover
        raise TypeError("an installation has no items")
