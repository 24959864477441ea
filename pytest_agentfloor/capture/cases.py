"""``capture cases``: captured calls become call-site tables of the existing kind (``kind = "callsite"``).

One case per distinct request (the sha256 of its system prompt, its messages and its tools);
its reference is the production reply (the commonest, when the same request got several), marked
``review = "provisional"``; its provenance says where it came from and how often it was called.
Cases are grouped into one table per (site, system prompt, tool set, reply shape), written as
``<site>.toml`` (further tables of the site ``<site>-2.toml``, ...). The grader is inferred from
the output contract the replies show, unless the config names one (``[cases.SITE] grader``):

| replies | grader |
| --- | --- |
| tool calls | ``tool_calls``: the same calls (name, arguments), any order |
| one word each, from a small set | ``intent``, labels = the words seen at the site |
| a JSON array each | ``json_actions``: the same items, any order |
| a JSON value each | ``json``: an equal value |
| Python each | ``codegen`` when it defines the agent functions, else ``python`` (parses, same functions) |
| anything else | ``exact``: the same text, whitespace folded |

Every reference is graded by its table's grader before anything is written; an inferred
grader its reference fails falls back to ``exact``, so ``pytest DIR --model oracle`` passes.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..callsite.graders import GRADERS
from ..callsite.parsers import find_json, first_word, read_code
from ..callsite.schema import AGENT_FUNCTIONS, CallSiteCase
from .config import CaptureConfigError, load_config
from .store import call_mix, read_captures
from .wire import OLLAMA, content_text, sha256

PROG = "python -m pytest_agentfloor capture cases"
MAX_LABELS = 32


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def split_messages(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, the messages after it); the leading system/developer messages make the prompt."""
    n = 0
    parts = []
    while n < len(messages) and isinstance(messages[n], dict) and messages[n].get("role") in ("system", "developer"):
        parts.append(content_text(messages[n].get("content")))
        n += 1
    return "\n\n".join(parts), [m for m in messages[n:] if isinstance(m, dict)]


def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ollama messages in the OpenAI shape the providers take: call ids, arguments as JSON text."""
    out, pending, n = [], [], 0
    for m in messages:
        m = dict(m)
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function") or {}
                cid = c.get("id") or f"call_{n}"
                n += 1
                args = fn.get("arguments")
                calls.append({"id": cid, "type": "function", "function": {
                    "name": fn.get("name"), "arguments": args if isinstance(args, str) else json.dumps(args)}})
                pending.append(cid)
            m["tool_calls"] = calls
        elif m.get("role") == "tool" and "tool_call_id" not in m and pending:
            m["tool_call_id"] = pending.pop(0)
        out.append(m)
    return out


def reply_reference(reply: dict[str, Any]) -> tuple[str, str]:
    """(shape, reference text): tool calls as [{"name", "arguments"}] JSON, else the reply's text."""
    calls = reply.get("tool_calls") or []
    if calls:
        return "tools", json.dumps([{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls],
                                   sort_keys=True, ensure_ascii=False)
    return "text", reply.get("text") or ""


@dataclass
class Seen:
    """One distinct request and every captured call of it."""

    site: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[Any]
    digest: str
    api: str | None
    request_model: str | None
    params: dict[str, Any]
    times: list[str] = field(default_factory=list)
    models: Counter[str] = field(default_factory=Counter)
    replies: Counter[tuple[str, str]] = field(default_factory=Counter)

    def reference(self) -> tuple[str, str]:
        """The commonest reply (ties: the one seen last)."""
        top = max(self.replies.values())
        return [r for r in self.replies if self.replies[r] == top][-1]


def request_key(rec: dict[str, Any]) -> tuple[str, str, str, list[dict[str, Any]], list[Any]]:
    """(site, request hash, system prompt, messages after it, tools) of a captured call: the hash is a
    case's ``provenance.request_hash``, so ``capture replay`` finds the case of each call by it."""
    req = rec.get("request") or {}
    system, rest = split_messages(req.get("messages") or [])
    if rec.get("api") == OLLAMA:
        rest = openai_messages(rest)
    tools = req.get("tools") or []
    digest = sha256(_canon({"system": system, "messages": rest, "tools": tools}))
    return rec.get("site") or "unassigned", digest, system, rest, tools


def collect(folder: Path) -> tuple[dict[str, Seen], int, int]:
    """({request hash: Seen}, calls read, calls skipped: errors, non-200, unreadable replies)."""
    seen: dict[str, Seen] = {}
    read = skipped = 0
    for _path, _n, rec in read_captures(folder):
        read += 1
        reply = rec.get("reply") or {}
        if rec.get("status") != 200 or reply.get("error") or "request" not in rec:
            skipped += 1
            continue
        req = rec["request"]
        site, digest, system, rest, tools = request_key(rec)
        s = seen.setdefault(f"{site}:{digest}", Seen(site, system, rest, tools, digest, rec.get("api"),
                                                     rec.get("model"), req.get("params") or {}))
        s.times.append(rec.get("time") or "")
        if rec.get("upstream_model"):
            s.models[rec["upstream_model"]] += 1
        s.replies[reply_reference(reply)] += 1
    return seen, read, skipped


# -- the output contract -------------------------------------------------------------------------

def _label(text: str) -> str | None:
    word = first_word(text)
    return word if word and " ".join(text.split()).strip(".,:;!\"'").casefold() == word.casefold() else None


def _is_code(text: str) -> bool:
    code = read_code(text, "deployed")
    if "def " not in code and "import " not in code:
        return False
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _agent_functions(text: str) -> list[str]:
    tree = ast.parse(read_code(text, "deployed"))
    return [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name in AGENT_FUNCTIONS]


def infer_grader(shape: str, refs: list[str], site_refs: list[str]) -> tuple[str, dict[str, Any]]:
    """(grader, table fields) for a table whose references are `refs` (`site_refs`: every text reply
    seen at the site, for the label set)."""
    if shape == "tools":
        return "tool_calls", {}
    labels = {_label(r) for r in site_refs}
    if refs and None not in labels and len(labels) <= MAX_LABELS:
        return "intent", {"labels": sorted(labels, key=str)}  # type: ignore[arg-type]
    values = [find_json(r) for r in refs]
    if refs and all(isinstance(v, list) for v in values):
        return "json_actions", {}
    if refs and all(v is not None for v in values):
        return "json", {}
    if refs and all(_is_code(r) for r in refs):
        if all(_agent_functions(r) for r in refs):
            return "codegen", {}
        return "python", {}
    return "exact", {}


def _case_gold(grader: str, ref: str, labels: list[str]) -> dict[str, Any]:
    if grader in ("intent", "action_label"):
        word = first_word(ref)
        folded = {lab.casefold(): lab for lab in labels}
        return {"label": folded.get(word.casefold(), word)}
    if grader == "codegen":
        return {"code": {"functions": _agent_functions(ref)}}
    return {}


def _passes(grader: str, table: dict[str, Any], case: dict[str, Any]) -> bool:
    from ..callsite.schema import CodegenGold

    fn = GRADERS.get(grader)
    if fn is None:
        return True  # a grader of the user's own (the hook): not ours to check
    code = case.get("code")
    probe = CallSiteCase(id="probe", site=table["site"], grader=grader, group="captured",
                         system_prompt=table["system_prompt"], prompt="", labels=tuple(table.get("labels", ())),
                         label=case.get("label"), code=CodegenGold(**code) if code else None,
                         reference=case["reference"], content_hash="-")
    try:
        return fn(probe, case["reference"]).passed
    except Exception:
        return False


# -- TOML ------------------------------------------------------------------------------------

def toml_str(text: str) -> str:
    """A TOML string that reads back as `text` exactly."""
    if "\n" in text and "'''" not in text and not text.endswith("'") and "\r" not in text and \
            all(ch in "\n\t" or (ord(ch) >= 0x20 and ord(ch) != 0x7F) for ch in text):
        return "'''\n" + text + "'''"
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _json_field(value: Any) -> str:
    return toml_str(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {v!r}")


TABLE_KEYS = ("site", "grader", "labels", "max_tokens", "site_calls", "system_prompt")
CASE_KEYS = ("id", "group", "review", "label", "code", "prompt", "reference")


def table_text(table: dict[str, Any], cases: list[dict[str, Any]], calls: int, reviewed: bool = False) -> str:
    """The TOML of one captured table. Fields a user added by hand (``parser``, ...) are written after
    the known ones, so ``capture review`` can rewrite a table without losing them."""
    lines = [f"# written by `{PROG}` from {calls} captured call(s) of site {table['site']!r}: the references are",
             "# the production replies, provisional until reviewed (docs/capture.md)"
             + ("; reviewed with `capture review`" if reviewed else ""),
             'kind = "callsite"']
    for key in TABLE_KEYS:
        if key in table:
            lines.append(f"{key} = {_value(table[key])}")
    for key, v in table.items():
        if key not in TABLE_KEYS and key not in ("tools", "kind"):
            lines.append(f"{json.dumps(key)} = {_value(v)}")
    if table.get("tools"):
        lines.append(f"tools = {_json_field(table['tools'])}")
    for case in cases:
        lines += ["", "[[case]]"]
        for key in CASE_KEYS:
            if key in case:
                lines.append(f"{key} = {_value(case[key])}")
        for key, v in case.items():
            if key not in CASE_KEYS and key not in ("messages", "provenance"):
                lines.append(f"{json.dumps(key)} = {_value(v)}")
        if case.get("messages") is not None:
            lines.append(f"messages = {_json_field(case['messages'])}")
        prov = dict(case["provenance"])
        params = prov.pop("params", {})
        lines.append("provenance = " + _value(prov))
        if params:
            lines[-1] = lines[-1][:-2] + f", \"params\" = {toml_str(json.dumps(params, ensure_ascii=False))} }}"
    return "\n".join(lines) + "\n"


def _max_tokens(seen: list[Seen]) -> int | None:
    caps = set()
    for s in seen:
        p = s.params
        cap = p.get("max_completion_tokens", p.get("max_tokens", (p.get("options") or {}).get("num_predict")))
        caps.add(cap if isinstance(cap, int) and cap > 0 else None)
    return caps.pop() if len(caps) == 1 else None


def build(seen: dict[str, Seen], graders: dict[str, dict[str, Any]],
          mix: dict[str, int] | None = None) -> tuple[dict[str, str], list[str]]:
    """({file name: TOML text}, notes). ``mix``: {site: calls captured} (store.call_mix), written into
    every table of the site as ``site_calls``: the routing's weights."""
    groups: dict[tuple[str, str, str, str], list[Seen]] = {}
    for s in seen.values():
        shape, _ = s.reference()
        groups.setdefault((s.site, s.system, _canon(s.tools), shape), []).append(s)
    site_refs: dict[str, list[str]] = {}
    for s in seen.values():
        shape, ref = s.reference()
        if shape == "text":
            site_refs.setdefault(s.site, []).append(ref)
    order = sorted(groups, key=lambda k: (k[0], -sum(sum(s.replies.values()) for s in groups[k]), k))
    files: dict[str, str] = {}
    notes: list[str] = []
    per_site: Counter[str] = Counter()
    for key in order:
        site, system, _tools, shape = key
        members = sorted(groups[key], key=lambda s: (min(s.times), s.digest))
        refs = [s.reference()[1] for s in members]
        named = graders.get(site)
        if named is not None:
            grader = named["grader"]
            extra = {k: v for k, v in named.items() if k not in ("grader",)}
        else:
            grader, extra = infer_grader(shape, refs, site_refs.get(site, []))
        table: dict[str, Any] = {"site": site, "grader": grader, **extra, "system_prompt": system}
        if mix and mix.get(site):
            table["site_calls"] = mix[site]
        cap = _max_tokens(members)
        if cap is not None:
            table["max_tokens"] = cap
        if members[0].tools:
            table["tools"] = members[0].tools
        cases = []
        for s in members:
            _shape, ref = s.reference()
            last_user = next((content_text(m.get("content")) for m in reversed(s.messages) if m.get("role") == "user"), "")
            times = sorted(t for t in s.times if t)
            count = sum(s.replies.values())
            prov: dict[str, Any] = {"site": site, "first_seen": times[0] if times else "", "last_seen": times[-1] if times else "",
                                    "count": count, "request_hash": s.digest, "replies_seen": len(s.replies)}
            if s.models:
                prov["upstream_model"] = s.models.most_common(1)[0][0]
                prov["upstream_models"] = sorted(s.models)
            for k, v in (("request_model", s.request_model), ("api", s.api)):
                if v is not None:
                    prov[k] = v
            prov["params"] = s.params
            case: dict[str, Any] = {"id": f"{site}-{s.digest[:12]}", "group": "captured", "review": "provisional",
                                    **_case_gold(grader, ref, table.get("labels", [])),
                                    "prompt": last_user, "reference": ref, "messages": s.messages, "provenance": prov}
            cases.append(case)
        if named is None and not all(_passes(grader, table, c) for c in cases):
            notes.append(f"{site}: the inferred grader {grader!r} fails a reference; using 'exact'")
            table = {k: v for k, v in table.items() if k != "labels"}
            table["grader"] = grader = "exact"
            for c in cases:
                c.pop("label", None)
                c.pop("code", None)
        elif named is not None:
            failing = sum(not _passes(grader, table, c) for c in cases)
            if failing:
                notes.append(f"{site}: {failing} reference(s) fail the configured grader {grader!r}")
        per_site[site] += 1
        name = f"{site}.toml" if per_site[site] == 1 else f"{site}-{per_site[site]}.toml"
        text = table_text(table, cases, sum(c["provenance"]["count"] for c in cases))
        back = tomllib.loads(text)  # written as read: a file that does not read back is our bug, not the user's
        assert back["system_prompt"] == system and [c["reference"] for c in back["case"]] == refs, name
        files[name] = text
        notes.append(f"{name}: {len(cases)} case(s), grader {grader}"
                     + (f" (labels {', '.join(table['labels'])})" if table.get("labels") else "")
                     + f", {sum(c['provenance']['count'] for c in cases)} call(s)")
    return files, notes


def _reviewed(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return any(c.get("review") not in (None, "provisional") for c in data.get("case", []))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="write call-site tables from captured calls: one case per "
                                "distinct request, the production reply as the provisional reference")
    p.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR",
                   help="the capture folder (<site>.jsonl files)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="where the tables go (default: --from)")
    p.add_argument("--config", type=Path, default=None, metavar="TOML", help="graders per site ([cases.SITE])")
    p.add_argument("--force", action="store_true", help="overwrite tables holding reviewed (accepted/edited) cases")
    ns = p.parse_args(argv)
    try:
        config = load_config(ns.config)
        seen, read, skipped = collect(ns.source)
    except (CaptureConfigError, ValueError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if not seen:
        print(f"{PROG}: error: {ns.source}: no usable captured call ({read} read, {skipped} skipped)", file=sys.stderr)
        return 2
    files, notes = build(seen, config.graders, call_mix(ns.source))
    out = ns.out or ns.source
    out.mkdir(parents=True, exist_ok=True)
    held = [n for n in files if (out / n).is_file() and _reviewed(out / n)]
    if held and not ns.force:
        print(f"{PROG}: error: {', '.join(held)} hold reviewed cases; --force overwrites them", file=sys.stderr)
        return 2
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"{PROG}: {read} captured call(s), {skipped} skipped (errors), {len(seen)} distinct request(s) -> "
          f"{len(files)} table(s) in {out}")
    for n in notes:
        print(f"  {n}")
    return 0
