"""The five call-site graders, as pure functions of a resolved case and the model's output text.

Each reads the reply with the case's output parser (:mod:`.parsers`: ``deployed`` by default,
``strict``, ``harness``), asking its :class:`.parsers.Reading` rule by rule, and returns verdicts in rule order (the first failed one is what the item reports)
plus details that the statistics read: whether the output acted, refused, substituted a real
device or named an entity the site does not have. The details come from the same parse as the
verdicts, so over-actuation counts what the deployment would have executed. Generated code is
parsed (``ast``), never imported or executed.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from ..grading.obligations import Verdict
from .parsers import Reading, read_code, read_json_array, read_label, reading
from .schema import _ENTITY, AGENT_FUNCTIONS, Action, CallSiteCase, CodegenGold

_KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
DAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PLAN_TYPES: tuple[str, ...] = ("ha_actuator", "scheduled", "dynamic")
HA_STATE_TOPIC = "homeassistant/state_changes/#"
#: agent API methods that are NOT awaitable, and those that must be awaited
SYNC_API: tuple[str, ...] = ("persist", "recall", "subscribe", "window", "declare_contract")
ASYNC_API: tuple[str, ...] = ("publish", "mqtt_get", "log", "alert")
OWN_LLM_MODULES: tuple[str, ...] = ("openai", "anthropic", "ollama", "litellm", "transformers", "llama_cpp")
#: the model clients the authors' harness looks for (the harness parser)
HARNESS_LLM_MODULES: tuple[str, ...] = ("openai", "anthropic", "ollama")


@dataclass(frozen=True)
class Outcome:
    verdicts: list[Verdict]
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def first_failed(self) -> Verdict | None:
        return next((v for v in self.verdicts if not v.ok), None)


Grader = Callable[[CallSiteCase, str], Outcome]


def _ok(code: str) -> Verdict:
    return Verdict(code, True)


def _fail(code: str, expected: str, observed: str) -> Verdict:
    return Verdict(code, False, expected, observed)


def _short(value: Any, n: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def grade_label(case: CallSiteCase, output: str) -> Outcome:
    """Exact label, case ignored: the first word (deployed) or the whole output (strict) is the label."""
    code = case.grader
    got = read_label(output, case.parser_name)
    folded = {lab.casefold(): lab for lab in case.labels}
    label = folded.get(got.casefold())
    if label is None:
        return Outcome([_fail(f"{code}.valid_label", f"one of {', '.join(case.labels)}", _short(output or "(empty)"))],
                       {"label": None})
    if label != case.label:
        return Outcome([_ok(f"{code}.valid_label"), _fail(f"{code}.label", repr(case.label), repr(label))],
                       {"label": label})
    return Outcome([_ok(f"{code}.valid_label"), _ok(f"{code}.label")], {"label": label})


# -- actuator -------------------------------------------------------------------------------
def _num_norm(v: Any) -> Any:
    if isinstance(v, bool):
        return ("bool", v)  # tagged: Python's True == 1.0 would let `true` pass for a number
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, list):
        return tuple(_num_norm(x) for x in v)  # order kept: rgb_color [255, 0, 0] is not [0, 0, 255]
    if isinstance(v, dict):
        return tuple(sorted((str(k), _num_norm(x)) for k, x in v.items()))
    return repr(v)


def action_key(action: dict[str, Any]) -> tuple[Any, ...]:
    """Comparable form of a service call: numbers normalised, service_data compared exactly."""
    return (action.get("domain"), action.get("service"), action.get("entity_id"),
            _num_norm(action.get("service_data") or {}))


def parse_json_array(text: str, parser: str = "strict") -> tuple[list[Any] | None, str]:
    """(array, "") or (None, why): see :func:`.parsers.read_json_array`."""
    return read_json_array(text, parser)


def _service_data_mode(gold: Action, parser: str) -> str:
    """How this gold's ``service_data`` is compared: ``service_data_exact`` wins over the parser's rule."""
    return "exact" if gold.service_data_exact else reading(parser).service_data


def _service_data_ok(gold: Action, got: dict[str, Any], parser: str) -> bool:
    mode, want = _service_data_mode(gold, parser), gold.service_data
    if mode == "object":  # the harness: the whole object, only when the gold has one
        return want is None or (isinstance(got.get("service_data"), dict)
                                and _num_norm(want) == _num_norm(got["service_data"]))
    have = got.get("service_data") or {}
    if not isinstance(have, dict):
        return False
    if mode == "exact":
        return _num_norm(want or {}) == _num_norm(have)
    return all(k in have and _num_norm(v) == _num_norm(have[k]) for k, v in (want or {}).items())


def _gold_shown(gold: Action, parser: str) -> dict[str, Any]:
    """A gold call as a failure message shows it: what this parser requires of it."""
    out: dict[str, Any] = {"domain": gold.domain, "service": gold.service,
                           "entity_id": gold.entity_id if gold.entity_id is not None else gold.entity_id_any}
    if _service_data_mode(gold, parser) == "exact":
        out["service_data"] = gold.service_data or {}
    elif gold.service_data:
        out["service_data"] = gold.service_data
    return out


def call_matches(gold: Action, got: Any, parser: str = "deployed") -> bool:
    """Whether one emitted call satisfies one gold call under the parser's comparison."""
    return (isinstance(got, dict) and got.get("domain") == gold.domain and got.get("service") == gold.service
            and got.get("entity_id") in gold.ids() and _service_data_ok(gold, got, parser))


def _call_shaped(call: Any, rules: Reading) -> bool:
    """A call object the parser reads: string domain, service and entity id; ``service_data`` an object
    (deployed: or null; harness: anything, it is compared only where the gold names it); strict: no other key."""
    if not (isinstance(call, dict) and all(isinstance(call.get(k), str) for k in ("domain", "service", "entity_id"))):
        return False
    if not rules.extra_call_keys and not set(call) <= {"domain", "service", "entity_id", "service_data"}:
        return False
    data = call.get("service_data", {})
    return rules.service_data == "object" or isinstance(data, dict) or (rules.extra_call_keys and data is None)


def grade_actuator(case: CallSiteCase, output: str) -> Outcome:
    """Exact action-set match; an empty gold set requires the refusal []; any extra actuation fails.

    Without an installation (recorded outputs whose registry is withheld) the entity rule is skipped:
    an id outside the registry can never equal a gold id, so the verdict is the same.
    """
    assert case.actions is not None
    parser = case.parser_name
    rules = reading(parser)
    gold_calls = list(case.actions)
    owned = case.installation.entity_ids() if case.installation is not None else None
    details: dict[str, Any] = {"acted": False, "refused": False, "substitution": False, "hallucinated": False,
                               "actionable": bool(gold_calls)}
    verdicts: list[Verdict] = []
    actions, why = read_json_array(output, parser)
    if actions is None:
        return Outcome([_fail("actuator.format", "a JSON array of service calls", why)], details)
    bad = [a for a in actions if not _call_shaped(a, rules)]
    if bad:
        return Outcome([_fail("actuator.format", "objects {domain, service, entity_id, service_data}",
                              _short(bad[0]))], details)
    verdicts.append(_ok("actuator.format"))
    details["acted"] = bool(actions)
    details["refused"] = not actions
    gold_entities = {e for g in gold_calls for e in g.ids()}
    unknown = [a["entity_id"] for a in actions if owned is not None and a["entity_id"] not in owned]
    details["hallucinated"] = bool(unknown)
    details["substitution"] = any(a["entity_id"] not in gold_entities and a["entity_id"] not in unknown
                                  for a in actions)
    if unknown:
        where = case.installation.id if case.installation is not None else "the"
        verdicts.append(_fail("actuator.entity", f"entity ids from {where}'s registry",
                              f"{', '.join(unknown)} not in the registry (hallucinated)"))
        return Outcome(verdicts, details)
    verdicts.append(_ok("actuator.entity"))
    if not gold_calls:
        if actions:
            verdicts.append(_fail("actuator.refusal", "[] (the site has no such device)",
                                  f"{len(actions)} call(s): {_short(actions)}"))
        else:
            verdicts.append(_ok("actuator.refusal"))
        return Outcome(verdicts, details)
    gold_shown = [_gold_shown(g, parser) for g in gold_calls]
    missing = [g for g in gold_calls if not any(call_matches(g, a, parser) for a in actions)]
    extra = [a for a in actions if not any(call_matches(g, a, parser) for g in gold_calls)]
    substituted = [a for a in extra if a["entity_id"] not in gold_entities]
    wrong_call = [a for a in extra if a["entity_id"] in gold_entities]
    if not actions:
        verdicts.append(_fail("actuator.missed", _short(gold_shown), "[] (refused an actionable request)"))
    elif not rules.each_call_matched and not missing and len(actions) == len(gold_calls):
        verdicts.append(_ok("actuator.actions"))  # the harness: same count and every gold call matched
    elif substituted and missing:
        verdicts.append(_fail("actuator.substitution", f"act on {', '.join(sorted(gold_entities))}",
                              f"acted on {', '.join(a['entity_id'] for a in substituted)} instead"))
    elif substituted:
        verdicts.append(_fail("actuator.extra_action", "no actuation beyond the request",
                              f"also {_short(substituted)}"))
    elif wrong_call:
        verdicts.append(_fail("actuator.service_call", _short([_gold_shown(g, parser) for g in missing] or gold_shown),
                              _short(wrong_call)))
    elif missing:
        verdicts.append(_fail("actuator.incomplete", _short(gold_shown),
                              f"missing {_short([_gold_shown(g, parser) for g in missing])}"))
    elif len(actions) != len(gold_calls):
        verdicts.append(_fail("actuator.extra_action", "each call once", f"{len(actions)} calls, "
                              f"{len({action_key(a) for a in actions})} distinct"))
    else:
        verdicts.append(_ok("actuator.actions"))
    return Outcome(verdicts, details)


# -- planner --------------------------------------------------------------------------------
def _step_topics(step: dict[str, Any]) -> list[str]:
    topics = step.get("mqtt_topics")
    return [t for t in topics if isinstance(t, str)] if isinstance(topics, list) else []


def _schedule_problem(schedule: Any) -> str:
    if not isinstance(schedule, dict):
        return "schedule is not an object"
    kind = schedule.get("type")
    if kind in ("daily", "weekly"):
        at = schedule.get("at")
        if not (isinstance(at, str) and _HHMM.match(at)):
            return f"'at' must be HH:MM, got {at!r}"
        if kind == "weekly":
            days = schedule.get("days")
            if not (isinstance(days, list) and days and all(d in DAYS for d in days)):
                return f"'days' must be a non-empty list of {', '.join(DAYS)}, got {days!r}"
        return ""
    if kind == "interval":
        sec = schedule.get("seconds")
        if isinstance(sec, bool) or not isinstance(sec, (int, float)) or sec <= 0:
            return f"'seconds' must be a positive number, got {sec!r}"
        return ""
    return f"schedule type must be daily, weekly or interval, got {kind!r}"


def _matches(want: Any, got: Any) -> bool:
    if isinstance(want, list) and isinstance(got, list):
        return sorted(map(str, want)) == sorted(map(str, got))
    return _num_norm(want) == _num_norm(got)


def _present(token: Any, text: str) -> bool:
    """A token (or any one of a list of alternatives) in the lower-cased serialized output."""
    if isinstance(token, list):
        return any(str(t).lower() in text for t in token)
    return str(token).lower() in text


def grade_planner(case: CallSiteCase, output: str) -> Outcome:
    """A plan of allowed step types that meets the case's requirements; infeasible -> [].

    Both parsers: the refusal rule of seed 001 (an infeasible request must get []) and the case's
    requirements. The strict parser also checks each step's fields, kebab-case names, registry
    membership of every action entity, schedules and that every subscribed topic is published;
    the deployed one, like the authors' harness, checks names and descriptions are present.
    """
    assert case.plan is not None
    gold, parser = case.plan, case.parser_name
    rules = reading(parser)
    details: dict[str, Any] = {"refused": False, "actionable": not gold.refuse}
    steps, why = read_json_array(output, parser)
    if steps is None:
        return Outcome([_fail("planner.format", "a JSON array of pipeline steps", why)], details)
    if not all(isinstance(s, dict) for s in steps):
        return Outcome([_fail("planner.format", "a JSON array of objects", _short(steps))], details)
    v = [_ok("planner.format")]
    details["refused"] = not steps
    if gold.refuse and rules.infeasible_is_refusal:
        v.append(_ok("planner.refusal") if not steps else
                 _fail("planner.refusal", "[] (the site cannot support this pipeline)", f"{len(steps)} step(s)"))
        return Outcome(v, details)
    if not steps:
        why = "a plan (the authors' harness fails every empty plan)" if gold.refuse else "a plan (the request is feasible)"
        return Outcome(v + [_fail("planner.refusal", why, "[]")], details)
    v.append(_ok("planner.refusal"))

    allowed = tuple(gold.allowed_types) if gold.allowed_types is not None else PLAN_TYPES
    for s in steps:
        if s.get("type") not in allowed:
            return Outcome(v + [_fail("planner.type", f"type in {', '.join(allowed)}", repr(s.get("type")))], details)
        if rules.light_plan_shape:
            if not (s.get("name") and s.get("description")):
                return Outcome(v + [_fail("planner.type", "a name and a description", _short(s))], details)
            continue
        if not (isinstance(s.get("name"), str) and _KEBAB.match(s["name"])):
            return Outcome(v + [_fail("planner.type", "a kebab-case name", repr(s.get("name")))], details)
        problem = _step_fields_problem(s)
        if problem:
            return Outcome(v + [_fail("planner.fields", problem, _short(s))], details)
    v.append(_ok("planner.type"))
    if not rules.light_plan_shape:
        v.append(_ok("planner.fields"))
        failed = _planner_strict(steps, case)
        if failed is not None:
            return Outcome(v + failed[0], {**details, **failed[1]})
        v += [_ok("planner.entity"), _ok("planner.schedule"), _ok("planner.topic")]

    used = [a.get("entity_id") for s in steps if s.get("type") == "ha_actuator"
            for a in (s.get("actions") if isinstance(s.get("actions"), list) else []) if isinstance(a, dict)]
    subscribed = [t for s in steps for t in _step_topics(s)]
    types = [s["type"] for s in steps]
    text = json.dumps(steps)
    lowered = text.lower()
    problems = []
    for e in gold.entities:
        if e not in used and e not in text:
            problems.append(f"does not use {e}")
    for t in gold.topics:
        if t not in subscribed and t not in text:
            problems.append(f"does not reuse topic {t}")
    for t in gold.types:
        if t not in types:
            problems.append(f"has no {t} step")
    for t in gold.forbid_types:
        if t in types:
            problems.append(f"adds a {t} step where an existing agent already does the job")
    for tok in gold.must_contain:
        if not _present(tok, lowered):
            problems.append(f"does not mention {' or '.join(tok) if isinstance(tok, list) else tok}")
    for tok in gold.must_not_contain:
        if _present(tok, lowered):
            problems.append(f"mentions {' or '.join(tok) if isinstance(tok, list) else tok}, which it must not")
    for agent in gold.delegates:
        if agent.lower() not in lowered:
            problems.append(f"does not delegate to the running agent {agent}")
    if gold.schedule:
        scheds = [s.get("schedule") for s in steps if s["type"] == "scheduled"]
        if not any(isinstance(sc, dict) and all(_matches(w, sc.get(k)) for k, w in gold.schedule.items())
                   for sc in scheds):
            problems.append(f"no schedule carrying {_short(gold.schedule)}")
    if gold.max_steps is not None and len(steps) > gold.max_steps:
        problems.append(f"{len(steps)} steps (at most {gold.max_steps})")
    if problems:
        return Outcome(v + [_fail("planner.requirements", "the plan the request asks for", "; ".join(problems))],
                       details)
    v.append(_ok("planner.requirements"))
    return Outcome(v, details)


def _step_fields_problem(s: dict[str, Any]) -> str:
    """What a step of a known type lacks to run (strict parser), or ""."""
    if s["type"] == "ha_actuator":
        acts = s.get("actions")
        if not _step_topics(s):
            return "ha_actuator needs a non-empty mqtt_topics list"
        if not (isinstance(acts, list) and acts and all(isinstance(a, dict) for a in acts)):
            return "ha_actuator needs a non-empty actions list"
    elif s["type"] == "scheduled":
        if not isinstance(s.get("publish_topic"), str) or not s["publish_topic"]:
            return "scheduled needs a publish_topic"
    elif s["type"] == "dynamic":
        if not isinstance(s.get("code"), str):
            return "dynamic needs its code as a string"
        if isinstance(s.get("poll_interval"), bool) or not isinstance(s.get("poll_interval"), (int, float)):
            return "dynamic needs a numeric poll_interval"
    return ""


def _planner_strict(steps: list[dict[str, Any]], case: CallSiteCase) -> tuple[list[Verdict], dict[str, Any]] | None:
    """The strict parser's rules after the fields: entity, schedule, topic (None: all hold)."""
    inst = case.installation
    done: list[Verdict] = []
    used = [a.get("entity_id") for s in steps if s["type"] == "ha_actuator" for a in s["actions"]]
    if inst is not None:
        owned = inst.entity_ids()
        unresolved = [e for e in used if e not in owned]
        if unresolved:
            e = unresolved[0]
            described = not (isinstance(e, str) and _ENTITY.match(e))
            return [_fail("planner.entity", f"entity ids from {inst.id}'s registry",
                          f"{e!r} " + ("is a description, not an entity id" if described
                                       else "is not in the registry"))], {"described": described}
    done.append(_ok("planner.entity"))

    bad_sched = [(s["name"], _schedule_problem(s.get("schedule"))) for s in steps if s["type"] == "scheduled"]
    bad_sched = [b for b in bad_sched if b[1]]
    if bad_sched:
        return done + [_fail("planner.schedule", "a well-formed schedule",
                             f"{bad_sched[0][0]}: {bad_sched[0][1]}")], {}
    done.append(_ok("planner.schedule"))

    published = (set(inst.topics()) if inst is not None else set()) | {
        s["publish_topic"] for s in steps if s["type"] == "scheduled"}
    subscribed = [t for s in steps for t in _step_topics(s)]
    dangling = [t for t in subscribed if t not in published and t != HA_STATE_TOPIC]
    if dangling:
        return done + [_fail("planner.topic", "topics some agent publishes (an existing agent, a step "
                             f"of this plan or {HA_STATE_TOPIC})", f"nobody publishes {dangling[0]!r}")], {}
    return None


# -- codegen --------------------------------------------------------------------------------
def _agent_method(call: ast.Call) -> str | None:
    """'subscribe' for agent.subscribe(...), 'llm.chat' for agent.llm.chat(...)."""
    f = call.func
    parts = []
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name) and f.id == "agent" and parts:
        return ".".join(reversed(parts))
    return None


def _called_names(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            m = _agent_method(node)
            if m:
                out.add(f"agent.{m}")
            f = node.func
            if isinstance(f, ast.Attribute):
                out.add(f.attr)
            elif isinstance(f, ast.Name):
                out.add(f.id)
    return out


def _is_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value) and test.value is not None


def _stub(fn: ast.AST) -> bool:
    """A body of nothing but ``pass``, a docstring or ``...``: a stub, not an agent."""
    body = getattr(fn, "body", [])
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
               for s in body)


def _third_party(node: ast.Import | ast.ImportFrom) -> list[str]:
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    if isinstance(node, ast.ImportFrom) and node.level:  # a relative import cannot resolve in exec'd code
        return [node.module or "."]
    return [n for n in names if n and n.split(".")[0] not in sys.stdlib_module_names]


def grade_codegen(case: CallSiteCase, output: str) -> Outcome:
    """Code that parses, defines the required async functions and keeps the agent-API contract.

    The deployed parser drops fence lines (a truncated reply's unclosed fence too), allows
    standard-library imports at module level (they cannot fail when the module body runs) and
    fails a required function whose body is a stub; the strict parser fails any module-level import.
    The harness parser checks only what the authors' harness checks (:func:`_harness_findings`).
    """
    assert case.code is not None
    gold, parser = case.code, case.parser_name
    rules = reading(parser)
    source = read_code(output, parser)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return Outcome([_fail("codegen.parse", "Python source", f"syntax error line {exc.lineno}: {exc.msg}")])
    v = [_ok("codegen.parse")]
    failed = _runtime_contract(tree, gold, rules) if rules.runtime_contract else _harness_findings(tree, gold)
    v += failed
    if not v[-1].ok:
        return Outcome(v)

    called = _called_names(tree)
    missing = [u for u in gold.uses if u not in called]
    lowered = source.lower()
    missing += [f"'{t}'" for t in gold.must_contain if t.lower() not in lowered]
    banned = [t for t in gold.must_not_contain if t.lower() in lowered]
    if missing or banned:
        return Outcome(v + [_fail("codegen.uses", f"calls {', '.join(gold.uses)}" if gold.uses else "the task's API",
                                  f"never calls {', '.join(missing)}" if missing else f"contains {banned[0]!r}")])
    v.append(_ok("codegen.uses"))
    return Outcome(v)


def _runtime_contract(tree: ast.Module, gold: CodegenGold, rules: Reading) -> list[Verdict]:
    """Deployed and strict: every prompt rule that breaks the running agent; verdicts up to the first failure."""
    v: list[Verdict] = []
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in gold.functions:
        fn = top.get(name)
        if fn is None:
            return v + [_fail("codegen.functions", f"async def {name}(...) at module level", "not defined")]
        if not isinstance(fn, ast.AsyncFunctionDef):
            return v + [_fail("codegen.functions", f"async def {name}", f"def {name} (not async)")]
    for name, fn in top.items():
        if name in AGENT_FUNCTIONS:
            n = len(fn.args.posonlyargs) + len(fn.args.args)
            if n != AGENT_FUNCTIONS[name] or fn.args.vararg or fn.args.kwonlyargs:
                return v + [_fail("codegen.functions", f"{name} takes {AGENT_FUNCTIONS[name]} argument(s)",
                                  f"{n} positional" + (" plus extras" if fn.args.vararg or fn.args.kwonlyargs
                                                       else ""))]
            if not isinstance(fn, ast.AsyncFunctionDef):
                return v + [_fail("codegen.functions", f"async def {name}", f"def {name} (not async)")]
    v.append(_ok("codegen.functions"))

    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if rules.stdlib_imports_allowed:
        imports = [n for n in imports if _third_party(n)]
        if imports:
            return v + [_fail("codegen.module_import", "third-party imports inside functions",
                              f"module-level import of {_third_party(imports[0])[0]} at line {imports[0].lineno}")]
    elif imports:
        return v + [_fail("codegen.module_import", "imports inside functions",
                          f"module-level import at line {imports[0].lineno}")]
    v.append(_ok("codegen.module_import"))
    if rules.stub_bodies_fail and not gold.allow_empty_bodies:
        stubs = [name for name in gold.functions if _stub(top[name])]
        if stubs:
            return v + [_fail("codegen.stub", f"a body for {stubs[0]}()", "only pass, a docstring or ...")]
        v.append(_ok("codegen.stub"))

    awaited = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Await)}
    # an unawaited agent.log only loses its line (a RuntimeWarning, the agent runs on): a failure where the
    # task is to log, or under a reading that fails every one
    log_matters = rules.unawaited_log_fails or "agent.log" in gold.uses or any(
        "agent.log" in t.lower() for t in gold.must_contain)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            m = _agent_method(node)
            if m in SYNC_API and id(node) in awaited:
                return v + [_fail("codegen.await_sync", f"agent.{m}(...) called without await (it is synchronous)",
                                  f"await agent.{m}(...) at line {node.lineno}")]
            if m == "log" and not log_matters:
                continue
            if (m in ASYNC_API or m == "llm.chat") and id(node) not in awaited:
                return v + [_fail("codegen.await_sync", f"await agent.{m}(...)",
                                  f"agent.{m}(...) not awaited at line {node.lineno}")]
    v.append(_ok("codegen.await_sync"))

    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _agent_method(node) == "subscribe":
            if len(node.args) + len(node.keywords) < 2:
                return v + [_fail("codegen.subscribe", "agent.subscribe(topic, callback)",
                                  f"no callback at line {node.lineno}")]
            cb = node.args[1] if len(node.args) > 1 else node.keywords[-1].value
            target = funcs.get(cb.id) if isinstance(cb, ast.Name) else None
            if target is None or not isinstance(target, ast.AsyncFunctionDef):
                return v + [_fail("codegen.subscribe", "an async function as the callback",
                                  f"{ast.unparse(cb)} at line {node.lineno}")]
            n = len(target.args.posonlyargs) + len(target.args.args)
            if n != 1 or target.args.vararg:
                return v + [_fail("codegen.subscribe", f"callback {target.name}(payload) with one argument",
                                  f"{n} argument(s)")]
    v.append(_ok("codegen.subscribe"))

    process = top.get("process")
    if process is not None:
        for node in ast.walk(process):
            if isinstance(node, ast.While) and _is_true(node.test):
                return v + [_fail("codegen.loop", "one iteration per process() call",
                                  f"endless while loop at line {node.lineno}")]
    v.append(_ok("codegen.loop"))

    own = [alias.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
           for alias in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])
           if alias.name.split(".")[0] in OWN_LLM_MODULES]
    if own:
        return v + [_fail("codegen.own_llm", "agent.llm.chat for model calls", f"imports {own[0]}")]
    v.append(_ok("codegen.own_llm"))
    return v


def _harness_findings(tree: ast.Module, gold: CodegenGold) -> list[Verdict]:
    """The harness parser: the authors' harness's checks on the dict form of a key, and nothing else.

    The required functions are ``async def`` anywhere (no arity, not necessarily at module level); a
    module-level import fails when its top-level package is not the standard library (``from .x``
    names ``x``); ``await <anything>.subscribe(...)`` fails, and so does a ``.subscribe(...)`` call
    with fewer than two positional arguments; importing ``openai``, ``anthropic`` or ``ollama``
    anywhere fails; an async function named as a required one whose body is a stub fails (every
    definition of that name, nested or redefined, unless ``allow_empty_bodies``). Their
    ``awaited_window`` finding never fires (it reads an attribute ``ast`` never sets), so it is not here.
    """
    v: list[Verdict] = []
    async_defs = [n for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)]
    names = {n.name for n in async_defs}
    absent = [f for f in gold.functions if f not in names]
    if absent:
        return [_fail("codegen.functions", f"async def {absent[0]}(...)", "not defined")]
    v.append(_ok("codegen.functions"))

    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            foreign = [m for m in modules if m and m.split(".")[0] not in sys.stdlib_module_names]
            if foreign:
                return v + [_fail("codegen.module_import", "third-party imports inside functions",
                                  f"module-level import of {foreign[0]} at line {node.lineno}")]
    v.append(_ok("codegen.module_import"))
    if not gold.allow_empty_bodies:
        stubs = [n for n in async_defs if n.name in gold.functions and _stub(n)]
        if stubs:
            return v + [_fail("codegen.stub", f"a body for {stubs[0].name}()", "only pass, a docstring or ...")]
        v.append(_ok("codegen.stub"))

    for node in ast.walk(tree):
        if (isinstance(node, ast.Await) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "subscribe"):
            return v + [_fail("codegen.await_sync", "subscribe(...) called without await (it is synchronous)",
                              f"await ...subscribe(...) at line {node.lineno}")]
    v.append(_ok("codegen.await_sync"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "subscribe"
                and len(node.args) < 2):
            return v + [_fail("codegen.subscribe", "subscribe(topic, callback), both positional",
                              f"no positional callback at line {node.lineno}")]
    v.append(_ok("codegen.subscribe"))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            named = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
            own = [n for n in named if n and n.split(".")[0] in HARNESS_LLM_MODULES]
            if own:
                return v + [_fail("codegen.own_llm", "agent.llm.chat for model calls", f"imports {own[0]}")]
    v.append(_ok("codegen.own_llm"))
    return v


GRADERS: dict[str, Grader] = {
    "intent": grade_label,
    "action_label": grade_label,
    "actuator": grade_actuator,
    "planner": grade_planner,
    "codegen": grade_codegen,
}
