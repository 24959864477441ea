"""A corpus of bad inputs: broken case files, models.toml, option values and stored files.

For each one, through a real (in-process) pytest run on a small generated project: the exit
status, one clear error naming the file/field/value, no traceback or INTERNALERROR, and every
record that could be written was written (issue 16, "what must hold").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from pytest_agentfloor.report.cli import main as report_main
from pytest_agentfloor.results import read_records

USAGE, FAILED, OK = pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.OK

GOOD = """\
id = "{id}"
tier = "A"
title = "Read one quantity"
tools = ["lookup_record", "get_attribute"]

[prompts]
v0 = "How many units of item INV-1 are on hand? Answer with the number."

[[fixtures.records]]
id = "INV-1"
collection = "inventory"
name = "Bolt"
fields = {{ on_hand = 340 }}

[[fixtures.records]]
id = "INV-2"
collection = "inventory"
name = "Nut"
fields = {{ on_hand = 95 }}

[gold]
answer = [{{ kind = "number", expected = 340 }}]

[[steps]]
id = "read"
tool = "get_attribute"
alt = ["lookup_record"]
args = {{ record_id = "INV-1" }}

[[reference]]
calls = [{{ tool = "get_attribute", args = {{ record_id = "INV-1", attribute = "on_hand" }} }}]

[[reference]]
final = "340"
"""
BASE = GOOD.format(id="BAD")
TOP = 'tools = ["lookup_record", "get_attribute"]\n'  # top-level keys go after this line
STEPS = '[[steps]]\nid = "read"\ntool = "get_attribute"\nalt = ["lookup_record"]\nargs = { record_id = "INV-1" }\n'
GOLD = '[gold]\nanswer = [{ kind = "number", expected = 340 }]\n'
RUN = ["cases", "--model", "oracle", "-p", "no:cacheprovider", "--agentfloor-report", "none"]
VALID_RUN = {"model": "oracle", "task": "OK", "tier": "A", "variant": "v0", "instance": "i0", "run": 0,
             "passed": True, "infra_error": False}


@dataclass
class Bad:
    name: str
    files: dict[str, bytes | str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    exit: int = USAGE
    needles: list[str] = field(default_factory=list)
    records: int = 0  # records runs.jsonl must hold afterwards
    once: str = ""  # text that must appear exactly once (the one clear error)


def top(line: str) -> str:
    return BASE.replace(TOP, TOP + line + "\n")


def case(name: str, text: str | bytes, *needles: str, file: str = "BAD") -> Bad:
    path = f"cases/tier_A/{file}.toml"
    return Bad(f"case:{name}", {path: text}, RUN, FAILED, [path, *needles], records=1,
               once="invalid case file")


def regex(pattern: str) -> str:
    return BASE.replace(GOLD, f"[gold]\nanswer = [{{ kind = \"regex\", pattern = '{pattern}' }}]\n")


def cycle(*edges: tuple[str, str]) -> str:
    steps = "".join(f'[[steps]]\nid = "{a}"\ntool = "get_attribute"\nafter = ["{b}"]\n' for a, b in edges)
    return BASE.replace(STEPS, steps)


CASES = [
    case("regex unbalanced", regex("("), "gold.answer[0]", "not a valid regular expression"),
    case("regex bad range", regex("[z-a]"), "gold.answer[0]", "bad character range"),
    case("regex open class", regex("[a-"), "gold.answer[0]", "not a valid regular expression"),
    case("regex group redefined", regex("(?P<x>a)(?P<x>b)"), "gold.answer[0]", "redefinition"),
    case("regex trailing backslash", regex("abc\\"), "gold.answer[0]", "not a valid regular expression"),
    case("regex nothing to repeat", regex("*x"), "gold.answer[0]", "nothing to repeat"),
    case("all prompts empty", BASE.replace('v0 = "How many units of item INV-1 are on hand? Answer with the number."',
                                           'v0 = ""'), "prompts", "['v0'] are empty"),
    case("prompt only whitespace", BASE.replace('v0 = "How many', 'v1 = "  \\n "\nv0 = "How many'), "prompts",
         "['v1'] are empty"),
    case("patch of unknown record", BASE + '\n[instances.i1]\npatch_records = { NOPE = { on_hand = 1 } }\n',
         "instances.i1.patch_records: unknown record(s) ['NOPE']", "records: INV-1, INV-2"),
    case("patch value not a table", BASE + '\n[instances.i1]\npatch_records = { INV-1 = 3 }\n',
         "instances.i1.patch_records.INV-1"),
    case("two-step cycle", cycle(("a", "b"), ("b", "a")), "steps: dependency cycle a -> b -> a"),
    case("self cycle", cycle(("a", "a")), "steps: dependency cycle a -> a"),
    case("three-step cycle", cycle(("a", "b"), ("b", "c"), ("c", "a")), "dependency cycle a -> b -> c -> a"),
    case("instance step cycle", BASE + '\n[instances.i1]\nsteps = [{ id = "x", tool = "get_attribute", after = ["y"] }, '
                                       '{ id = "y", tool = "get_attribute", after = ["x"] }]\n',
         "instances.i1.steps: dependency cycle x -> y -> x"),
    case("duplicate step ids", cycle(("a", "b"), ("b", "c")).replace('id = "b"', 'id = "a"') + "", "steps"),
    case("budget 0", top("budget = 0"), "budget", "greater than or equal to 1"),
    case("budget negative", top("budget = -2"), "budget", "greater than or equal to 1"),
    case("budget absurd", top("budget = 100000"), "budget", "less than or equal to 1000"),
    case("budget not a number", top('budget = "two"'), "budget", "valid integer"),
    case("call limit negative", top("call_limit = -1"), "call_limit", "greater than or equal to 0"),
    case("call limit absurd", top("call_limit = 1000000"), "call_limit", "less than or equal to 10000"),
    case("gold evidence unknown", BASE.replace(GOLD, GOLD + 'evidence = ["NOPE"]\n'),
         "gold.evidence: unknown record(s) ['NOPE']"),
    case("instance gold evidence unknown",
         BASE + '\n[instances.i1.gold]\nanswer = [{ kind = "number", expected = 1 }]\nevidence = ["INV-9"]\n',
         "instances.i1.gold.evidence: unknown record(s) ['INV-9']"),
    case("wrong tier directory", BASE.replace('tier = "A"', 'tier = "B"'), "tier: 'B'", "tier_A/"),
    case("tier A0 with tools in tier_A", BASE.replace('tier = "A"', 'tier = "A0"'), "tools: tier A0"),
    case("unknown tier", BASE.replace('tier = "A"', 'tier = "Z"'), "tier", "'A0', 'A', 'B'"),
    case("id with ::", BASE.replace('id = "BAD"', 'id = "BAD::X"'), "id: 'BAD::X' is not a usable case id",
         file="BAD::X"),
    case("id with [", BASE.replace('id = "BAD"', 'id = "BAD[1]"'), "id: 'BAD[1]' is not a usable case id",
         file="BAD[1]"),
    case("id with space", BASE.replace('id = "BAD"', 'id = "BAD X"'), "id: 'BAD X' is not a usable case id",
         file="BAD X"),
    case("id with escape", BASE.replace('id = "BAD"', 'id = "BAD\\u001b"'), "is not a usable case id"),
    case("id not the file name", BASE.replace('id = "BAD"', 'id = "OTHER"'), "must match the file name 'BAD'"),
    case("non-UTF-8 byte", BASE.encode().replace(b"Bolt", b"Bo\xfflt"), "line 12: not UTF-8 (byte 0xff at column 11)"),
    case("binary garbage", bytes(range(256)) * 4, "not UTF-8"),
    case("empty file", "", "id: Field required"),
    case("invalid TOML", BASE.replace('title = "Read one quantity"', 'title = "Read one'), "not valid TOML", "line 3"),
    case("duplicate key", top('title = "again"'), "not valid TOML"),
    case("missing prompts", BASE.replace('[prompts]\nv0 = "How many units of item INV-1 are on hand? Answer with the '
                                         'number."\n', ''), "prompts: Field required"),
    case("prompts not a table", BASE.replace('[prompts]\nv0 = "How many units of item INV-1 are on hand? Answer with the '
                                             'number."\n', '').replace(TOP, TOP + 'prompts = "hello"\n'),
         "prompts", "valid dictionary"),
    case("no v0", BASE.replace('v0 = "How many', 'v1 = "How many'), "prompts", "needs a canonical prompt 'v0'"),
    case("bad variant name", BASE.replace('v0 = "How many', 'x1 = "a"\nv0 = "How many'), "prompt variant names"),
    case("instance named i0", BASE + '\n[instances.i0]\nvars = { a = "b" }\n', "instances", "i0 is the base case"),
    case("instance named foo", BASE + '\n[instances.foo]\nvars = { a = "b" }\n', "instances", "got ['foo']"),
    case("unknown tool", BASE.replace(TOP, 'tools = ["lookup_record", "get_attribute", "rm_rf"]\n'),
         "tools[2]", "unknown tool 'rm_rf'"),
    case("tools not a list", BASE.replace(TOP, 'tools = "lookup_record"\n'), "tools", "valid list"),
    case("step uses unexposed tool", BASE.replace('tool = "get_attribute"\nalt', 'tool = "compute_value"\nalt'),
         "steps: step 'read' uses tool(s) ['compute_value']"),
    case("step after unknown step", BASE.replace('args = { record_id = "INV-1" }\n\n[[reference]]',
                                                 'args = { record_id = "INV-1" }\nafter = ["ghost"]\n\n[[reference]]'),
         "steps: step 'read' comes after unknown step(s) ['ghost']"),
    case("reference calls unexposed tool", BASE.replace('calls = [{ tool = "get_attribute"', 'calls = [{ tool = "list_options"'),
         "reference: calls 'list_options'"),
    case("unknown top-level field", top('colour = "red"'), "colour: unknown field"),
    case("unknown record field", BASE.replace('name = "Bolt"', 'name = "Bolt"\nweight = 3'),
         "fixtures.records[0].weight: unknown field"),
    case("duplicate record id", BASE.replace('id = "INV-2"', 'id = "INV-1"'), "fixtures", "'INV-1' appears twice"),
    case("bad constraint op", BASE + '\n[[fixtures.constraints]]\nname = "c"\nfield = "on_hand"\nop = "~="\nvalue = 1\n',
         "fixtures.constraints[0].op"),
    case("bad answer kind", BASE.replace('kind = "number"', 'kind = "fuzzy"'), "gold.answer[0].kind"),
    case("label not in labels", BASE.replace('{ kind = "number", expected = 340 }',
                                             '{ kind = "label", labels = ["yes", "no"], expected = "maybe" }'),
         "gold.answer[0]", "expected label 'maybe' is not in labels"),
    case("number without expected", BASE.replace('{ kind = "number", expected = 340 }', '{ kind = "number" }'),
         "gold.answer[0]", "needs numeric 'expected'"),
    case("unknown forbidden", top('forbidden = ["cheating"]'), "forbidden", "unknown forbidden behaviour"),
    case("vars not a table", top("vars = 3"), "vars", "valid dictionary"),
    case("failure with unknown tool", BASE + '\n[[fixtures.failures]]\ntool = "teleport"\n',
         "fixtures.failures[0].tool", "unknown tool 'teleport'"),
    case("max_submissions negative", BASE + '\n[fixtures.submission]\nmax_submissions = -1\n',
         "fixtures.submission.max_submissions"),
    case("gold missing", BASE.replace(GOLD, ""), "gold: Field required"),
    case("reference missing", BASE.split("[[reference]]")[0], "reference: Field required"),
    case("title missing", BASE.replace('title = "Read one quantity"\n', ""), "title: Field required"),
]

MODEL = '[models.m]\nprovider = "scripted"\npolicy = "oracle"\n'


def models(name: str, text: str | bytes, *needles: str) -> Bad:
    return Bad(f"models.toml:{name}", {"models.toml": text}, RUN, USAGE, ["models.toml", *needles], once="ERROR:")


MODELS = [
    models("non-UTF-8 byte", b'[models.m]\nprovider = "scripted"\npolicy = "or\xe9cle"\n', "models.toml:3: not UTF-8",
           "byte 0xe9 at column 13"),
    models("UTF-16 file", '[models.m]\nprovider = "scripted"\n'.encode("utf-16"), "models.toml:1: not UTF-8"),
    models("invalid TOML", "[models.m\n", "not valid TOML"),
    models("models not a table", "models = 3\n", "'models' must be a table"),
    models("model not a table", "[models]\nm = 3\n", "models.m must be a table"),
    models("unknown provider", '[models.m]\nprovider = "gpt"\n', "models.m.provider"),
    models("openai without model", '[models.m]\nprovider = "openai"\n', "models.m", "needs 'model'"),
    models("scripted without policy", '[models.m]\nprovider = "scripted"\n', "models.m", "policy must be one of"),
    models("unknown policy", '[models.m]\nprovider = "scripted"\npolicy = "genius"\n', "policy must be one of"),
    models("temperature nan", MODEL + "temperature = nan\n", "models.m.temperature", "finite number"),
    models("temperature inf", MODEL + "temperature = inf\n", "models.m.temperature", "finite number"),
    models("timeout 0", MODEL + "timeout_s = 0\n", "models.m.timeout_s", "greater than 0"),
    models("timeout negative", MODEL + "timeout_s = -1\n", "models.m.timeout_s"),
    models("retries negative", MODEL + "retries = -1\n", "models.m.retries"),
    models("max_tokens 0", MODEL + "max_tokens = 0\n", "models.m.max_tokens"),
    models("negative price", MODEL + "pricing = { hourly_usd = -1 }\n", "models.m.pricing.hourly_usd"),
    models("nan price", MODEL + "pricing = { input_per_mtok = nan }\n", "models.m.pricing.input_per_mtok"),
    models("unknown pricing field", MODEL + "pricing = { per_call = 1 }\n", "models.m.pricing.per_call: unknown field"),
    models("unknown field", MODEL + 'colour = "red"\n', "models.m.colour: unknown field"),
    models("unknown system prompt", MODEL + 'system_prompt = "mean"\n', "models.m.system_prompt"),
    models("params_b negative", MODEL + "params_b = -1\n", "models.m.params_b"),
    models("seed not a number", MODEL + 'seed = "x"\n', "models.m.seed"),
    models("base_url not a string", MODEL + "base_url = 3\n", "models.m.base_url"),
    models("name with space", MODEL.replace("[models.m]", '[models."a b"]'), "models.'a b'", "a model name may hold"),
    models("name with comma", MODEL.replace("[models.m]", '[models."a,b"]'), "models.'a,b'"),
    models("name with ::", MODEL.replace("[models.m]", '[models."a::b"]'), "models.'a::b'"),
    models("name with bracket", MODEL.replace("[models.m]", '[models."x[1]"]'), "models.'x[1]'"),
    models("name with escape", MODEL.replace("[models.m]", '[models."x\\u001b[2J"]'), "a model name may hold"),
]

BASELINE = json.dumps(VALID_RUN) + "\n"


def option(name: str, args: list[str], *needles: str, files: dict[str, bytes | str] | None = None) -> Bad:
    return Bad(f"option:{name}", dict(files or {}), [*RUN, *args], USAGE, list(needles), once="ERROR:")


OPTIONS = [
    option("runs 0", ["--agentfloor-runs", "0"], "--agentfloor-runs: expected a whole number from 1 to 1000, got 0"),
    option("runs negative", ["--agentfloor-runs", "-1"], "--agentfloor-runs", "got -1"),
    option("runs word", ["--agentfloor-runs", "abc"], "--agentfloor-runs", "got 'abc'"),
    option("runs float", ["--agentfloor-runs", "1.5"], "--agentfloor-runs", "got '1.5'"),
    option("runs huge", ["--agentfloor-runs", "100001"], "--agentfloor-runs", "from 1 to 1000, got 100001"),
    option("runs enormous", ["--agentfloor-runs", "9" * 5000], "--agentfloor-runs", "got '9999"),
    option("episode timeout negative", ["--episode-timeout", "-1"], "--episode-timeout", "(0, 604800]", "got '-1'"),
    option("episode timeout nan", ["--episode-timeout", "nan"], "--episode-timeout", "got 'nan'"),
    option("episode timeout inf", ["--episode-timeout", "inf"], "--episode-timeout", "got 'inf'"),
    option("episode timeout 0", ["--episode-timeout", "0"], "--episode-timeout", "got '0'"),
    option("episode timeout word", ["--episode-timeout", "soon"], "--episode-timeout", "got 'soon'"),
    option("margin nan", ["--agentfloor-margin", "nan"], "--agentfloor-margin", "[0, 100]", "got 'nan'"),
    option("margin negative", ["--agentfloor-margin", "-1"], "--agentfloor-margin", "got '-1'"),
    option("margin over 100", ["--agentfloor-margin", "101"], "--agentfloor-margin", "got '101'"),
    option("margin inf", ["--agentfloor-margin", "inf"], "--agentfloor-margin", "got 'inf'"),
    option("margin word", ["--agentfloor-margin", "ten"], "--agentfloor-margin", "got 'ten'"),
    option("gate margin nan", ["--agentfloor-baseline", "base.jsonl", "--gate-margin", "nan"], "--gate-margin", "got 'nan'",
           files={"base.jsonl": BASELINE}),
    option("gate margin negative", ["--agentfloor-baseline", "base.jsonl", "--gate-margin", "-5"], "--gate-margin", "got '-5'",
           files={"base.jsonl": BASELINE}),
    option("token budget 0", ["--token-budget", "0"], "--token-budget", "got 0"),
    option("token budget word", ["--token-budget", "lots"], "--token-budget", "got 'lots'"),
    option("variant matching nothing", ["--variants", "v9"], "--variants: v9 match no case here", "v0 to v0"),
    option("one of two variants matching nothing", ["--variants", "v0,v99"], "--variants: v99 match no case"),
    option("variant badly named", ["--variants", "x1"], "--variants", "['x1']"),
    option("instance matching nothing", ["--instances", "i99"], "--instances: i99 match no case here", "i0 to i0"),
    option("instance badly named", ["--instances", "foo"], "--instances", "['foo']"),
    option("report dir is a file", ["--agentfloor-report-dir", "afile"], "--agentfloor-report-dir afile: is a file", files={"afile": "x"}),
    option("report dir under a file", ["--agentfloor-report-dir", "afile/sub"], "--agentfloor-report-dir afile/sub: cannot be created",
           files={"afile": "x"}),
    option("report mode", ["--agentfloor-report", "loud"], "--agentfloor-report", "got 'loud'"),
    option("bootstrap cluster", ["--bootstrap-cluster", "galaxy"], "--bootstrap-cluster", "got 'galaxy'"),
    option("unknown model", ["--model", "nope"], "--model: unknown model(s) nope"),
    option("unknown reference", ["--agentfloor-reference", "nope"], "--agentfloor-reference: 'nope' is not among the selected models"),
    option("record and replay", ["--agentfloor-record", "--agentfloor-replay"], "--agentfloor-record and --agentfloor-replay exclude each other"),
    option("gate floor syntax", ["--agentfloor-baseline", "base.jsonl", "--gate-floor", "A=1"], "--gate-floor 'A=1'",
           files={"base.jsonl": BASELINE}),
    option("gate floor over 100%", ["--agentfloor-baseline", "base.jsonl", "--gate-floor", "A>=150%"], "--gate-floor 'A>=150%'",
           files={"base.jsonl": BASELINE}),
    option("gate tier unknown", ["--agentfloor-baseline", "base.jsonl", "--gate-tiers", "Z"], "--gate-tiers", "['Z']",
           files={"base.jsonl": BASELINE}),
    option("gate tiers without baseline", ["--gate-tiers", "A"], "--gate-tiers needs --agentfloor-baseline PATH or --gate-floor"),
    option("baseline missing", ["--agentfloor-baseline", "nope.jsonl"], "--agentfloor-baseline nope.jsonl: no such file"),
    option("baseline a directory", ["--agentfloor-baseline", "somedir"], "--agentfloor-baseline somedir: is a directory",
           files={"somedir/x": "x"}),
    option("baseline garbage", ["--agentfloor-baseline", "base.jsonl"], "--agentfloor-baseline base.jsonl: no usable baseline run",
           files={"base.jsonl": b"\x00\x01garbage\n"}),
    option("baseline empty", ["--agentfloor-baseline", "base.jsonl"], "--agentfloor-baseline base.jsonl: no usable baseline run",
           "the file is empty", files={"base.jsonl": ""}),
    option("baseline run without tier", ["--agentfloor-baseline", "base.jsonl"], "run 1: no 'tier' field",
           files={"base.jsonl": json.dumps({k: v for k, v in VALID_RUN.items() if k != "tier"}) + "\n"}),
    option("baseline run with string run", ["--agentfloor-baseline", "base.jsonl"], "field 'run' is str, expected int",
           files={"base.jsonl": json.dumps({**VALID_RUN, "run": "0"}) + "\n"}),
    option("baseline model not in the baseline", ["--agentfloor-baseline", "base.jsonl", "--gate-baseline-model", "ghost"],
           "--gate-baseline-model: 'ghost' is not in --agentfloor-baseline base.jsonl (it holds oracle)",
           files={"base.jsonl": BASELINE}),
    option("baseline with two models, none named", ["--agentfloor-baseline", "base.jsonl"],
           "--agentfloor-baseline base.jsonl holds several models (m2, oracle)",
           files={"base.jsonl": BASELINE + json.dumps({**VALID_RUN, "model": "m2"}) + "\n"}),
    option("baseline summary without runs", ["--agentfloor-baseline", "s.json"], "this summary.json has no per-run outcomes",
           files={"s.json": "{}"}),
    option("baseline summary not JSON", ["--agentfloor-baseline", "s.json"], "--agentfloor-baseline s.json: not valid JSON",
           files={"s.json": "{"}),
    option("runs in ini", [], "ini setting agentfloor_runs in", "got 0", files={"pytest.ini": "[pytest]\nagentfloor_runs = 0\n"}),
    option("margin in ini", [], "ini setting agentfloor_margin in", "got 'nan'", files={"pytest.ini": "[pytest]\nagentfloor_margin = nan\n"}),
]

RECORD = None  # a valid record of the GOOD case, filled in once per session (see `good_record`)


def stored(name: str, content: bytes, *needles: str, records: int = 1) -> Bad:
    return Bad(f"runs.jsonl:{name}", {"reports/runs.jsonl": content}, [*RUN, "--agentfloor-resume"], OK,
               ["reports/runs.jsonl", *needles], records=records, once=needles[0])


STORED = [
    stored("non-UTF-8 line", b"\xff\xfe{}\n", "runs.jsonl:1: not UTF-8 (byte 0xff at column 1)"),
    stored("array line", b"[1,2,3]\n", "runs.jsonl:1: a JSON array, not a record object"),
    stored("null line", b"null\n", "runs.jsonl:1: a JSON null, not a record object"),
    stored("number line", b"42\n", "runs.jsonl:1: a JSON number, not a record object"),
    stored("string line", b'"x"\n', "runs.jsonl:1: a JSON string, not a record object"),
    stored("not JSON", b"{oops\n", "runs.jsonl:1: not a JSON record"),
    stored("deeply nested", b"[" * 100_000 + b"]" * 100_000 + b"\n", "runs.jsonl:1: not a JSON record"),
    stored("torn last line", b'{"model": "oracle", "ta', "runs.jsonl:1: truncated last line ignored"),
    stored("record lacking fields", b'{"model": "oracle", "trajectory": {}, "config": {}}\n',
           "1 record(s) lacking fields a resume needs"),
    stored("record with wrong types", json.dumps({"model": ["x"], "task": 1, "variant": None, "instance": "i0",
                                                  "run": "zero", "case_hash": 0, "trajectory": {}, "config": {}}
                                                 ).encode() + b"\n", "1 record(s) lacking fields a resume needs"),
    stored("many bad lines", b"[1]\n" * 50, "runs.jsonl: 50 bad lines skipped in all (45 more not shown)"),
]


def cassette(name: str, line: bytes, *needles: str) -> Bad:
    return Bad(f"cassette:{name}", {"reports/cassettes.jsonl": line}, [*RUN, "--agentfloor-replay"], FAILED,
               ["reports/cassettes.jsonl:1", *needles, "no recorded response for model 'oracle'"], records=1,
               once="cassettes.jsonl:1:")


def entry(reply: object, key: object = "k") -> bytes:
    return json.dumps({"key": key, "model": "oracle", "reply": reply}).encode() + b"\n"


CASSETTES = [
    cassette("non-UTF-8", b'{"key": "\xff"}\n', "not UTF-8"),
    cassette("array", b"[1,2,3]\n", "a JSON array, not a record object"),
    cassette("no key", entry({"content": "x"}, key=None), "no 'key' string"),
    cassette("reply not an object", entry("hello"), "'reply' is not an object"),
    cassette("tool calls a string", entry({"content": None, "tool_calls": "all"}), "'reply.tool_calls' must be a list"),
    cassette("tool call missing name", entry({"tool_calls": [{"id": "1", "arguments": "{}"}]}),
             "'reply.tool_calls' must be a list"),
    cassette("content a number", entry({"content": 3}), "'reply.content' must be a string or null"),
    cassette("negative tokens", entry({"content": "x", "tokens_in": -5}), "'reply.tokens_in' must be a non-negative number"),
    cassette("unknown reply field", entry({"content": "x", "exec": "rm -rf /"}), "unknown field(s) ['exec']"),
    cassette("torn", b'{"key": "k", "rep', "truncated last line ignored"),
]

CORPUS = CASES + MODELS + OPTIONS + STORED + CASSETTES


def test_the_corpus_is_large_and_its_names_unique() -> None:
    assert len(CORPUS) >= 100
    assert len({b.name for b in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("bad", CORPUS, ids=[b.name for b in CORPUS])
def test_bad_input(pytester: pytest.Pytester, bad: Bad) -> None:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    (pytester.path / "cases" / "tier_A" / "OK.toml").write_text(GOOD.format(id="OK"))
    for rel, content in bad.files.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    result = pytester.runpytest(*bad.args)
    out = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == bad.exit, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    for needle in bad.needles:
        assert needle in out, f"{needle!r} not in output:\n{out[-3000:]}"
    if bad.once:
        assert out.count(bad.once) == 1, out[-3000:]
    runs = pytester.path / "reports" / "runs.jsonl"
    records, _ = read_records(runs)
    assert len(records) == bad.records
    if bad.records:
        assert records[-1]["task"] == "OK"


@pytest.mark.parametrize("bad", STORED, ids=[b.name for b in STORED])
def test_report_command_on_a_damaged_runs_file(pytester: pytest.Pytester, bad: Bad,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The same damaged lines, followed by a good record, read by `python -m pytest_agentfloor report`."""
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    (pytester.path / "cases" / "tier_A" / "OK.toml").write_text(GOOD.format(id="OK"))
    pytester.runpytest(*RUN).assert_outcomes(passed=1)
    runs = pytester.path / "reports" / "runs.jsonl"
    good = runs.read_bytes()
    damaged = bad.files["reports/runs.jsonl"]
    assert isinstance(damaged, bytes)
    runs.write_bytes(damaged + (b"\n" if not damaged.endswith(b"\n") else b"") + good)
    capsys.readouterr()
    code = report_main([str(runs), "--n-boot", "100", "--out", str(pytester.path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    first = bad.needles[1]
    if "lacking fields" in first:  # the report names the record it cannot use
        assert "runs.jsonl: record 1: " in err and ", skipped" in err
    else:
        assert (first if "torn" not in bad.name else "runs.jsonl:1: not a JSON record") in err
    assert (pytester.path / "out" / "summary.json").exists()


def test_selections_matching_nothing_are_usage_errors_under_xdist_too(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    (pytester.path / "cases" / "tier_A" / "OK.toml").write_text(GOOD.format(id="OK"))
    result = pytester.runpytest_subprocess(*RUN, "--variants", "v9", "-n", "2")
    assert result.ret == USAGE
    assert result.stderr.str().count("ERROR: --variants: v9 match no case here") == 1
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
