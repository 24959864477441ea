"""``capture review``: a person accepts, edits or drops each provisional reference of the captured tables.

A captured case's reference is what production answered, which is not necessarily right; until
someone has looked, it is ``review = "provisional"`` and the call-site statistics set it aside
(callsite.stats). Review state lives in the case files themselves, so it travels with the cases
(and ``capture cases`` refuses to overwrite a reviewed table without ``--force``):

- ``accepted``: the production reply is the reference;
- ``edited``: the reviewer's reply is (the production one is kept as ``provenance.production_reply``);
- ``dropped``: the case stays in the file, so it is remembered, but is never collected.

Three ways in: the interactive terminal flow (``input()``, one case at a time, each decision saved
at once), ``--accept-all SITE`` and a review sheet (``--export`` / ``--import``, CSV with one row
per case, for a spreadsheet or a colleague). An edited reference must pass its table's grader, so
``pytest DIR --model oracle`` keeps passing.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from ..callsite.parsers import first_word
from .cases import _case_gold, _passes, table_text

PROG = "python -m pytest_agentfloor capture review"
#: review sheet columns; a reviewer fills ``decision`` (and, for edit, ``reference``)
SHEET_COLUMNS = ("file", "id", "site", "calls", "review", "decision", "prompt", "reference", "judge", "judge_reason")
DECISIONS = ("accept", "edit", "drop", "provisional")
_STATE = {"accept": "accepted", "edit": "edited", "drop": "dropped", "provisional": "provisional"}


class ReviewError(ValueError):
    """A table or sheet review cannot use; the message names the file (and row or case)."""


def _json_text(v: Any) -> Any:
    """Tables hold tools, messages and params as JSON text (TOML has no null): read them back."""
    return json.loads(v) if isinstance(v, str) else v


@dataclass
class Table:
    """One captured table file: its table fields and its cases, in the shape ``table_text`` writes."""

    path: Path
    fields: dict[str, Any]
    cases: list[dict[str, Any]]

    @property
    def site(self) -> str:
        return str(self.fields.get("site"))

    def calls(self) -> int:
        return sum(int(c.get("provenance", {}).get("count") or 0) for c in self.cases)

    def text(self) -> str:
        return table_text(self.fields, self.cases, self.calls(), reviewed=True)

    def save(self) -> None:
        from ..report.files import atomic_write

        text = self.text()
        back = read_table(self.path, text)  # written as read: anything else is this module's bug
        assert back is not None and back.fields == self.fields and back.cases == self.cases, self.path
        atomic_write(self.path, text)


def read_table(path: Path, text: str | None = None) -> Table | None:
    """A captured table (``kind = "callsite"`` with reviewable cases), or None for any other TOML."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8") if text is None else text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ReviewError(f"{path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ReviewError(f"{path}: not TOML ({exc})") from None
    cases = data.pop("case", [])
    if data.pop("kind", None) != "callsite" or not any("review" in c for c in cases):
        return None
    if "tools" in data:
        data["tools"] = _json_text(data["tools"])
    for c in cases:
        if "messages" in c:
            c["messages"] = _json_text(c["messages"])
        if "provenance" in c:
            c["provenance"] = dict(c["provenance"])
            c["provenance"]["params"] = _json_text(c["provenance"].get("params", {}))
    return Table(Path(path), data, cases)


def load_tables(folder: Path, site: str | None = None) -> list[Table]:
    if not Path(folder).is_dir():
        raise ReviewError(f"{folder}: not a folder (the capture folder holding the tables `capture cases` wrote)")
    tables = [t for p in sorted(Path(folder).glob("*.toml")) if (t := read_table(p)) is not None]
    if site is not None:
        tables = [t for t in tables if t.site == site]
    return tables


def decide(table: Table, case: dict[str, Any], decision: str, reference: str | None = None) -> str | None:
    """Apply one decision to a case (in memory); the reason it cannot be applied, or None.

    An edit must pass the table's grader; an intent label not in the table's labels joins them."""
    if decision not in DECISIONS:
        return f"decision {decision!r}: one of {', '.join(DECISIONS)}"
    if decision != "edit":
        case["review"] = _STATE[decision]
        return None
    if reference is None or not reference.strip():
        return "an edit needs the new reference"
    grader = str(table.fields.get("grader"))
    fields = dict(table.fields)
    if grader in ("intent", "action_label"):
        word = first_word(reference)
        if not word:
            return "a label grader's reference starts with the label"
        if word.casefold() not in {lab.casefold() for lab in fields.get("labels", [])}:
            fields["labels"] = sorted([*fields.get("labels", []), word])
    edited = {**case, "reference": reference}
    edited.pop("label", None)
    edited.pop("code", None)
    edited.update(_case_gold(grader, reference, fields.get("labels", [])))
    try:
        ok = _passes(grader, {**fields, "system_prompt": fields.get("system_prompt", "")}, edited)
    except Exception as exc:  # a reference the grader cannot even read
        return f"the {grader} grader cannot read it ({type(exc).__name__})"
    if not ok:
        return f"it does not pass the table's grader ({grader}); write what a correct reply would be"
    prov = dict(case.get("provenance", {}))
    prov.setdefault("production_reply", case["reference"])
    if prov["production_reply"] == reference:
        prov.pop("production_reply")
    edited["provenance"] = prov
    edited["review"] = "edited" if "production_reply" in prov else "accepted"
    case.clear()
    case.update(edited)
    table.fields.update(fields)
    return None


def states(tables: list[Table]) -> str:
    lines = []
    for t in tables:
        n = Counter(c.get("review", "provisional") for c in t.cases)
        judged = Counter(c["judge"]["verdict"] for c in t.cases
                         if c.get("review", "provisional") == "provisional" and isinstance(c.get("judge"), dict))
        lines.append(f"  {t.path.name} (site {t.site}, grader {t.fields.get('grader')}): {len(t.cases)} case(s), "
                     f"{t.calls()} call(s): " + ", ".join(f"{n[s]} {s}" for s in
                                                         ("provisional", "accepted", "edited", "dropped"))
                     + (f" (of the provisional, the judge passed {judged['pass']}, failed {judged['fail']})"
                        if judged else ""))
    return "\n".join(lines)


# -- the interactive flow --------------------------------------------------------------------------------

def _show(text: str, limit: int = 1200) -> str:
    from ..render import safe_text

    text = safe_text(text)
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit} more characters)"


def interactive(tables: list[Table], ask: Callable[[str], str], out: TextIO) -> Counter[str]:
    """One prompt per provisional case: [a]ccept, [e]dit, [d]rop, [s]kip, [q]uit. Each decision is saved
    at once; end of input (Ctrl-D, or a fed stdin that runs out) stops like quit."""
    done: Counter[str] = Counter()
    todo = [(t, c) for t in tables for c in t.cases if c.get("review", "provisional") == "provisional"]
    # a judge's pre-labels order the work, failed first; they decide nothing (the case stays provisional)
    todo.sort(key=lambda tc: {"fail": 0, "pass": 2}.get(str((tc[1].get("judge") or {}).get("verdict")), 1))
    for n, (table, case) in enumerate(todo, 1):
        prov = case.get("provenance", {})
        print(f"\n[{table.site}] {case.get('id')} ({n}/{len(todo)}; {table.path.name}, called {prov.get('count', '?')}x, "
              f"upstream {prov.get('upstream_model') or '?'})", file=out)
        print(f"  last user turn: {_show(str(case.get('prompt', '')))}", file=out)
        print(f"  production reply (the provisional reference): {_show(str(case.get('reference', '')))}", file=out)
        label = case.get("judge")
        if isinstance(label, dict):
            print(f"  judge {label.get('judge')} (a pre-label, not a review): {str(label.get('verdict')).upper()}: "
                  f"{_show(str(label.get('reason', '')), 400)}", file=out)
        while True:
            try:
                answer = ask("  [a]ccept  [e]dit  [d]rop  [s]kip  [q]uit > ").strip().lower()
            except EOFError:
                print("", file=out)
                return done
            if answer in ("q", "quit"):
                return done
            if answer in ("s", "skip", ""):
                done["skipped"] += 1
                break
            decision = {"a": "accept", "e": "edit", "d": "drop"}.get(answer[:1])
            if decision is None:
                print("  (a, e, d, s or q)", file=out)
                continue
            reference = None
            if decision == "edit":
                print("  the correct reply; end with a line holding only '.':", file=out)
                lines = []
                try:
                    while (line := ask("  | ")) != ".":
                        lines.append(line)
                except EOFError:
                    return done
                reference = "\n".join(lines)
            problem = decide(table, case, decision, reference)
            if problem:
                print(f"  not applied: {problem}", file=out)
                continue
            table.save()
            done[case["review"]] += 1
            break
    return done


# -- the review sheet ------------------------------------------------------------------------------------

def export_sheet(tables: list[Table]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SHEET_COLUMNS)
    for t in tables:
        for c in t.cases:
            label: dict[str, Any] = c["judge"] if isinstance(c.get("judge"), dict) else {}
            w.writerow([t.path.name, c.get("id"), t.site, c.get("provenance", {}).get("count", ""),
                        c.get("review", "provisional"), "", c.get("prompt", ""), c.get("reference", ""),
                        label.get("verdict", ""), label.get("reason", "")])
    return buf.getvalue()


def import_sheet(tables: list[Table], sheet: Path) -> tuple[Counter[str], list[Table]]:
    """Apply every row with a decision; all rows are checked before any file changes."""
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReviewError(f"{sheet}: {exc}") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    missing = [c for c in ("file", "id", "decision", "reference") if rows and c not in rows[0]]
    if not rows or missing:
        raise ReviewError(f"{sheet}: expected a CSV with the columns {', '.join(SHEET_COLUMNS)} "
                          f"({'no rows' if not rows else 'missing ' + ', '.join(missing)})")
    by_key = {(t.path.name, c.get("id")): (t, c) for t in tables for c in t.cases}
    done: Counter[str] = Counter()
    changed: dict[Path, Table] = {}
    for n, row in enumerate(rows, 2):  # line 1 is the header
        decision = (row.get("decision") or "").strip().lower()
        if not decision:
            continue
        where = f"{sheet}:{n}"
        hit = by_key.get((row.get("file") or "", row.get("id") or ""))
        if hit is None:
            raise ReviewError(f"{where}: no case {row.get('id')!r} in {row.get('file')!r}")
        table, case = hit
        reference = row.get("reference")
        if decision != "edit" and reference is not None and reference != case.get("reference"):
            raise ReviewError(f"{where} ({case.get('id')}): the reference was changed but the decision is "
                              f"{decision!r}; write edit to replace it")
        problem = decide(table, case, decision, reference if decision == "edit" else None)
        if problem:
            raise ReviewError(f"{where} ({case.get('id')}): {problem}")
        done[case["review"]] += 1
        changed[table.path] = table
    return done, list(changed.values())


# -- the command -----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None, *, ask: Callable[[str], str] = input, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    p = argparse.ArgumentParser(prog=PROG, description="review the provisional references of captured call-site "
                                "tables: accept, edit or drop each (interactive), accept a whole site, or export and "
                                "import a review sheet (CSV). Only reviewed references count in the statistics")
    p.add_argument("folder", type=Path, metavar="DIR", help="the folder holding the tables `capture cases` wrote")
    p.add_argument("--site", default=None, help="only this site's tables")
    p.add_argument("--accept-all", action="append", default=[], metavar="SITE",
                   help="accept every provisional reference of SITE as it is (repeatable; 'all': every site)")
    p.add_argument("--export", type=Path, default=None, metavar="CSV", help="write the review sheet and stop")
    p.add_argument("--import", dest="sheet", type=Path, default=None, metavar="CSV",
                   help="apply a filled review sheet (decision: accept, edit, drop or provisional)")
    p.add_argument("--list", action="store_true", help="list the review states and stop")
    p.add_argument("--agentfloor-judge", "--judge", dest="judge", default="", metavar="MODEL",
                   help="first have this model of models.toml pre-label every provisional reference (pass or fail "
                   "with a reason, shown in the review and the sheet); a pre-label is never a review")
    p.add_argument("--models-file", type=Path, default=Path("models.toml"), metavar="PATH",
                   help="where the judge is configured (default models.toml)")
    p.add_argument("--report-dir", type=Path, default=Path("reports"), metavar="DIR",
                   help="the judge's verdict cache lives here, as in a pytest run (default reports)")
    p.add_argument("--judge-cache", default="readwrite", metavar="MODE", help="readwrite, read, write or off")
    ns = p.parse_args(argv)
    status = 0
    try:
        tables = load_tables(ns.folder, ns.site)
        if not tables:
            raise ReviewError(f"{ns.folder}: no captured table" + (f" of site {ns.site!r}" if ns.site else "")
                              + " (write them with `python -m pytest_agentfloor capture cases --from DIR`)")
        sites = {t.site for t in tables}
        unknown = [s for s in ns.accept_all if s != "all" and s not in sites]
        if unknown:
            raise ReviewError(f"--accept-all {unknown[0]}: no such site in {ns.folder} (sites: {', '.join(sorted(sites))})")
        if ns.export is not None:
            ns.export.write_text(export_sheet(tables), encoding="utf-8")
            print(f"{PROG}: wrote the review sheet {ns.export} ({sum(len(t.cases) for t in tables)} case(s)); fill "
                  f"'decision' ({', '.join(DECISIONS)}; for edit, the new 'reference') and apply it with --import",
                  file=out)
            return 0
        done: Counter[str] = Counter()
        if ns.judge:
            _, errors = _prelabel(tables, ns, out)
            if errors:
                status = 1
        if ns.sheet is not None:
            done, changed = import_sheet(tables, ns.sheet)
            for t in changed:
                t.save()
        for site in ns.accept_all:
            for t in tables:
                if site in ("all", t.site):
                    n = 0
                    for c in t.cases:
                        if c.get("review", "provisional") == "provisional":
                            decide(t, c, "accept")
                            n += 1
                    if n:
                        t.save()
                        done["accepted"] += n
        if ns.sheet is None and not ns.accept_all and not ns.list:
            print(f"{PROG}: {ns.folder}\n{states(tables)}", file=out)
            done = interactive(tables, ask, out)
    except ReviewError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if done:
        print(f"{PROG}: " + ", ".join(f"{n} {k}" for k, n in sorted(done.items())), file=out)
    print(f"{PROG}: {ns.folder}\n{states(tables)}", file=out)
    return status


def _prelabel(tables: list[Table], ns: argparse.Namespace, out: TextIO) -> tuple[Counter[str], list[str]]:
    """Run the judge over the provisional references; ReviewError when it cannot be set up."""
    from ..judge.command import JudgeSetupError, open_judge
    from .prelabel import prelabel

    try:
        judge, servers = open_judge(ns.judge, ns.models_file, ns.report_dir, ns.judge_cache)
    except JudgeSetupError as exc:
        raise ReviewError(str(exc).replace("--judge", "--agentfloor-judge", 1)) from None
    print(f"{PROG}: pre-labelling the provisional references with the judge {judge.describe()}", file=out)
    try:
        judged, errors = prelabel(tables, judge, out=lambda line: print(line, file=out))
    finally:
        judge.close()
        for server in servers:
            server.stop()
    print(f"{PROG}: judge {judge.name}: {judged['pass']} pass, {judged['fail']} fail"
          + (f", {judged['kept']} already labelled" if judged["kept"] else "")
          + (f", {len(errors)} could not be labelled (first: {errors[0]})" if errors else "")
          + " (pre-labels only: these cases stay provisional until reviewed)", file=out)
    return judged, errors
