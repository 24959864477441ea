"""Grade outputs recorded elsewhere: `python -m pytest_agentfloor import FILE [--cases PATH] [-- PYTEST ARGS]`.

FILE is a JSONL of ``(case_id, model, output[, latency_s, input_tokens, output_tokens, cost_usd])``
(see :mod:`.providers.recorded`). Every model named in it becomes a ``recorded`` model, and one
ordinary pytest run grades their outputs against the call-site cases: the same items, records,
statistics and reports as a live run, with no model call. A bad line stops the command before
anything runs, naming file:line and the field.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .config import MODEL_NAME
from .providers.recorded import RecordedOutputsError, read_outputs


def model_names(sources: list[str]) -> dict[str, str]:
    """{model in the file: a models.toml name for it} (names must fit test ids and --model lists)."""
    out: dict[str, str] = {}
    for src in sources:
        name = src if MODEL_NAME.fullmatch(src) else (re.sub(r"[^A-Za-z0-9._:+-]+", "-", src).strip("-._:+")
                                                      or "model")[:90]
        name = name.replace("::", ":")
        base, n = name, 2
        while name in out.values():
            name, n = f"{base}-{n}", n + 1
        out[src] = name
    return out


def models_toml(path: Path, names: dict[str, str], hosted: set[str]) -> str:
    """The models.toml that reads each model's lines of `path` (strings JSON-escaped: valid TOML)."""
    lines = []
    for src, name in names.items():
        lines += [f"[models.{json.dumps(name)}]", 'provider = "recorded"', f"path = {json.dumps(str(path))}",
                  f"model = {json.dumps(src)}"]
        if src in hosted or name in hosted:
            lines.append("hosted = true")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    prog = "python -m pytest_agentfloor import"
    args = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, extra = args[:cut], args[cut + 1:]
    p = argparse.ArgumentParser(prog=prog, description="grade recorded outputs (JSONL) through the call-site "
                                "items, records and reports, with no model call; arguments after -- go to pytest")
    p.add_argument("file", type=Path, help="JSONL of case_id, model, output[, latency_s, input_tokens, "
                   "output_tokens, cost_usd]")
    p.add_argument("--cases", action="append", default=None, metavar="PATH",
                   help="call-site tables to grade against (repeatable; default: cases/callsite)")
    p.add_argument("--hosted", default="", metavar="MODELS",
                   help="comma-separated models of the file that are hosted (routing; default: none)")
    p.add_argument("--models-file", type=Path, default=None, metavar="OUT",
                   help="also keep the generated models.toml here (default: a temporary file)")
    ns = p.parse_args(args)
    try:
        outputs = read_outputs(ns.file)
    except RecordedOutputsError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if not outputs:
        print(f"{prog}: error: {ns.file}: no outputs (expected one JSON object per line)", file=sys.stderr)
        return 2
    names = model_names(sorted({model for model, _ in outputs}))
    hosted = {h.strip() for h in ns.hosted.split(",") if h.strip()}
    unknown = sorted(hosted - set(names) - set(names.values()))
    if unknown:
        print(f"{prog}: error: --hosted: {', '.join(unknown)} not in {ns.file} (models: {', '.join(names)})",
              file=sys.stderr)
        return 2
    text = models_toml(ns.file.resolve(), names, hosted)
    with tempfile.TemporaryDirectory(prefix="agentfloor-import-") as tmp:
        target = ns.models_file if ns.models_file is not None else Path(tmp) / "models.toml"
        target.write_text(text, encoding="utf-8")
        cases = ns.cases or ["cases/callsite"]
        # a pytest process of its own: the plugin is loaded (and its asserts rewritten) as in any run; the
        # models file as one `--opt=value` word, which pytest never takes for a path: a separate word made the
        # temporary directory count towards the rootdir, and reports/ landed in their common ancestor (/tmp)
        return subprocess.call([sys.executable, "-m", "pytest", *cases, "--model", ",".join(names.values()),
                                f"--agentfloor-models-file={target.resolve()}", *extra])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
