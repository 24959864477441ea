"""Command line: `python -m pytest_agentfloor COMMAND ...` for work that needs no pytest run."""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "ladder-table": ("pytest_agentfloor.suite.table", "write the docs table of the cases"),
    "report": ("pytest_agentfloor.report.cli", "rebuild every report from a runs.jsonl"),
    "regrade": ("pytest_agentfloor.regrade", "re-grade stored trajectories under the current cases"),
    "compare": ("pytest_agentfloor.compare", "compare stored runs: paired differences, changed items, gate verdict"),
    "view": ("pytest_agentfloor.report.viewer", "write (or serve) the transcript viewer for runs.jsonl files"),
    "judge-audit": ("pytest_agentfloor.judge.audit", "agreement of a judge with the labelled audit set"),
    "import": ("pytest_agentfloor.byo", "grade recorded outputs (JSONL) through the call-site items, no model call"),
    "capture": ("pytest_agentfloor.capture.command", "a recording proxy in front of an agent's model; `capture cases`: "
                "cases from it; `capture replay`: the session sent to a candidate"),
    "options-doc": ("pytest_agentfloor.optionsdoc", "print docs/options.md, the option reference, from the parser"),
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        print("usage: python -m pytest_agentfloor COMMAND [ARGS]\n\ncommands:")
        for name, (_, text) in COMMANDS.items():
            print(f"  {name:14} {text}")
        return 0 if args and args[0] in ("-h", "--help") else 2
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate from a model's output prints as its escape
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    module = importlib.import_module(COMMANDS[args[0]][0])
    return int(module.main(args[1:]) or 0)


if __name__ == "__main__":
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly as a shell tool does, not with a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 141  # 128 + SIGPIPE, what the shell reports for a tool its pipe closed on
    sys.exit(status)
