"""Options, ini settings and the Options each pytest process resolves from them (once, immutable).

Every option has an ini equivalent in the "agentfloor" group; bad values are usage errors that
name the option and what would be valid.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:  # this module is imported by every pytest run: everything heavy loads on use
    from .config import ModelConfig
    from .protocol import Protocol

#: kept literal (not imported from stats, protocol, suite.schema) so that registering the options,
#: which every pytest run of the environment does, loads neither pydantic nor numpy/scipy;
#: tests/test_inert.py checks they equal the modules' own
INTERVAL_METHODS = ("guarded", "paper")
PROTOCOL_NAMES = ("agentfloor", "tbb", "legacy")
DEFAULT_PROTOCOL = "agentfloor"
TIERS: tuple[str, ...] = ("A0", "A", "B", "C", "D", "E")
DECISION_BOUNDS = ("two-sided", "one-sided")
CALLSITE_VERDICTS = ("raw", "holm")  # callsite.stats.VERDICTS
CALLSITE_PARSERS = ("deployed", "strict", "harness")  # callsite.parsers.PARSERS

REPORT_MODES = ("none", "term", "all")
#: upper bounds that catch a typo (an extra zero) before it books days of model time
MAX_RUNS = 1000
MAX_TOKEN_BUDGET = 100_000_000
MAX_EPISODE_TIMEOUT_S = 7 * 24 * 3600.0
#: a scale past this makes budgets no episode ever reaches: a model that never stops would end on the
#: harness's timeout (an infrastructure error) instead of failing its step budget
MAX_STEP_BUDGET_SCALE = 100.0
#: chosen from benchmarks/bench_throughput.py (docs/scaling.md)
DEFAULT_CONCURRENCY = 64
MAX_CONCURRENCY = 4096


@dataclass(frozen=True, eq=False)  # eq (and so __hash__) over ~60 fields costs ms in every pytest run; unused
class Options:
    """What the user asked for, resolved once per pytest process (controller or worker) from the
    command line and the ini file; never changed afterwards. What the run holds beside it (providers,
    logs, probes, ...) is runstate.RunState."""

    models: Mapping[str, ModelConfig]
    selected: tuple[ModelConfig, ...]
    runs: int
    variants: frozenset[str] | None
    instances: frozenset[str] | None
    report_mode: str
    report_dir: Path
    token_budget: int | None
    episode_timeout: float
    protocol: "Protocol" = field(default_factory=lambda: _default_protocol())
    reference: str | None = None
    callsite_weights: Mapping[str, float] | None = None  # relative call frequency per call site (routing)
    callsite_parser: str | None = None  # output parser of call-site tables that name none (callsite/parsers.py)
    callsite_verdict: str = "raw"  # which McNemar p decides a call site's "differs": raw (exact) or holm
    margin_pp: float = 10.0
    #: --agentfloor-routing-out: where the controller writes routing.json (and its LiteLLM YAML beside it)
    routing_out: Path | None = None
    cluster: str | None = None
    interval_method: str = "guarded"
    decision_bound: str = "two-sided"
    infra_threshold: float = 0.05
    infra_as_failure: bool = False
    probe: bool = True
    run_non_capable: bool = False
    record: bool = False
    replay: bool = False
    resume: bool = False
    #: the gate's options, read on the controller of a benchmark run (None: no gate, and on workers)
    gate: "GateSpec | None" = None
    #: (K, N) with --shard K/N: this process runs shard K of N of the selected items
    shard: tuple[int, int] | None = None
    #: episodes of upcoming items played at once in this process (threads; 1 = one at a time)
    concurrency: int = 1
    progress: str = "auto"
    progress_interval: float | None = None
    #: --agentfloor-plan: show what would run and its estimated cost, call no model
    plan: bool = False
    #: --max-cost: stop running items once this session's records cost this much (USD)
    max_cost: float | None = None
    #: a benchmark run: case files targeted or a model option given; otherwise the plugin stays inert
    active: bool = True
    #: --judge: the model that decides the semantic predicates (None: their keyword stand-ins)
    judge: ModelConfig | None = None
    judge_cache: str = "readwrite"
    #: pressures applied to every ladder case (--menu, --encoding); None = the case's own
    menu: int | None = None
    encoding: str | None = None

    @property
    def pressure_tag(self) -> str:
        """Appended to a pressured ladder case's content hash, so --resume never mixes cells."""
        if self.menu is None and self.encoding is None:
            return ""
        return f"+V{self.menu if self.menu is not None else 'own'}.{self.encoding or 'raw'}"


def _default_protocol() -> "Protocol":
    from .protocol import PROTOCOLS

    return PROTOCOLS[DEFAULT_PROTOCOL]


@dataclass
class GateSpec:
    """What the gate checks: against a baseline's runs (non-inferiority), and/or absolute floors."""

    baseline: Path | None
    margin_pp: float
    tiers: list[str] | None
    floors: dict[str, float]
    baseline_model: str | None
    min_pairs: int = 0
    decision: str = "two-sided"
    floor_bound: str = "point"
    allow_changed_cases: bool = False


def gate_spec(config: pytest.Config) -> GateSpec | None:
    """The gate's options, checked (an error names the option, or the ini key and its file)."""
    try:
        return _gate_spec(config)
    except pytest.UsageError as exc:
        raise name_the_source(config, exc) from None


def _gate_spec(config: pytest.Config) -> GateSpec | None:
    raw = str(_opt(config, "agentfloor_baseline") or "")
    floors_raw = [f for chunk in (_opt(config, "agentfloor_gate_floors") or []) for f in str(chunk).split(",") if f]
    if not raw and not floors_raw:
        if config.getoption("agentfloor_gate_tiers"):
            raise pytest.UsageError("--gate-tiers needs --agentfloor-baseline PATH or --gate-floor 'TIER>=X'")
        return None
    from .gate import FLOOR_BOUNDS, GateError, load_baseline, parse_floor  # numpy/scipy load only for a gate

    margin = _float_opt(config, "agentfloor_gate_margin", "--gate-margin", 0.0, 100.0, "percentage points")
    try:
        floors = dict(parse_floor(f) for f in floors_raw)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    tiers = [t.strip().removeprefix("tier_") for t in str(_opt(config, "agentfloor_gate_tiers")).split(",") if t.strip()]
    bad = [t for t in tiers if t not in TIERS]
    if bad:
        raise pytest.UsageError(f"--gate-tiers: unknown tier(s) {bad}; valid: {', '.join(TIERS)}")
    min_pairs = _int_opt(config, "agentfloor_gate_min_pairs", "--gate-min-pairs", minimum=0)
    floor_bound = _choice(config, "agentfloor_gate_floor_bound", "--gate-floor-bound", FLOOR_BOUNDS)
    decision = _choice(config, "agentfloor_noninferiority_bound", "--noninferiority-bound", DECISION_BOUNDS)
    if not raw:
        return GateSpec(None, margin, tiers or None, floors, None, min_pairs=min_pairs, decision=decision,
                        floor_bound=floor_bound)
    path = Path(config.invocation_params.dir) / raw
    try:  # read it now: a bad baseline must stop the session before the first item, not after the last
        runs, _ = load_baseline(path)
    except GateError as exc:  # named as the user wrote it
        raise pytest.UsageError(str(exc).replace(str(path), raw)) from None
    baseline_model = str(_opt(config, "agentfloor_gate_baseline_model")) or None
    in_file = sorted({r["model"] for r in runs})
    if baseline_model is not None and baseline_model not in in_file:
        raise pytest.UsageError(f"--gate-baseline-model: {baseline_model!r} is not in --agentfloor-baseline {raw} "
                                f"(it holds {', '.join(in_file)})")
    if baseline_model is None and len(in_file) > 1:
        raise pytest.UsageError(f"--agentfloor-baseline {raw} holds several models ({', '.join(in_file)}); "
                                "name the incumbent with --gate-baseline-model")
    return GateSpec(path, margin, tiers or None, floors, baseline_model, min_pairs=min_pairs, decision=decision,
                    floor_bound=floor_bound, allow_changed_cases=bool(_opt(config, "agentfloor_allow_changed_cases")))


options_key = pytest.StashKey["Options"]()


#: the prefix of every option but --model: no well-known plugin (pytest-replay's --replay,
#: pytest-rerunfailures' --reruns, pytest-repeat's --count, pytest-timeout's --timeout, ...) nor a
#: user's conftest is likely to use it
PREFIX = "--agentfloor-"
#: earlier spellings kept as aliases: used by no well-known plugin and unlikely in a user's conftest
ALIASES: frozenset[str] = frozenset({
    "--variants", "--instances", "--models-file", "--token-budget", "--episode-timeout", "--bootstrap-cluster",
    "--infra-as-failure", "--no-probe", "--run-non-capable", "--gate-margin", "--gate-tiers", "--gate-floor",
    "--gate-baseline-model", "--step-budget-scale", "--max-cost", "--gate-min-pairs", "--gate-floor-bound",
    "--interval-method",
    "--noninferiority-bound", "--infra-threshold", "--callsite-weights",
})


#: the short spellings: added after every plugin and initial conftest has added its options, and only
#: those still free (add_free_aliases); --model is the one a user's conftest most often has
SHORT = frozenset({"--model", *ALIASES})


def option_names(opt: str) -> list[str]:
    """The names one option is known by: the prefixed one first, then its short spelling (if any)."""
    if opt.startswith(PREFIX):
        return [opt]
    return [PREFIX + opt.removeprefix("--"), *([opt] if opt in SHORT else [])]


def _registered(parser: pytest.Parser) -> set[str]:
    """Every option string pytest's parser knows now (pytest 9 keeps one argparse parser; pytest 8 groups)."""
    names = {n for g in _groups(parser) for opt in g.options for n in opt.names()}
    optparser = getattr(parser, "optparser", None)
    return names | set(getattr(optparser, "_option_string_actions", {}))


def _own_arguments(parser: pytest.Parser) -> list[Any]:
    return [opt for g in _groups(parser) if g.name == "agentfloor" for opt in g.options]


def taken_aliases(parser: pytest.Parser) -> list[str]:
    """Short spellings that another plugin or a conftest already uses (the plugin leaves them alone)."""
    mine = {n for opt in _own_arguments(parser) for n in opt.names()}
    others = _registered(parser) - mine  # once: this runs in every pytest run
    return sorted(a for a in SHORT if a in others)


#: what add_free_aliases added: (the Argument, the argparse action or None, the argparse table or None, alias)
Added = list[tuple[Any, Any, Any, str]]


def add_free_aliases(parser: pytest.Parser) -> Added:
    """Give each option its short spelling where no plugin or conftest has taken it; returns what
    it added, for remove_aliases.

    pytest 8 builds its argparse parser from the Argument names on every parse; pytest 9 has
    added each option to one argparse parser already, so the alias joins that action too.
    """
    taken = _registered(parser)
    optparser = getattr(parser, "optparser", None)
    actions = getattr(optparser, "_option_string_actions", None)
    added: Added = []
    for opt in _own_arguments(parser):
        primary = opt.names()[0]
        alias = "--" + primary.removeprefix(PREFIX)
        if not primary.startswith(PREFIX) or alias not in SHORT or alias in taken:
            continue
        if hasattr(opt, "_long_opts"):  # pytest 8 to 9.1 keep the names on the Argument
            opt._long_opts.append(alias)
        action = None
        if actions is not None and primary in actions:  # the argparse action (pytest >= 9.2: names() is its list)
            action = actions[primary]
            if alias not in action.option_strings:
                action.option_strings.append(alias)
            actions[alias] = action
        added.append((opt, action, actions, alias))
    return added


def remove_aliases(added: Added) -> None:
    """Take the short spellings out of pytest's parser again once the command line is read.

    A conftest that pytest loads during collection (one in a subdirectory) adds its options then;
    pytest >= 9.2 adds them to its argparse parser at once, where a --model of ours would make its
    own --model a conflict that fails the whole collection. The spellings only serve the command
    line, which is parsed by then (pytest never lets such a conftest's options be given there).
    """
    for opt, action, actions, alias in added:
        long_opts = getattr(opt, "_long_opts", None)
        if isinstance(long_opts, list) and alias in long_opts:
            long_opts.remove(alias)
        if action is not None:
            if alias in action.option_strings:
                action.option_strings.remove(alias)
            if actions is not None and actions.get(alias) is action:
                del actions[alias]


def _shown(default: Any) -> str:
    if isinstance(default, list):
        return ",".join(map(str, default)) or "none"
    if isinstance(default, bool):
        return "off" if not default else "on"
    return repr(default) if default == "" else str(default)


def add_options(parser: pytest.Parser) -> None:
    """Every option has an ini setting of the same meaning; --help shows each default."""
    group = parser.getgroup("agentfloor", "agent tool-use benchmark (pytest-agentfloor)")

    def add(opt: str, ini: str, help: str, *, default: Any, ini_type: Literal["string", "args"] = "string",
            shown: str | None = None,
            **kw: Any) -> None:
        names = option_names(opt)[:1]  # the short spelling joins later, where free
        shown = _shown(default) if shown is None else shown
        group.addoption(*names, dest=ini, default=None, help=f"{help} (default: {shown}; ini: {ini})", **kw)
        parser.addini(ini, help=help, type=ini_type, default=default)
        _note(opt, ini, ini_type, default)

    add("--model", "agentfloor_models", "model name(s) from models.toml; repeatable or comma-separated",
        default=["oracle"], ini_type="args", action="append", metavar="NAME")
    add("--models-file", "agentfloor_models_file", "models.toml path, relative to the rootdir",
        default="models.toml", metavar="PATH")
    add("--runs", "agentfloor_runs", "repeated runs of every (case, variant, instance)", default="1", metavar="N")
    add("--variants", "agentfloor_variants", "prompt variants to run, e.g. v0,v2 or all", default="all",
        metavar="LIST")
    add("--instances", "agentfloor_instances", "instance variants to run, e.g. i0,i3 or all", default="all",
        metavar="LIST")
    add("--agentfloor-report", "agentfloor_report",
        f"session-end report: {'|'.join(REPORT_MODES)} (all = terminal plus files in the report dir)",
        default="all", metavar="MODE")
    add("--reference", "agentfloor_reference", "compare every model against this one (paired tests)",
        default="", shown="none", metavar="MODEL")
    add("--callsite-weights", "agentfloor_callsite_weights",
        "relative call frequency per call site for routed accuracy, e.g. intent=10,actuator=3",
        default="", shown="each site's share of cases", metavar="SITE=W,...")
    add("--agentfloor-callsite-parser", "agentfloor_callsite_parser",
        "how call-site replies are read: deployed (first-word labels, the JSON array found in prose, service_data "
        "on the gold's keys; docs/callsite.md), strict (the whole reply is the answer) or harness (the authors' "
        "released harness, also where it contradicts seed 001); a table's own 'parser' field wins",
        default="", shown="deployed", metavar="PARSER")
    add("--agentfloor-callsite-verdict", "agentfloor_callsite_verdict",
        "which McNemar p decides 'differs' in the call-site paired table: raw = the exact p (as seed 001 reports "
        "it), holm = Holm-adjusted across the sites of each model; both are printed", default="raw", metavar="P")
    add("--agentfloor-routing-out", "agentfloor_routing_out",
        "write the call-site routing chosen against --agentfloor-reference (each site on the cheapest model that "
        "matches the reference, with its evidence) to this JSON file, and a LiteLLM proxy config beside it "
        "(<stem>.litellm.yaml); relative to the rootdir (docs/capture.md)", default="", shown="none", metavar="PATH")
    add("--margin", "agentfloor_margin", "equivalence / non-inferiority margin of the paired tests, in pp",
        default="10", metavar="PP")
    add("--bootstrap-cluster", "agentfloor_bootstrap_cluster",
        "bootstrap resampling unit: unit = (variant, instance, run), task, run, or auto (unit; run with "
        "--interval-method paper)", default="auto", metavar="KIND")
    add("--interval-method", "agentfloor_interval_method",
        "confidence intervals: guarded = never narrower than the Wilson / Tango score interval (default); "
        "paper = the AgentFloor paper's plain percentile bootstrap over runs, to compare with its tables",
        default="guarded", metavar="METHOD")
    add("--noninferiority-bound", "agentfloor_noninferiority_bound",
        "bound that certifies non-inferiority and equivalence: two-sided = lower end of the 95 percent CI (default, "
        "the paper's Table 1 caption), one-sided = one-sided 95 percent bound, i.e. the 90 percent CI (TOST)",
        default="two-sided", metavar="BOUND")
    add("--infra-threshold", "agentfloor_infra_threshold",
        "infra-error share of a model's runs in a tier above which it is flagged 'unreliable endpoint' and "
        "kept out of best, the Pareto front and the recipes", default="0.05", metavar="SHARE")
    add("--report-dir", "agentfloor_report_dir", "where runs.jsonl and reports go, relative to the rootdir",
        default="reports", metavar="DIR")
    add("--protocol", "agentfloor_protocol",
        f"episode rules: {'|'.join(PROTOCOL_NAMES)} (agentfloor = seed 000, tbb = seed 002's frozen contract)",
        default=DEFAULT_PROTOCOL, metavar="NAME")
    add("--menu", "agentfloor_menu",
        "show ladder cases a menu of N tool schemas: their tools among seeded distractors (seed 002's V); "
        "empty = each case's own tools", default="", metavar="N")
    add("--encoding", "agentfloor_encoding",
        "deliver returned records to ladder cases as raw|compact|typed|linked (seed 002's D); empty = raw",
        default="", metavar="E")
    add("--step-budget-scale", "agentfloor_step_budget_scale",
        "multiply every tier step budget (the paper's step-budget x2 ablation: 2; under agentfloor, 2 gives "
        "D and E the authors' 20 turns and a 4096-token completion cap)", default="1", metavar="X")
    add("--submission-feedback", "agentfloor_submission_feedback",
        "what a rejected submission tells the model under agentfloor: expected (the field and its expected "
        "value, as the authors' harness) | field (only which field is wrong) | verdict (only that it was rejected)",
        default="expected", metavar="LEVEL")
    add("--token-budget", "agentfloor_token_budget",
        "episode token budget; empty = the protocol's (tbb, legacy: 128000; agentfloor: none)",
        default="", shown="the protocol's", metavar="N")
    add("--episode-timeout", "agentfloor_episode_timeout", "wall-clock safety limit per episode, in seconds",
        default="600", metavar="S")
    add("--system-prompt", "agentfloor_system_prompt",
        "system prompt for every model: default|explicit_submission|structured; empty = each model's own",
        default="", shown="each model's own", metavar="NAME")
    add("--agentfloor-repair", "agentfloor_repairs",
        "repair switch for every model: workflow_prompt|interface_guide|router|controller|canonical_delivery "
        "(seed 002's repairs, docs/pressures.md); repeatable or comma-separated; a named deviation in every report "
        "header", default=[], ini_type="args", shown="each model's own (none)", action="append", metavar="NAME")
    add("--agentfloor-arms", "agentfloor_arms",
        "run every selected model in these arms, each a configuration of its own named MODEL+ARM: 'none' (as is) "
        "or repair switches and capN (completion cap xN) joined by '+', e.g. none,router,cap16 (docs/pressures.md, "
        "the repair and cap-sweep study); repeatable or comma-separated", default=[], ini_type="args",
        shown="none (each model as is)", action="append", metavar="ARM")
    add("--think", "agentfloor_think", "Ollama models' reasoning switch: on|off; empty = each model's own",
        default="", shown="each model's own", metavar="on|off")
    add("--reasoning-effort", "agentfloor_reasoning_effort",
        "OpenAI-compatible models' reasoning_effort: none|minimal|low|medium|high; empty = each model's own",
        default="", shown="each model's own", metavar="LEVEL")
    add("--agentfloor-judge", "agentfloor_judge",
        "model (from models.toml) that judges the semantic answer checks", default="",
        shown="none, the keyword stand-ins", metavar="MODEL")
    add("--agentfloor-judge-cache", "agentfloor_judge_cache",
        "judge verdict cache in the report dir: readwrite|read|write|off", default="readwrite", metavar="MODE")
    add("--baseline", "agentfloor_baseline", "gate against this runs.jsonl (or summary.json) of the incumbent",
        default="", shown="none, no gate", metavar="PATH")
    add("--gate-margin", "agentfloor_gate_margin", "non-inferiority margin of the gate, in percentage points",
        default="10", metavar="PP")
    add("--gate-tiers", "agentfloor_gate_tiers", "tiers the gate checks, e.g. A0,A,B", default="",
        shown="every tier present", metavar="LIST")
    add("--gate-floor", "agentfloor_gate_floors",
        "absolute TCR floor, e.g. 'tier_A>=0.90' (quote it: the shell reads >= as a redirection); repeatable",
        default=[], ini_type="args", action="append", metavar="'TIER>=X'")
    add("--gate-floor-bound", "agentfloor_gate_floor_bound",
        "what --gate-floor is held against: point = the tier's TCR, lower = the lower end of its 95 percent CI "
        "(the data must rule out a TCR below the floor)", default="point", metavar="point|lower")
    add("--gate-min-pairs", "agentfloor_gate_min_pairs",
        "raise the pairs a gated tier needs before it can pass (the default is derived from the interval method)",
        default="0", metavar="N")
    add("--gate-baseline-model", "agentfloor_gate_baseline_model", "the baseline model when the file holds several",
        default="", shown="the file's only model", metavar="NAME")
    add("--agentfloor-progress", "agentfloor_progress",
        "progress per model on the controller: auto (a live line per model on a terminal, periodic lines "
        "otherwise or with -s/--pdb), live, lines, off; color and plain are lines, coloured or not",
        default="auto", metavar="MODE")
    add("--agentfloor-progress-interval", "agentfloor_progress_interval",
        "seconds between redraws of the live lines, or between periodic lines", default="",
        shown="0.25 live; lines every 10 on a terminal, 30 otherwise", metavar="S")
    add("--max-cost", "agentfloor_max_cost",
        "stop once this session's runs cost this many USD: remaining items are skipped, the run is PARTIAL",
        default="", shown="no cap", metavar="USD")
    add("--agentfloor-keep-sessions", "agentfloor_keep_sessions",
        "session directories kept under <report dir>/sessions/: older ones are removed at the end of a session "
        "(never the newest complete one, never one in use); 0 keeps every one", default="20", metavar="N")
    add("--agentfloor-concurrency", "agentfloor_concurrency",
        "episodes of upcoming items played at once in each process (threads; items still report in order; "
        "1 = one at a time; scripted models always play inline)", default=str(DEFAULT_CONCURRENCY), metavar="N")
    add("--agentfloor-shard", "agentfloor_shard",
        "run part K of N of the selected items (deterministic, independent of file order), e.g. 2/4 in the "
        "second of four CI jobs; merge their runs.jsonl with `python -m pytest_agentfloor report`",
        default="", metavar="K/N")
    for flag, ini, text in (
        ("--agentfloor-plan", "agentfloor_plan",
         "show items, requests, estimated cost and wall time per model and tier; call no model"),
        ("--record", "agentfloor_record", "store every model request and response in the report dir's cassettes"),
        ("--replay", "agentfloor_replay", "answer from recorded responses only; a miss is an error"),
        ("--resume", "agentfloor_resume", "skip items already complete in runs.jsonl (same case and model config)"),
        ("--agentfloor-allow-changed-cases", "agentfloor_allow_changed_cases",
         "let the gate pair runs of case files that changed since the baseline (it names them either way)"),
        ("--infra-as-failure", "agentfloor_infra_as_failure", "count infrastructure errors as failures in TCR"),
        ("--no-probe", "agentfloor_no_probe", "do not send each model the tool-calling probe at session start"),
        ("--run-non-capable", "agentfloor_run_non_capable",
         "run the items of models whose probe was not tool_capable instead of skipping them"),
    ):
        group.addoption(*option_names(flag)[:1], dest=ini, action="store_true", default=None,
                        help=f"{text} (default: off; ini: {ini})")
        parser.addini(ini, help=text, type="bool", default=False)
        _note(flag, ini, "bool", False)
    parser.addini("agentfloor_case_paths", type="paths", default=[],
                  help="directories whose *.toml files are benchmark cases (default: cases/ at the rootdir)")
    _INI["agentfloor_case_paths"] = ("paths", [])


#: ini name -> (pytest ini type, default), and every spelling of an option -> its ini name
_INI: dict[str, tuple[str, Any]] = {}
_FLAG_INI: dict[str, str] = {}


def _note(opt: str, ini: str, ini_type: str, default: Any) -> None:
    _INI[ini] = (ini_type, default)
    for name in option_names(opt):
        _FLAG_INI[name] = ini


def _groups(parser: pytest.Parser) -> list[Any]:
    return [*parser._groups, parser._anonymous]  # pytest 8 and 9 keep the option groups here


def own_option_names(parser: pytest.Parser) -> set[str]:
    return {n for g in _groups(parser) if g.name == "agentfloor" for opt in g.options for n in opt.names()}


def foreign_option_names(parser: pytest.Parser) -> set[str]:
    return {n for g in _groups(parser) if g.name != "agentfloor" for opt in g.options for n in opt.names()}


def conflict_message(name: str) -> str:
    """For a conftest or plugin that takes one of the prefixed names (the short ones are only added where free)."""
    return (f"{name} is defined both by pytest-agentfloor and by a conftest.py or another plugin; rename your "
            "option, or disable the plugin where you do not want it with -p no:agentfloor (or addopts = "
            "-p no:agentfloor in your ini file)")


def _opt(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return ini_value(config, name) if value is None else value


def ini_value(config: pytest.Config, name: str) -> Any:
    """``config.getini(name)``, also for a native TOML value (pytest 9's ``[tool.pytest]`` table).

    pytest 9 reads that table strictly by the registered type, and pytest 8 knows no int or float
    ini type, so ``agentfloor_runs = 2`` (or ``agentfloor_resume = "true"``) is read here from
    the file and converted to what the setting takes.
    """
    try:
        return config.getini(name)
    except TypeError:  # pytest 9.0, 9.1
        pass
    except pytest.UsageError as exc:  # pytest >= 9.2 raises the same TypeError as a usage error
        if not isinstance(exc.__cause__, TypeError):
            raise
    raw = _native_ini(config, name)
    kind, _ = _INI.get(name, ("string", ""))
    where = ini_label(config, name)
    if kind == "string" and isinstance(raw, (bool, int, float, str)):
        return ("true" if raw else "false") if isinstance(raw, bool) else str(raw)
    if kind == "string" and isinstance(raw, list) and all(isinstance(x, (str, int, float)) for x in raw):
        return ",".join(map(str, raw))  # agentfloor_variants = ["v0", "v2"]
    if kind in ("args", "paths") and isinstance(raw, (str, list)):
        import shlex

        items = shlex.split(raw) if isinstance(raw, str) else [str(x) for x in raw]
        if kind == "paths":
            base = Path(config.inipath).parent if config.inipath else Path(config.invocation_params.dir)
            return [base / x for x in items]
        return items
    if kind == "bool" and isinstance(raw, (str, int)):
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on", "y", "t"):
            return True
        if text in ("0", "false", "no", "off", "n", "f"):
            return False
        raise pytest.UsageError(f"{where}: expected true or false, got {raw!r}")
    raise pytest.UsageError(f"{where}: expected {_KIND_TEXT.get(kind, kind)}, got {type(raw).__name__} {raw!r}")


_KIND_TEXT = {"string": "a string or a number", "args": "a list of strings", "paths": "a list of paths",
              "bool": "true or false"}


def _native_ini(config: pytest.Config, name: str) -> Any:
    """The value of `name` as written in the config file's native TOML table."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    data = tomllib.loads(Path(config.inipath).read_text(encoding="utf-8")) if config.inipath else {}
    table = data.get("tool", {}).get("pytest", {}) if Path(str(config.inipath)).name == "pyproject.toml" \
        else data.get("pytest", data)
    return table.get(name)


def ini_label(config: pytest.Config, name: str) -> str:
    """How to name an ini setting in an error: its key and the file it came from (or the -o that set it)."""
    for override in config.getoption("override_ini", None) or []:
        if override.split("=", 1)[0].strip() == name:
            return f"-o {name}"
    return f"ini setting {name} in {config.inipath}" if config.inipath else f"ini setting {name}"


def from_ini(config: pytest.Config, name: str) -> bool:
    """Whether the value of option `name` comes from the config file (or -o), not the command line or default."""
    if config.getoption(name, None) is not None or name not in _INI:
        return False
    try:
        return ini_value(config, name) != _INI[name][1]
    except pytest.UsageError:
        return True


def name_the_source(config: pytest.Config, exc: pytest.UsageError) -> pytest.UsageError:
    """An error about an option whose value came from the config file names the ini key and the file."""
    text = str(exc)
    found = re.match(r"--[\w-]+", text)  # "--runs: ...", also "--agentfloor-baseline PATH: ..." and "--gate-floor 'X': ..."
    ini = _FLAG_INI.get(found.group()) if found else None
    if found is None or ini is None or not from_ini(config, ini):
        return exc
    rest = text[found.end():]
    return pytest.UsageError(ini_label(config, ini) + (rest if rest.startswith(":") else ":" + rest))


def _int_opt(config: pytest.Config, name: str, flag: str, minimum: int = 1, maximum: int | None = None) -> int:
    raw = _opt(config, name)
    valid = f"a whole number from {minimum} to {maximum}" if maximum is not None else f"a whole number >= {minimum}"
    try:
        value = int(str(raw).strip()) if len(str(raw)) <= 30 else None
    except (TypeError, ValueError):
        value = None
    if value is None:
        raise pytest.UsageError(f"{flag}: expected {valid}, got {str(raw)[:40]!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise pytest.UsageError(f"{flag}: expected {valid}, got {value}")
    return value


def _float_opt(config: pytest.Config, name: str, flag: str, low: float, high: float, unit: str, *,
               low_open: bool = False, high_open: bool = False) -> float:
    """A finite number within [low, high] (an open end excludes the bound itself)."""
    raw = _opt(config, name)
    lo, hi = "(" if low_open else "[", ")" if high_open else "]"
    valid = f"a number of {unit} in {lo}{low:g}, {high:g}{hi}"
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{flag}: expected {valid}, got {raw!r}") from None
    if not math.isfinite(value) or value < low or value > high or (low_open and value == low) \
            or (high_open and value == high):
        raise pytest.UsageError(f"{flag}: expected {valid}, got {raw!r}")
    return value


def _choice(config: pytest.Config, name: str, flag: str, choices: tuple[str, ...]) -> str:
    value = str(_opt(config, name)).strip()
    if value not in choices:
        raise pytest.UsageError(f"{flag}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _selection(config: pytest.Config, name: str, flag: str, prefix: str) -> set[str] | None:
    raw = str(_opt(config, name)).strip()
    if raw in ("", "all"):
        return None
    items = {p.strip() for p in raw.split(",") if p.strip()}
    bad = sorted(i for i in items if not re.fullmatch(rf"{prefix}\d+", i))
    if bad:
        raise pytest.UsageError(f"{flag}: {bad} are not {prefix}0, {prefix}1, ... names (or 'all')")
    return items


def report_dir(config: pytest.Config, rootdir: Path) -> Path:
    """The report directory, checked at start-up: it must be (or become) a writable directory.

    Nothing is created here (--co must leave no trace); the first record creates it.
    """
    from .render import safe_text

    raw = str(_opt(config, "agentfloor_report_dir"))
    path = rootdir / raw
    raw = safe_text(raw, multiline=False)  # as it is shown in the messages below: no raw control characters
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        what = "is a file, not a directory" if probe == path else f"cannot be created: {probe} is not a directory"
        raise pytest.UsageError(f"--agentfloor-report-dir {raw}: {what}; pick a directory for runs.jsonl and the reports")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise pytest.UsageError(f"--agentfloor-report-dir {raw}: {probe} is not writable; pick a directory you can write to")
    for name, want_dir in (("sessions", True), ("judge-cache.jsonl", False), ("runs.jsonl", False),
                           ("cassettes.jsonl", False)):
        entry = path / name  # what the session writes there: a file where a directory belongs breaks every item
        if entry.exists() and (entry.is_dir() if want_dir else entry.is_file()) is False:
            # a device or a pipe is no file either: /dev/full or /dev/zero reads without end, a FIFO blocks
            kind = "directory" if entry.is_dir() else "file" if entry.is_file() else "device, pipe or socket"
            raise pytest.UsageError(f"--agentfloor-report-dir {raw}: {safe_text(str(entry))} is a {kind}, where the "
                                    f"session keeps its {'session directories' if want_dir else name}; "
                                    "move it away or pick another report dir")
    return path


def _routing_out(config: pytest.Config, rootdir: Path, reference: str | None) -> Path | None:
    """--agentfloor-routing-out, checked at start-up: it needs a reference and a writable file path."""
    raw = str(_opt(config, "agentfloor_routing_out") or "").strip()
    if not raw:
        return None
    if reference is None:
        raise pytest.UsageError(f"--agentfloor-routing-out {raw}: needs --agentfloor-reference MODEL (the production "
                                "model: each site goes to the cheapest model that matches it)")
    path = rootdir / raw
    if raw.endswith(("/", os.sep)) or path.is_dir():
        raise pytest.UsageError(f"--agentfloor-routing-out {raw}: is a directory; give a file name, e.g. routing.json")
    probe = path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise pytest.UsageError(f"--agentfloor-routing-out {raw}: {probe} is not a writable directory")
    return path


def check_selection(config: pytest.Config, variants: set[str] | None, instances: set[str] | None) -> None:
    """--variants/--instances names that no targeted case file has are usage errors.

    Checked on the controller before collection (under xdist only the workers collect), from the
    prompt and instance names of the targeted case files; unreadable files are left to collection.
    """
    if variants is None and instances is None:
        return
    from .suite.loader import case_names

    base = Path(config.invocation_params.dir)
    seen_v, seen_i = case_names([base / str(a).split("::")[0] for a in config.args])
    for flag, wanted, seen, prefix in (("--variants", variants, seen_v, "v"), ("--instances", instances, seen_i, "i")):
        if wanted is None or not seen:
            continue
        unmatched = sorted(wanted - seen, key=lambda n: int(n[1:]))
        if unmatched:
            top = max(int(n[1:]) for n in seen)
            raise pytest.UsageError(f"{flag}: {', '.join(unmatched)} match no case here; the targeted cases have "
                                    f"{prefix}0 to {prefix}{top} (or use 'all')")


def read_options(config: pytest.Config) -> Options:
    """Every option and ini setting, checked; an error names the option, or the ini key and its file."""
    try:
        return _read_options(config)
    except pytest.UsageError as exc:
        raise name_the_source(config, exc) from None


def last_failed_models(config: pytest.Config) -> list[str]:
    """The models of the benchmark items in pytest's last-failed cache, in the order they failed."""
    from .nodeids import split_nodeid

    cache = getattr(config, "cache", None)  # None: -p no:cacheprovider
    failed = cache.get("cache/lastfailed", {}) if cache is not None else {}
    models = (split_nodeid(nodeid)[2] for nodeid in failed if isinstance(nodeid, str) and ".toml::" in nodeid)
    return list(dict.fromkeys(m for m in models if m))


def _read_options(config: pytest.Config) -> Options:
    from .config import ConfigError, load_models

    rootdir = Path(config.rootpath)
    raw_models_file = str(_opt(config, "agentfloor_models_file"))
    models_file = rootdir / raw_models_file
    named = config.getoption("agentfloor_models_file") is not None or from_ini(config, "agentfloor_models_file")
    if named and not models_file.is_file():
        raise pytest.UsageError(f"--agentfloor-models-file: {raw_models_file}: no such file (paths are relative to "
                                f"the rootdir, {rootdir})")
    try:
        models = load_models(models_file if models_file.exists() else None)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    names: list[str] = []
    for chunk in _opt(config, "agentfloor_models"):
        names += [n.strip() for n in str(chunk).split(",") if n.strip()]
    if getattr(config.option, "lf", False) and config.getoption("agentfloor_models", None) is None:
        # --lf with no --model: the models of the items that failed last join the selection, or their
        # items would not be collected and --lf would run the default model's items instead, green
        failed = last_failed_models(config)
        gone = [n for n in failed if n not in models]
        if gone:  # their items cannot be made again: --lf would run everything else instead, green
            raise pytest.UsageError(
                f"--lf: the last failures are items of model(s) {', '.join(gone)}, not in {models_file.name}; "
                "add that model back, select others with --model, or start afresh with --cache-clear")
        names += [n for n in failed if n not in names]
    if not names:
        raise pytest.UsageError(f"--model: no model named; give one of {', '.join(sorted(models))} "
                                "(repeatable or comma-separated)")
    unknown = [n for n in names if n not in models]
    if unknown:
        where = f" in {models_file}" if models_file.exists() else f" (no {models_file.name} found in {rootdir})"
        raise pytest.UsageError(
            f"--model: unknown model(s) {', '.join(unknown)}{where}; configured: {', '.join(sorted(models))}")
    mode = str(_opt(config, "agentfloor_report"))
    if mode not in REPORT_MODES:
        raise pytest.UsageError(f"--agentfloor-report: expected one of {', '.join(REPORT_MODES)}, got {mode!r}")
    timeout = _float_opt(config, "agentfloor_episode_timeout", "--episode-timeout", 0.0, MAX_EPISODE_TIMEOUT_S,
                         "seconds", low_open=True)
    reference = str(_opt(config, "agentfloor_reference") or "") or None
    if reference and reference not in names:
        raise pytest.UsageError(f"--agentfloor-reference: {reference!r} is not among the selected models ({', '.join(names)}); "
                                "add it with --model")
    margin = _float_opt(config, "agentfloor_margin", "--agentfloor-margin", 0.0, 100.0, "percentage points")
    raw_weights = str(_opt(config, "agentfloor_callsite_weights") or "")
    callsite_weights = None
    if raw_weights.strip():  # callsite.stats loads scipy: only when weights are given
        from .callsite.stats import parse_weights

        try:
            callsite_weights = parse_weights(raw_weights)
        except ValueError as exc:
            raise pytest.UsageError(f"--callsite-weights: {exc}") from None
    callsite_parser = str(_opt(config, "agentfloor_callsite_parser") or "").strip() or None
    if callsite_parser is not None and callsite_parser not in CALLSITE_PARSERS:
        raise pytest.UsageError(f"--agentfloor-callsite-parser: expected one of {', '.join(CALLSITE_PARSERS)}, "
                                f"got {callsite_parser!r}")
    callsite_verdict = _choice(config, "agentfloor_callsite_verdict", "--agentfloor-callsite-verdict", CALLSITE_VERDICTS)
    routing_out = _routing_out(config, rootdir, reference)
    cluster = _choice(config, "agentfloor_bootstrap_cluster", "--bootstrap-cluster", ("auto", "unit", "task", "run"))
    interval_method = _choice(config, "agentfloor_interval_method", "--interval-method", INTERVAL_METHODS)
    decision_bound = _choice(config, "agentfloor_noninferiority_bound", "--noninferiority-bound", DECISION_BOUNDS)
    raw_share = _opt(config, "agentfloor_infra_threshold")
    try:
        infra_threshold = float(raw_share)
    except (TypeError, ValueError):
        infra_threshold = -1.0
    if not 0 <= infra_threshold <= 1:
        raise pytest.UsageError(f"--infra-threshold: expected a share between 0 and 1 (e.g. 0.05), got {raw_share!r}")
    variants = _selection(config, "agentfloor_variants", "--variants", "v")
    instances = _selection(config, "agentfloor_instances", "--instances", "i")
    if not hasattr(config, "workerinput"):
        check_selection(config, variants, instances)
    protocol = _protocol(config)
    judge, judge_cache = _judge(config, models)  # the session's ablations are for the judged models, not the judge
    models = _ablations(config, models, protocol)
    names = _expand_arms(config, models, names)
    record, replay = bool(_opt(config, "agentfloor_record")), bool(_opt(config, "agentfloor_replay"))
    if record and replay:
        raise pytest.UsageError("--agentfloor-record and --agentfloor-replay exclude each other")
    max_cost_raw = str(_opt(config, "agentfloor_max_cost") or "").strip()
    max_cost = None
    if max_cost_raw:
        max_cost = _float_opt(config, "agentfloor_max_cost", "--max-cost", 0.0, 1e9, "US dollars", low_open=True)
    progress = str(_opt(config, "agentfloor_progress") or "auto")
    if progress not in ("auto", "live", "lines", "off", "color", "plain"):
        raise pytest.UsageError(
            f"--agentfloor-progress: expected auto, live, lines or off (or color, plain), got {progress!r}")
    interval = None
    if str(_opt(config, "agentfloor_progress_interval") or "").strip():
        interval = _float_opt(config, "agentfloor_progress_interval", "--agentfloor-progress-interval", 0.0, 86400.0,
                              "seconds")
    return Options(
        progress=progress,
        progress_interval=interval,
        plan=bool(_opt(config, "agentfloor_plan")),
        max_cost=max_cost,
        reference=reference,
        callsite_weights=callsite_weights,
        callsite_parser=callsite_parser,
        callsite_verdict=callsite_verdict,
        margin_pp=margin,
        routing_out=routing_out,
        cluster=None if cluster == "auto" else cluster,
        interval_method=interval_method,
        decision_bound=decision_bound,
        infra_threshold=infra_threshold,
        infra_as_failure=protocol.infra_as_failure,
        protocol=protocol,
        probe=not _opt(config, "agentfloor_no_probe"),
        run_non_capable=bool(_opt(config, "agentfloor_run_non_capable")),
        record=record,
        replay=replay,
        resume=bool(_opt(config, "agentfloor_resume")),
        models=models,
        selected=tuple(models[n] for n in dict.fromkeys(names)),
        runs=_int_opt(config, "agentfloor_runs", "--agentfloor-runs", 1, MAX_RUNS),
        variants=None if variants is None else frozenset(variants),
        instances=None if instances is None else frozenset(instances),
        report_mode=mode,
        report_dir=report_dir(config, rootdir),
        token_budget=protocol.token_budget,
        episode_timeout=timeout,
        judge=judge,
        judge_cache=judge_cache,
        shard=_shard(config),
        concurrency=_int_opt(config, "agentfloor_concurrency", "--agentfloor-concurrency", 1, MAX_CONCURRENCY),
        menu=_menu(config),
        encoding=_encoding(config),
    )


def _judge(config: pytest.Config, models: dict[str, ModelConfig]) -> tuple[ModelConfig | None, str]:
    """--judge and --judge-cache, checked against the configured models."""
    from .judge.cache import CACHE_MODES

    mode = str(_opt(config, "agentfloor_judge_cache") or "readwrite").strip()
    if mode not in CACHE_MODES:
        raise pytest.UsageError(f"--agentfloor-judge-cache: expected one of {', '.join(CACHE_MODES)}, got {mode!r}")
    name = str(_opt(config, "agentfloor_judge") or "").strip()
    if not name:
        return None, mode
    if name not in models:
        raise pytest.UsageError(f"--agentfloor-judge: unknown model {name!r}; configured: {', '.join(sorted(models))} "
                                "(a judge is any openai, ollama or local model in models.toml)")
    if models[name].provider in ("scripted", "replay", "recorded"):
        raise pytest.UsageError(f"--agentfloor-judge: {name!r} is a {models[name].provider} model and cannot judge text; "
                                "name an openai, ollama or local model")
    return models[name], mode


def _shard(config: pytest.Config) -> tuple[int, int] | None:
    from .shard import parse_shard

    try:
        return parse_shard(str(_opt(config, "agentfloor_shard") or ""))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None

def _menu(config: pytest.Config) -> int | None:
    raw = str(_opt(config, "agentfloor_menu") or "").strip()
    if not raw:
        return None
    from .pressure.catalogue import DISTRACTOR_NAMES  # only for a run under --menu

    if not raw.isdigit() or not 1 <= int(raw) <= len(DISTRACTOR_NAMES):
        raise pytest.UsageError(f"--agentfloor-menu: expected a number of tool schemas from 1 to {len(DISTRACTOR_NAMES)} "
                                f"(seed 002 uses 8, 32, 128), got {raw!r}")
    return int(raw)


def _encoding(config: pytest.Config) -> str | None:
    raw = str(_opt(config, "agentfloor_encoding") or "").strip()
    if not raw:
        return None
    from .pressure.encoding import ENCODINGS  # only for a run under --encoding

    if raw not in ENCODINGS:
        raise pytest.UsageError(f"--agentfloor-encoding: expected one of {', '.join(ENCODINGS)}, got {raw!r}")
    return raw


def _protocol(config: pytest.Config) -> Protocol:
    """--protocol with the session's overrides: step-budget scale, token budget, infra handling."""
    from .protocol import PROTOCOLS, SUBMISSION_FEEDBACK, resolve_protocol

    name = str(_opt(config, "agentfloor_protocol")).strip()
    raw_scale = str(_opt(config, "agentfloor_step_budget_scale")).strip() or "1"
    try:
        scale = float(raw_scale)
    except ValueError:
        raise pytest.UsageError(f"--step-budget-scale: expected a positive number, got {raw_scale!r}") from None
    if not 0 < scale <= MAX_STEP_BUDGET_SCALE:  # also NaN and inf; the paper's ablation is 2
        raise pytest.UsageError(f"--step-budget-scale: expected a positive number up to {MAX_STEP_BUDGET_SCALE:g} "
                                f"(the paper's ablation is 2), got {raw_scale!r}")
    tokens = None
    if str(_opt(config, "agentfloor_token_budget")).strip():
        tokens = _int_opt(config, "agentfloor_token_budget", "--token-budget", 1, MAX_TOKEN_BUDGET)
    feedback = str(_opt(config, "agentfloor_submission_feedback") or "").strip() or "expected"
    if feedback not in SUBMISSION_FEEDBACK:
        raise pytest.UsageError(f"--agentfloor-submission-feedback: expected one of {', '.join(SUBMISSION_FEEDBACK)}, "
                                f"got {feedback!r}")
    base = PROTOCOLS.get(name)
    try:
        return resolve_protocol(name, step_budget_scale=scale, token_budget=tokens,
                                infra_as_failure=bool(_opt(config, "agentfloor_infra_as_failure")),
                                submission_feedback=(feedback if base is not None and base.submission_feedback
                                                     else None))
    except ValueError as exc:
        flag = "--step-budget-scale" if name in PROTOCOLS else "--agentfloor-protocol"
        raise pytest.UsageError(f"{flag}: {exc}") from None


def _repairs(config: pytest.Config) -> tuple[str, ...]:
    """--agentfloor-repair NAME (repeatable, comma-separated), checked; () when none is named."""
    from .harness_repairs import check_repairs

    names = [n.strip() for chunk in (_opt(config, "agentfloor_repairs") or []) for n in str(chunk).split(",")
             if n.strip()]
    try:
        return check_repairs(names)
    except ValueError as exc:
        raise pytest.UsageError(f"--agentfloor-repair: {exc}") from None


_THINK = {"on": True, "off": False}
_EFFORTS = ("none", "minimal", "low", "medium", "high")
_PROMPTS = ("default", "explicit_submission", "structured")


def _ablations(config: pytest.Config, models: dict[str, ModelConfig], protocol: Protocol) -> dict[str, ModelConfig]:
    """Apply the session-wide switches to every model configuration.

    They change the configuration itself, so they reach the request, the record's `config`
    and the resume fingerprint (and the cassette key) without a second path.
    """
    prompt = str(_opt(config, "agentfloor_system_prompt") or "").strip()
    think = str(_opt(config, "agentfloor_think") or "").strip().lower()
    effort = str(_opt(config, "agentfloor_reasoning_effort") or "").strip().lower()
    if prompt and prompt not in _PROMPTS:
        raise pytest.UsageError(f"--agentfloor-system-prompt: expected one of {', '.join(_PROMPTS)}, got {prompt!r}")
    if think and think not in _THINK:
        raise pytest.UsageError(f"--agentfloor-think: expected on or off, got {think!r}")
    if effort and effort not in _EFFORTS:
        raise pytest.UsageError(f"--agentfloor-reasoning-effort: expected one of {', '.join(_EFFORTS)}, got {effort!r}")
    repairs = _repairs(config)
    out: dict[str, ModelConfig] = {}
    for name, m in models.items():
        update: dict[str, Any] = {}
        if prompt:
            update["system_prompt"] = prompt
        if repairs:
            update["repairs"] = repairs
        if think and m.provider == "ollama":
            update["think"] = _THINK[think]
        if effort and m.provider in ("openai", "local"):
            update["reasoning_effort"] = effort
        if protocol.completion_cap is not None:
            update["max_tokens"] = protocol.completion_cap
        if m.cap_scale:  # the cap sweep's high arm: the cap in force, times the scale
            update["max_tokens"] = update.get("max_tokens", m.max_tokens) * m.cap_scale
        out[name] = m.model_copy(update=update) if update else m
    return out


def _arms(config: pytest.Config) -> list[tuple[str, tuple[str, ...], int | None]]:
    """--agentfloor-arms: (label, repairs, cap scale) per arm, in the order given; [] when not given."""
    from .harness_repairs import arm_label, parse_arm

    texts = [n.strip() for chunk in (_opt(config, "agentfloor_arms") or []) for n in str(chunk).split(",")
             if n.strip()]
    out: dict[str, tuple[str, tuple[str, ...], int | None]] = {}
    for text in texts:
        try:
            reps, cap = parse_arm(text)
        except ValueError as exc:
            raise pytest.UsageError(f"--agentfloor-arms: {exc}") from None
        label = arm_label(reps, cap)
        out.setdefault(label, (label, reps, cap))
    return list(out.values())


def _expand_arms(config: pytest.Config, models: dict[str, ModelConfig], names: list[str]) -> list[str]:
    """Add a configuration MODEL+ARM per selected model and arm (module doc of harness_repairs) to
    `models`; the selected names in order, model by model. Without arms: `names` unchanged."""
    from .harness_repairs import NO_ARM

    arms = _arms(config)
    if not arms:
        return names
    out: list[str] = []
    for name in dict.fromkeys(names):
        base = models[name]
        for label, reps, cap in arms:
            if label == NO_ARM:
                out.append(name)
                continue
            if cap and base.cap_scale:
                raise pytest.UsageError(f"--agentfloor-arms: arm {label!r}: models.{name} already has cap_scale = "
                                        f"{base.cap_scale}")
            arm_name = f"{name}+{label}"
            update: dict[str, Any] = {"name": arm_name,
                                      "repairs": tuple(sorted(set(base.repairs or ()) | set(reps))) or None}
            if cap:
                update.update(cap_scale=cap, max_tokens=base.max_tokens * cap)
            models[arm_name] = base.model_copy(update=update)
            out.append(arm_name)
    return out
