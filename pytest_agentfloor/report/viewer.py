"""viewer.html: a self-contained transcript viewer built from runs.jsonl.

One file, no request to anywhere. The index (what the filters and the list need) is embedded as
JSON and parsed at load; the transcripts travel gzip-compressed and base64-encoded in three data
blocks the page inflates (the browser's own DecompressionStream) after the list is drawn: the
distinct strings, which run refers to which string (what full-text search walks), and one JSON
line per run (parsed only when that run is opened). A 12,750-run sweep's page is thus a fifth
of the bytes it was (2.3 MB, not 12.1), little of it JSON to parse before the list is shown
(benchmarks/bench_viewer.py). Repeated strings (system prompts, user
prompts, tool results) are stored once. Model-controlled text only ever reaches the page through
``textContent`` (viewer.js), never as HTML. The URL hash holds the filters and the open run(s),
so report.html links straight to the runs behind a cell. A run is named in a link by what it is
(session, model, case, variant, instance, run; viewer.js ``refOf``), never by its row, so a link
outlives a regenerated file; several runs named at once are shown side by side, aligned turn by
turn.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from array import array
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..grading.failure import FAILURE_NAMES
from ..grading.obligations import NAMES as OBLIGATION_NAMES
from ..results import read_records, usable_runs

VIEWER_FILE = "viewer.html"
#: index columns, in the order viewer.js reads them
COLUMNS: tuple[str, ...] = ("source", "model", "tier", "task", "variant", "instance", "run", "outcome",
                            "failure_mode", "first_unmet", "terminal_flag", "termination", "turns", "calls",
                            "tokens_in", "tokens_out", "latency_s", "cost_usd", "headline", "case_hash", "repair",
                            "levels")
#: index columns held as numbers; every other column is stored as a position in its own list of values
NUMERIC = frozenset({"run", "turns", "calls", "tokens_in", "tokens_out", "latency_s", "cost_usd"})


def repair_of(record: dict[str, Any]) -> str | None:
    """The run's repair arm (repairs and a raised cap, docs/pressures.md): 'none' when it has neither;
    None for records that name no configuration."""
    facets = record.get("facets") if isinstance(record.get("facets"), dict) else {}
    cfg = record.get("config") if isinstance(record.get("config"), dict) else None
    src = facets if facets and ("repairs" in facets or "cap_scale" in facets) else cfg
    if src is None:
        return "none" if facets else None
    parts = sorted(str(x) for x in src.get("repairs") or ())
    scale = src.get("cap_scale")
    if isinstance(scale, int) and not isinstance(scale, bool) and scale > 1:
        parts.append(f"cap{scale}")
    return "+".join(parts) or "none"


def levels_of(record: dict[str, Any]) -> str | None:
    """The pressure levels of a run, as the markers name them (V128 Whigh linked routed; frontier calls30)."""
    f = record.get("facets")
    if not isinstance(f, dict):
        return None
    if f.get("calls") is not None:
        return f"frontier calls{f['calls']}"
    out = [f"V{f['V']}" if f.get("V") is not None else None, f"W{f['W']}" if f.get("W") else None, f.get("D"),
           f.get("lane")]
    return " ".join(str(x) for x in out if x) or None


class _Strings:
    """A table of distinct strings: each repeated prompt or result is stored once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.values: list[str] = []

    def __call__(self, value: Any) -> int | None:
        if value is None:
            return None
        s = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        n = self.index.get(s)
        if n is None:
            n = self.index[s] = len(self.values)
            self.values.append(s)
        return n


def outcome(record: dict[str, Any]) -> str:
    if record.get("infra_error"):
        return "infra"
    return "pass" if record.get("passed") else "fail"


def headline(record: dict[str, Any]) -> str:
    """The cause-first one-liner of a failed run (as in the pytest failure message)."""
    from ..grading.headline import record_headline

    return record_headline(record)


def _num(value: Any, digits: int = 6) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return round(value, digits) if isinstance(value, float) else value


def _list(value: Any) -> list[Any]:
    """A record's list field, or [] when a hand-made or damaged record holds something else there."""
    return value if isinstance(value, list) else []


def _messages_of(traj: dict[str, Any], role: str) -> str | None:
    for m in _list(traj.get("messages")):
        if isinstance(m, dict) and m.get("role") == role:
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return None


def _detail(record: dict[str, Any], strings: _Strings) -> dict[str, Any]:
    raw_traj = record.get("trajectory")
    traj: dict[str, Any] = raw_traj if isinstance(raw_traj, dict) else {}
    turns = []
    for t in _list(traj.get("turns")):
        if not isinstance(t, dict):
            continue
        calls = []
        for c in _list(t.get("calls")):
            if not isinstance(c, dict):
                continue
            flags = [f for f in ("hallucinated", "malformed", "repeated") if c.get(f)]
            calls.append({"n": strings(str(c.get("name", "?"))), "a": strings(str(c.get("raw_arguments", ""))),
                          "r": strings(c.get("result", {})), "f": flags})
        turns.append({"c": strings(t.get("content")), "fr": t.get("finish_reason"), "ti": _num(t.get("tokens_in")),
                      "to": _num(t.get("tokens_out")), "l": _num(t.get("latency_s")), "b": _num(t.get("busy_s")),
                      "lk": bool(t.get("leaked_call")), "k": calls})
    verdicts = record.get("verdicts")
    if not isinstance(verdicts, list):  # records written before verdicts were stored: pass/fail only
        raw_obl = record.get("obligations")
        obl: dict[str, Any] = raw_obl if isinstance(raw_obl, dict) else {}
        verdicts = [{"code": k, "ok": bool(v)} for k, v in obl.items()]
    extra = {k: record[k] for k in ("judge", "kind", "facets", "protocol", "protocol_params", "capped")
             if record.get(k) is not None}
    return {
        "sys": strings(_messages_of(traj, "system")), "usr": strings(_messages_of(traj, "user")),
        "tools": strings(traj.get("tools")), "turns": turns, "ans": strings(traj.get("final_answer")),
        "end": traj.get("termination", record.get("termination")), "err": strings(record.get("error")),
        "sub": strings(traj.get("submissions") or None),
        "lim": [_num(traj.get("turn_budget")), _num(traj.get("call_limit")), _num(traj.get("token_budget"))],
        "v": [{"c": str(v.get("code")), "ok": bool(v.get("ok")), "e": strings(v.get("expected") or None),
               "o": strings(v.get("observed") or None)} for v in verdicts if isinstance(v, dict)],
        "node": record.get("nodeid"), "wall": _num(record.get("wall_s")), "busy": _num(record.get("busy_s")),
        "x": strings(extra or None),
    }


def build_data(sources: Sequence[tuple[str, Iterable[dict[str, Any]]]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(index, transcripts) for viewer.js from (label, records) pairs, one pair per runs file."""
    strings = _Strings()
    rows: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    for label, records in sources:
        for r in records:
            rows.append([
                label, r["model"], r["tier"], r["task"], r["variant"], r["instance"], r["run"], outcome(r),
                r.get("failure_mode"), r.get("first_unmet"), r.get("terminal_flag"), r.get("termination"),
                _num(r.get("turns")), _num(r.get("calls")), _num(r.get("tokens_in")), _num(r.get("tokens_out")),
                _num(r.get("latency_s"), 3), _num(r.get("cost_usd"), 8),
                "" if outcome(r) == "pass" else headline(r),
                str(r["case_hash"])[:12] if r.get("case_hash") else None, repair_of(r), levels_of(r),
            ])
            try:
                details.append(_detail(r, strings))
            except Exception as exc:  # noqa: BLE001 - a damaged record still gets its row, never a crash
                details.append({"turns": [], "v": [], "err": strings(f"transcript unreadable ({type(exc).__name__})"),
                                "node": str(r.get("nodeid"))})
    index = {"columns": list(COLUMNS), "rows": rows, "sources": [label for label, _ in sources],
             "failure_names": FAILURE_NAMES, "obligation_names": OBLIGATION_NAMES, "nstrings": len(strings.values)}
    return index, {"strings": strings.values, "runs": details}


def pack_index(index: dict[str, Any]) -> dict[str, Any]:
    """The index as the page embeds it: each text column's values listed once (``dicts``), its cells
    positions in that list (null stays null). Half the bytes to parse before the list is drawn."""
    columns: list[str] = index["columns"]
    coded = [n for n, c in enumerate(columns) if c not in NUMERIC]
    dicts: dict[str, list[Any]] = {columns[n]: [] for n in coded}
    seen: dict[int, dict[str, int]] = {n: {} for n in coded}
    rows = []
    for row in index["rows"]:
        row = list(row)
        for n in coded:
            value = row[n]
            if value is None:
                continue
            key = json.dumps(value)
            at = seen[n].get(key)
            if at is None:
                at = seen[n][key] = len(dicts[columns[n]])
                dicts[columns[n]].append(value)
            row[n] = at
        rows.append(row)
    return {**index, "rows": rows, "dicts": dicts}


def strings_of(detail: dict[str, Any]) -> list[int]:
    """The distinct string ids a run's transcript refers to: what full-text search looks through."""
    out = [detail[k] for k in ("sys", "usr", "tools", "ans", "err", "sub", "x")]
    for t in detail["turns"]:
        out.append(t["c"])
        for c in t["k"]:
            out += (c["n"], c["a"], c["r"])
    for v in detail["v"]:
        out += (v["e"], v["o"])
    return sorted({i for i in out if i is not None})


#: NUL separates the strings in the text block; a NUL inside a string is shown as U+2400 (␀)
SEPARATOR, NUL_SHOWN = "\0", "\u2400"


def _pack(data: bytes) -> str:
    """gzip (no timestamp, so the same runs give the same file) then base64: inert ASCII in a data block."""
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def transcript_blocks(transcripts: dict[str, Any]) -> dict[str, str]:
    """The three packed data blocks viewer.js inflates: strings, postings, one JSON line per run.

    - ``af-text``: the distinct strings joined by NUL (UTF-8), searched as one lowercased text;
    - ``af-post``: little-endian uint32, ``offsets[n_runs + 1]`` then each run's string ids (CSR);
    - ``af-runs``: each run's transcript as one JSON line (JSON never holds a raw newline)."""
    strings: list[str] = transcripts["strings"]
    runs: list[dict[str, Any]] = transcripts["runs"]
    text = SEPARATOR.join(s.replace(SEPARATOR, NUL_SHOWN) for s in strings)
    offsets, ids = array("I", [0]), array("I")
    for d in runs:
        ids.extend(strings_of(d))
        offsets.append(len(ids))
    post = offsets + ids
    if sys.byteorder == "big":
        post.byteswap()
    lines = "\n".join(json.dumps(d, separators=(",", ":")) for d in runs)
    # a lone surrogate (JSON may hold one) becomes bytes the page decodes as U+FFFD, never an error here
    return {"af-text": _pack(text.encode("utf-8", "surrogatepass")), "af-post": _pack(post.tobytes()),
            "af-runs": _pack(lines.encode("ascii"))}


def _script_json(value: Any) -> str:
    """JSON that cannot close its <script> element or start a comment inside it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def render_viewer(sources: Sequence[tuple[str, Iterable[dict[str, Any]]]], title: str = "agentfloor runs") -> str:
    """The page; its header names the repairs and raised caps the runs took (files.deviations), as
    every report header does, since they change the harness the protocol froze."""
    from html import escape

    from .files import deviations

    sources = [(label, list(records)) for label, records in sources]
    index, transcripts = build_data(sources)
    dev = deviations(r for _, records in sources for r in records)
    body = _asset("viewer.body.html")
    if dev:
        line = escape("Deviation from the protocol: " + "; ".join(dev))
        body = body.replace("</header>", f'<p class="deviation"><strong>{line}</strong></p>\n</header>', 1)

    # after the script: the list is drawn before the parser reads them (viewer.js waits for them)
    blocks = "".join(f"<script type=\"application/gzip\" id=\"{name}\">{packed}</script>\n"
                     for name, packed in transcript_blocks(transcripts).items())

    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{escape(title)}</title>\n<style>{_asset('viewer.css')}</style></head>\n<body>\n"
        f"{body}\n"
        f"<script type=\"application/json\" id=\"af-index\">{_script_json(pack_index(index))}</script>\n"
        f"<script>{_asset('viewer.js')}</script>\n"
        f"{blocks}</body></html>\n"
    )


def source_labels(paths: Sequence[Path]) -> list[str]:
    """A short distinct label per runs file: its session directory name, else its path."""
    labels = []
    for p in paths:
        parent = p.resolve().parent
        session = parent / "session.json"
        label = parent.name
        if session.is_file():
            try:
                label = str(json.loads(session.read_text(encoding="utf-8")).get("session_id") or label)
            except (ValueError, OSError, AttributeError):
                pass
        labels.append(label)
    if len(set(labels)) < len(labels):
        labels = [str(p) for p in paths]
    return labels


def load_sources(paths: Sequence[Path]) -> tuple[list[tuple[str, list[dict[str, Any]]]], list[str]]:
    """(label, usable records) per runs file, and every problem found on the way."""
    problems: list[str] = []
    sources = []
    for label, path in zip(source_labels(paths), paths):
        records, notes = read_records(path)
        records, skipped = usable_runs(records, str(path))
        problems += notes + skipped
        sources.append((label, records))
    return sources, problems


def write_viewer(paths: Sequence[Path], out: Path) -> tuple[int, list[str]]:
    """Write viewer.html for the runs files; return (runs shown, problems)."""
    from ..reportdir import atomic_write

    sources, problems = load_sources(paths)
    atomic_write(out, render_viewer(sources))
    return sum(len(r) for _, r in sources), problems


def _serve(path: Path, port: int) -> None:
    """Serve the one file on 127.0.0.1 until interrupted (nothing else is reachable)."""
    import http.server

    body = path.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] not in ("/", f"/{VIEWER_FILE}"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler) as server:
        print(f"agentfloor view: serving http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_agentfloor view RUNS.jsonl [RUNS.jsonl ...] [--out FILE] [--serve [--port N]]``."""
    import sys

    from .args import OneLineParser as _Parser, whole_number

    p = _Parser(prog="python -m pytest_agentfloor view",
                description="Write a self-contained transcript viewer (viewer.html) from one or more runs.jsonl.")
    p.add_argument("runs", type=Path, nargs="+", help="runs.jsonl written by a session (several: kept apart by session)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"output file (default: {VIEWER_FILE} beside the first runs file)")
    p.add_argument("--serve", action="store_true", help="also serve it on 127.0.0.1 until Ctrl-C")
    p.add_argument("--port", type=whole_number(0, 65535), default=0,
                   help="port for --serve, 1-65535 (default 0: a free one)")
    args = p.parse_args(argv)
    prog = "agentfloor view"
    missing = [str(r) for r in args.runs if not r.is_file()]
    if missing:
        print(f"{prog}: error: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    out = args.out if args.out is not None else args.runs[0].parent / VIEWER_FILE
    if out.is_dir():
        out = out / VIEWER_FILE
    try:
        n, problems = write_viewer(args.runs, out)
    except OSError as exc:
        print(f"{prog}: error: cannot write {out} ({exc})", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{prog}: {problem}", file=sys.stderr)
    if not n:
        print(f"{prog}: error: no complete run records in {', '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    print(f"{prog}: {n} runs; wrote {out}")
    if args.serve:
        try:
            _serve(out, args.port)
        except OSError as exc:  # the port is taken, or needs privileges
            print(f"{prog}: error: cannot serve on 127.0.0.1:{args.port} ({exc.strerror or exc})", file=sys.stderr)
            return 2
    return 0
