"""`python -m pytest_agentfloor options-doc`: docs/options.md, generated from the option parser.

The reference is built by running :func:`options.add_options` on a recorder that stands in for
pytest's parser, so the page says exactly what ``pytest --help`` does (name, alias, ini setting,
default, meaning) and tests/test_options_doc.py fails when the two drift apart.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = """# Options

Generated from the option parser by `python -m pytest_agentfloor options-doc`; do not edit by hand
(tests/test_options_doc.py fails when this page and the parser differ). `pytest --help` lists the
same options under "{group}".

Every option has an ini setting of the same meaning (command line first, then the ini file, then
the default). Options are spelled `--agentfloor-NAME`; `--model` and the aliases listed here are
also accepted. A short spelling is kept only where no well-known plugin uses it: `--runs`,
`--resume`, `--record`, `--replay`, `--baseline`, `--reference`, `--margin`, `--report-dir`,
`--protocol`, `--system-prompt`, `--think` and `--reasoning-effort` are *not* accepted (pytest-replay
owns `--replay`; the rest are names projects commonly give their own conftest options).
"""

_HELP = re.compile(r"^(?P<text>.*) \(default: (?P<default>.*); ini: (?P<ini>\w+)\)$", re.S)


@dataclass
class Option:
    names: tuple[str, ...]
    ini: str
    default: str
    text: str
    metavar: str | None
    flag: bool


@dataclass
class Recorder:
    """Enough of pytest.Parser (getgroup, addoption, addini) for :func:`options.add_options`."""

    group: str = ""
    options: list[Option] = field(default_factory=list)
    ini: dict[str, tuple[str, str, Any]] = field(default_factory=dict)  # name -> (help, type, default)

    def getgroup(self, name: str, description: str = "") -> "Recorder":
        self.group = description or name
        return self

    def addoption(self, *names: str, **kw: Any) -> None:
        m = _HELP.match(kw.get("help", ""))
        if m is None:
            raise ValueError(f"option {names[0]}: its help does not end in '(default: ...; ini: ...)'")
        self.options.append(Option(names, m["ini"], m["default"], " ".join(m["text"].split()), kw.get("metavar"),
                                   kw.get("action") == "store_true"))

    def addini(self, name: str, help: str, type: str | None = None, default: Any = None) -> None:
        self.ini[name] = (help, type or "string", default)


def recorded() -> Recorder:
    from .options import PREFIX, SHORT, add_options

    rec = Recorder()
    add_options(rec)  # type: ignore[arg-type]
    for opt in rec.options:  # the short spelling pytest adds where no plugin or conftest took it
        alias = "--" + opt.names[0].removeprefix(PREFIX)
        if opt.names[0].startswith(PREFIX) and alias in SHORT and alias not in opt.names:
            opt.names = (*opt.names, alias)
    return rec


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    rec = recorded()
    lines = [HEADER.format(group=rec.group), "| option | ini setting | default | meaning |", "| --- | --- | --- | --- |"]
    for o in rec.options:
        shown = ", ".join(f"`{n}{'' if o.flag or not o.metavar else ' ' + o.metavar}`" for n in o.names)
        lines.append(f"| {_cell(shown)} | `{o.ini}` | {_cell(o.default)} | {_cell(o.text)} |")
    ini_only = sorted(set(rec.ini) - {o.ini for o in rec.options})
    if ini_only:
        lines += ["", "Ini settings without an option:", "", "| ini setting | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{n}` | {rec.ini[n][1]} | {_cell(rec.ini[n][0])} |" for n in ini_only]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from .report.args import OneLineParser

    p = OneLineParser(prog="python -m pytest_agentfloor options-doc",
                      description="Print docs/options.md, the option reference generated from the parser.")
    p.add_argument("--check", type=Path, metavar="PATH",
                   help="exit 1, naming the file, when PATH differs from what would be generated")
    args = p.parse_args(argv)
    text = render()
    if args.check is not None:
        current = args.check.read_text(encoding="utf-8") if args.check.is_file() else ""
        if current != text:
            print(f"{args.check}: out of date; regenerate it with "
                  f"python -m pytest_agentfloor options-doc > {args.check}", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0
