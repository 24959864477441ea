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
from string import Template
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from pydantic import ValidationError

from ..grading import Grade
from ..grading.obligations import Verdict
from ..kindspec import Entry
from ..providers.base import MalformedReply, ProviderError
from ..providers.endpoints import episode_net
from ..render import safe_text
from ..suite.loader import CaseError, _loc, read_toml
from ..trajectory import MAX_CALLS_PER_TURN, ToolCall, Trajectory, Turn
from .graders import GRADERS, Outcome
from .guard import guarded
from .schema import CallSiteCase, Installation, SiteCase, SiteTable, _is_calls

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..options import Options
    from ..providers.base import Provider
    from ..report.sections import ReportSection


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


def _reference(table: SiteTable, case: SiteCase) -> str | None:
    if case.reference is not None:
        return case.reference
    if case.label is not None:
        return case.label
    if case.actions is not None:
        return json.dumps([a.example() for a in case.actions])
    if case.plan is not None and case.plan.refuse:
        return "[]"
    return None


#: the block appended to the user turn at call time, per grader (string.Template placeholders);
#: a site table overrides it with ``context_template`` (docs/callsite.md, "The context block")
CONTEXT_TEMPLATES: dict[str, str] = {
    "actuator": "AVAILABLE HA ENTITIES ($name):\n$registry",
    "planner": "AVAILABLE HA ENTITIES ($name):\n$registry\n\nAVAILABLE AGENTS:\n$agents",
}
#: what a context template may name
CONTEXT_FIELDS: tuple[str, ...] = ("name", "id", "registry", "entity_ids", "agents")


def context_values(inst: Installation) -> dict[str, str]:
    return {"name": inst.name, "id": inst.id, "registry": inst.registry_text(),
            "entity_ids": "\n".join(e.id for e in inst.entities), "agents": inst.agents_text()}


def check_template(template: object) -> list[str]:
    """Problems of a table's ``context_template`` (empty: usable)."""
    if not isinstance(template, str):
        return [f"context_template: must be a string, not {type(template).__name__}"]
    found = list(Template.pattern.finditer(template))
    names = {m.group("named") or m.group("braced") for m in found if m.group("named") or m.group("braced")}
    bad = [m for m in found if m.group("invalid") is not None]
    if bad:
        return [f"context_template: a '$' not followed by a placeholder at character {bad[0].start()} "
                "(write $$ for a literal $)"]
    unknown = sorted(names - set(CONTEXT_FIELDS))
    if unknown:
        return [f"context_template: unknown placeholder ${unknown[0]}; known: "
                + ", ".join(f"${n}" for n in CONTEXT_FIELDS)]
    return []


def _context(grader: str, inst: Installation | None, template: str | None = None) -> str:
    if inst is None:
        return ""
    text = template if template is not None else CONTEXT_TEMPLATES.get(grader)
    return "" if text is None else Template(text).substitute(context_values(inst))


def expand_table(data: dict[str, Any], path: Path, content_hash: str) -> list[CallSiteCase]:
    """Validate a site table and resolve each of its cases (ids numbered within a sub-group)."""
    data = dict(data)
    template = data.pop("context_template", None)  # the context block's format (see CONTEXT_TEMPLATES)
    if template is not None and check_template(template):
        raise CaseError(path, check_template(template))
    try:
        table = SiteTable.model_validate(data)
    except ValidationError as exc:
        raise CaseError(path, _problems(exc)) from None
    installs = _installations(table, path)
    counters: dict[str, int] = {}
    out, seen, problems = [], set(), []
    for n, c in enumerate(table.cases):
        if c.review == "dropped":  # a reviewer dropped it: kept in the file, never collected
            continue
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
            missing = [e for a in c.actions for e in a.ids() if e not in inst.entity_ids()]
            if missing:
                problems.append(f"case[{n}] ({cid}): gold action on {missing} which {inst.id} does not own")
                continue
        if c.plan is not None and c.plan.delegates and inst is not None:
            running = {a.name for a in inst.agents}
            unknown = [d for d in c.plan.delegates if d not in running]
            if unknown:
                problems.append(f"case[{n}] ({cid}): plan.delegates names {unknown}, not agents running at "
                                f"{inst.id} ({', '.join(sorted(running)) or 'none'})")
                continue
        out.append(CallSiteCase(
            id=cid, site=table.site, grader=table.grader, group=c.group, system_prompt=table.system_prompt,
            prompt=c.prompt, context=_context(table.grader, inst, template), labels=tuple(table.labels),
            max_tokens=table.max_tokens, parser=table.parser, installation=inst, naming=c.naming, label=c.label,
            actions=tuple(c.actions) if c.actions is not None else None, plan=c.plan, code=c.code,
            reference=ref, content_hash=content_hash,
            messages_json=json.dumps(c.messages) if c.messages is not None else None,
            tools_json=json.dumps(table.tools) if table.tools else None, review=c.review,
            calls=c.provenance.count if c.provenance is not None else None, site_calls=table.site_calls))
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
        # the observed text is the model's: no escape sequence or lone surrogate reaches a terminal
        return safe_text(f"failed rule {self.first_unmet.code}: expected {self.first_unmet.expected}; "
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
        else:  # total: a verdict for any output, or GraderCrashed (the harness's error, record kept)
            outcome = guarded(case.grader, grader, case, output)
    if traj.calls and not case.tools_json:
        outcome = Outcome([Verdict(f"{case.grader}.no_tools", False, "a text reply (no tools are offered)",
                                   f"tool call {traj.calls[0].name}")] + outcome.verdicts, outcome.details)
    first = outcome.first_failed
    flag = None if first is None else ("truncation" if traj.termination == "truncated" else "wrong_conclusion")
    found = facets(case, outcome)
    if case.review is not None and case.tools_json:  # a captured site that can act: acting versus refusing
        found["acted"] = _is_calls(output)
        found["refused"] = not found["acted"]
    return SiteGrade(first is None, outcome.verdicts, first, None, flag, found)


def play_call(case: CallSiteCase, provider: Provider, *, model: str, run: int = 0, protocol: str | None = None,
              clock: Any = time.perf_counter) -> Trajectory:
    """One request, recorded as a one-turn trajectory; never raises for model or endpoint failures."""
    messages: list[dict[str, Any]] = case.conversation()
    tools = case.tool_schemas()
    traj = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=run,
                      model=model, tools=[t.get("function", t).get("name", "") for t in tools], messages=messages,
                      turn_budget=1, call_limit=0, protocol=protocol)
    start = clock()
    try:
        with episode_net() as net:  # time queued for a connection or a hold: queue_s, not the call's
            try:
                reply = provider.complete(messages, tools, case=case)
            finally:
                traj.queue_s = round(net.queued_s, 6)
    except ProviderError as exc:
        traj.termination, traj.error = "provider_error", str(exc)
    except MalformedReply as exc:
        traj.turns.append(Turn(index=0, finish_reason="malformed"))
        traj.termination, traj.error, traj.final_answer = "malformed_call", str(exc), ""
    else:
        turn = Turn(index=0, content=reply.content, finish_reason=reply.finish_reason, tokens_in=reply.tokens_in,
                    tokens_out=reply.tokens_out, latency_s=reply.latency_s,
                    usage_invalid=list(getattr(reply, "usage_invalid", None) or []),
                    cost_usd=getattr(reply, "cost_usd", None))
        kept = reply.tool_calls[:MAX_CALLS_PER_TURN]  # bounded: the rest are counted, not stored
        turn.calls_rejected = len(reply.tool_calls) - len(kept)
        turn.calls = [ToolCall(turn=0, id=c.id, name=c.name, raw_arguments=c.arguments, hallucinated=True)
                      for c in kept]
        traj.turns.append(turn)
        messages.append({"role": "assistant", "content": reply.content or ""})
        traj.final_answer = reply.content or ""
        if tools and kept:  # a case that offers tools: the calls are the answer, read as a JSON list
            traj.final_answer = calls_text([(c.name, c.arguments) for c in kept])
        traj.termination = "truncated" if reply.finish_reason == "length" else "final_answer"
    traj.wall_s = max(0.0, clock() - start - traj.queue_s)
    return traj


def calls_text(calls: list[tuple[str, str]]) -> str:
    """Tool calls as the JSON list the ``tool_calls`` grader reads: [{"name", "arguments"}]."""
    out = []
    for name, args in calls:
        try:
            value: Any = json.loads(args)
        except (TypeError, json.JSONDecodeError):
            value = args
        out.append({"name": name, "arguments": value})
    return json.dumps(out, sort_keys=True)


def _constant(case: CallSiteCase) -> Callable[[str, str], CallSiteCase]:
    """A call-site case has one item: every (variant, instance) resolves to the case itself."""
    return lambda variant, instance: case


class CallSiteKind:
    name = "callsite"
    markers = MARKERS
    sends_tools = False  # the tool probe never gates these items (probe.gate)

    def sections(self) -> list[ReportSection]:
        """The call-site section of every report (statistics imported only when a report is built)."""
        from .tables import section

        return [section()]

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        entries = []
        for case in expand_table(data, path, content_hash):
            entries.append(Entry(case.id, content_hash, (("v0", "i0"),), markers_of(case), _constant(case)))
        return entries

    def play(self, options: Options, case: CallSiteCase, model: ModelConfig, provider: Provider,
             run: int) -> Trajectory:
        # one request without tools: the episode protocol's budgets have nothing to limit; its name is kept
        return play_call(case, provider, model=model.name, run=run, protocol=options.protocol.name)

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

    def play(self, options: Options, case: Any, model: ModelConfig, provider: Provider,
             run: int) -> NoReturn:  # pragma: no cover
        raise TypeError("an installation has no items")

    def grade(self, case: Any, trajectory: Trajectory, hook: Any) -> NoReturn:  # pragma: no cover
        raise TypeError("an installation has no items")
