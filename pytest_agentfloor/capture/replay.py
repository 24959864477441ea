"""``capture replay``: a captured session's calls sent to a candidate endpoint, its replies recorded as runs.

    python -m pytest_agentfloor capture replay --from cases/captured/ --to CANDIDATE_URL [--model NAME] --out runs.jsonl
    python -m pytest_agentfloor capture --replay-to CANDIDATE_URL --from cases/captured/ --out runs.jsonl  (the same)

Every stored request of the capture folder is sent, in capture order (by time), on the wire it was
captured on (OpenAI chat completions or Ollama ``/api/chat``, streamed or not), to the candidate:
the same messages, tools and parameters, only ``model`` replaced when ``--model`` is given. Each
reply is graded by the grader of the request's case (``capture cases`` must have written the
tables) and written as an ordinary run record (results.build_record), so ``report`` and
``compare`` read the file like a pytest run's. The n-th call of one request is run n-1.

Only the candidate URL is contacted (capture/upstream.py: no environment proxy). Its key comes
from the environment variable ``--api-key-env`` names; it is sent as a bearer token and struck out
of anything stored. A reply that is no answer (unreachable, a timeout, an HTTP error, a body that
cannot be read) is an infrastructure error, never the model's failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from ..callsite.graders import GRADERS
from ..callsite.kind import calls_text, grade_call
from ..callsite.schema import CallSiteCase
from ..config import ModelConfig, redact_url
from ..kinds import load_file
from ..nodeids import item_nodeid
from ..protocol import DEFAULT_PROTOCOL, PROTOCOLS
from ..results import RunLog, build_record
from ..suite.loader import CaseError
from ..trajectory import MAX_CALLS_PER_TURN, ToolCall, Trajectory, Turn
from .cases import request_key
from .store import read_captures
from .upstream import Upstream, UpstreamError, tls_context
from .wire import OLLAMA, OPENAI, decoded, read_reply

PROG = "python -m pytest_agentfloor capture replay"
#: the review states whose reference counts as accepted in the agreement column
COUNTED = ("accepted", "edited")


class ReplayError(Exception):
    """The replay cannot start or go on (no tables, a certificate that fails); the message says why."""


@dataclass(frozen=True)
class Captured:
    """One stored call to replay, and the case it belongs to."""

    rec: dict[str, Any]
    case: CallSiteCase
    file: str  # the table's path as pytest would name it (the record's node id)
    run: int


def _file_id(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def load_cases(folder: Path) -> tuple[dict[tuple[str, str], tuple[CallSiteCase, str]], set[tuple[str, str]]]:
    """({(site, request hash): (case, file id)}, keys of dropped cases) of the call-site tables in folder."""
    import tomllib

    cases: dict[tuple[str, str], tuple[CallSiteCase, str]] = {}
    dropped: set[tuple[str, str]] = set()
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if data.get("kind") != "callsite":
            continue
        _kind, entries = load_file(path)
        by_id = {e.id: e.resolve("v0", "i0") for e in entries}
        site = data.get("site", "")
        for n, raw in enumerate(data.get("case", [])):
            digest = ((raw.get("provenance") or {}).get("request_hash"))
            if not digest:
                continue
            if raw.get("review") == "dropped":
                dropped.add((site, digest))
                continue
            case = by_id.get(raw.get("id") or "")
            if case is not None:
                cases[(site, digest)] = (case, _file_id(path))
    return cases, dropped


def plan(folder: Path) -> tuple[list[Captured], dict[str, int]]:
    """The calls to replay in capture order, and counts of the ones left out (by reason)."""
    cases, dropped = load_cases(folder)
    if not cases:
        raise ReplayError(f"{folder}: no call-site tables with captured cases; run "
                          f"`python -m pytest_agentfloor capture cases --from {folder}` first")
    rows = [(str(rec.get("time") or ""), str(path), n, rec) for path, n, rec in read_captures(folder)]
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    out: list[Captured] = []
    skipped = {"failed in production": 0, "dropped in review": 0, "no case": 0}
    runs: dict[str, int] = {}
    for _t, _p, _n, rec in rows:
        if "request" not in rec or rec.get("api") not in (OPENAI, OLLAMA):
            skipped["no case"] += 1
            continue
        site, digest, *_ = request_key(rec)
        if (site, digest) in dropped:
            skipped["dropped in review"] += 1
            continue
        found = cases.get((site, digest))
        if found is None:
            reply = rec.get("reply") or {}
            why = "failed in production" if rec.get("status") != 200 or reply.get("error") else "no case"
            skipped[why] += 1
            continue
        case, file = found
        run = runs.get(case.id, 0)
        runs[case.id] = run + 1
        out.append(Captured(rec, case, file, run))
    return out, {k: v for k, v in skipped.items() if v}


def request_body(rec: dict[str, Any], model: str | None) -> bytes:
    """The captured request as it was sent (its stored, redacted messages), ``model`` replaced if given."""
    req = rec["request"]
    body: dict[str, Any] = {"model": model or rec.get("model"), "messages": req.get("messages") or []}
    if req.get("tools"):
        body["tools"] = req["tools"]
    body.update(req.get("params") or {})
    if rec.get("stream") is not None:
        body["stream"] = rec["stream"]
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _scrub(text: str | None, secret: str | None) -> str | None:
    if text is None or not secret:
        return text
    return text.replace(secret, "[REDACTED]")


def send(upstream: Upstream, item: Captured, model: str | None, key: str | None) -> tuple[int, dict[str, Any], float]:
    """(status, wire.read_reply of the body, seconds to the reply's end); UpstreamError when none came."""
    rec = item.rec
    path = str(rec.get("path") or "").split("?", 1)[0]  # the stored query had its secrets struck out
    headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
    if key:
        headers.append(("Authorization", f"Bearer {key}"))
    start = time.perf_counter()
    resp = upstream.send("POST", path, headers, request_body(rec, model))
    try:
        body = b"".join(upstream.chunks(resp))
    finally:
        resp.close()
    latency = time.perf_counter() - start
    reply = read_reply(rec["api"], resp.status, decoded(body, resp.getheader("content-encoding")),
                       resp.getheader("content-type"))
    return resp.status, reply, latency


def trajectory(item: Captured, name: str, status: int | None, reply: dict[str, Any] | None, latency: float,
               error: str | None, timeout: bool = False) -> Trajectory:
    """The reply as the one-turn trajectory a pytest run of the case records (callsite.kind.play_call)."""
    case = item.case
    tools = case.tool_schemas()
    traj = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=item.run,
                      model=name, tools=[t.get("function", t).get("name", "") for t in tools],
                      messages=case.conversation(), turn_budget=1, call_limit=0, protocol=DEFAULT_PROTOCOL)
    traj.wall_s = round(latency, 6)
    if error is None and reply is not None and status is not None and (status != 200 or reply.get("error")):
        error = f"HTTP {status}: {reply.get('error') or 'no answer'}" if status != 200 else \
            f"the reply could not be read: {reply['error']}"
    if error is not None or reply is None:
        traj.termination = "timeout" if timeout else "provider_error"
        traj.error = error or "no reply"
        return traj
    calls = reply.get("tool_calls") or []
    kept = calls[:MAX_CALLS_PER_TURN]
    args = [c.get("arguments") if isinstance(c.get("arguments"), str) else json.dumps(c.get("arguments"))
            for c in kept]
    turn = Turn(index=0, content=reply.get("text"), finish_reason=str(reply.get("finish_reason") or "stop"),
                tokens_in=reply.get("tokens_in") or 0, tokens_out=reply.get("tokens_out") or 0,
                latency_s=round(latency, 6), calls_rejected=len(calls) - len(kept),
                calls=[ToolCall(turn=0, id=str(c.get("id") or f"call_{n}"), name=str(c.get("name") or ""),
                                raw_arguments=a, hallucinated=True) for n, (c, a) in enumerate(zip(kept, args))])
    traj.turns.append(turn)
    traj.final_answer = reply.get("text") or ""
    if tools and kept:
        traj.final_answer = calls_text([(str(c.get("name") or ""), a) for c, a in zip(kept, args)])
    traj.termination = "truncated" if reply.get("finish_reason") == "length" else "final_answer"
    return traj


def model_config(name: str, url: str, api: str, model: str, key_env: str | None) -> ModelConfig:
    return ModelConfig(name=name, provider="ollama" if api == OLLAMA else "openai", model=model or "as-captured",
                       base_url=url, api_key_env=key_env)


def summary(records: list[dict[str, Any]]) -> list[str]:
    """Per site: calls replayed, agreement with the accepted references (and with the provisional
    ones, apart), infrastructure errors, latency. Pure: the table printed at the end."""
    sites: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        sites.setdefault(str((r.get("facets") or {}).get("site")), []).append(r)

    def share(rs: list[dict[str, Any]]) -> str:
        graded = [r for r in rs if not r["infra_error"]]
        if not graded:
            return "-"
        ok = sum(r["passed"] for r in graded)
        return f"{ok}/{len(graded)} {100 * ok / len(graded):.0f}%"

    head = f"{'site':16} {'n':>4}  {'agree (accepted)':>17}  {'agree (provisional)':>19}  {'infra':>5}  " \
           f"{'latency p50':>11}  {'p90':>7}"
    lines = [head, "-" * len(head)]
    for site in sorted(sites):
        rs = sites[site]
        counted = [r for r in rs if (r.get("facets") or {}).get("review") in COUNTED]
        provisional = [r for r in rs if (r.get("facets") or {}).get("review") not in COUNTED]
        lat = sorted(r["latency_s"] for r in rs if not r["infra_error"])
        p50 = f"{statistics.median(lat):.3f} s" if lat else "-"
        p90 = f"{lat[min(len(lat) - 1, int(0.9 * len(lat)))]:.3f} s" if lat else "-"
        lines.append(f"{site:16} {len(rs):>4}  {share(counted):>17}  {share(provisional):>19}  "
                     f"{sum(r['infra_error'] for r in rs):>5}  {p50:>11}  {p90:>7}")
    return lines


# -- a candidate started for the replay ------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def started(command: str | None, url: str, wait_s: float) -> Iterator[None]:
    """Run `command` (the candidate's server) until the block ends; ready when url's port accepts."""
    if command is None:
        yield
        return
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    log = tempfile.TemporaryFile()  # not a pipe: a chatty server would block on a full one
    proc = subprocess.Popen(shlex.split(command), stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                err = log.read().decode("utf-8", "replace").strip()[-400:]
                raise ReplayError(f"--start {command!r} exited with {proc.returncode} before {host}:{port} "
                                  f"answered{': ' + err if err else ''}")
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ReplayError(f"--start {command!r}: nothing listened on {host}:{port} "
                                      f"within {wait_s:g} s (--start-timeout)") from None
                time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# -- the command ------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="send a captured session's calls to a candidate endpoint, "
                                "grade its replies with the captured cases' graders and record them as runs "
                                "(docs/capture.md, \"Try a routing live\")")
    p.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR",
                   help="the capture folder: <site>.jsonl captures and the tables `capture cases` wrote")
    p.add_argument("--to", dest="target", required=True, metavar="URL",
                   help="the candidate: an OpenAI-compatible origin or an Ollama host, as --upstream "
                   "(the captured path, e.g. /v1/chat/completions, is appended)")
    p.add_argument("--model", default=None, metavar="ID",
                   help="the model id sent in each request (default: the captured request's)")
    p.add_argument("--name", default="candidate", metavar="NAME",
                   help="the model name the records carry, as in models.toml (default candidate)")
    p.add_argument("--out", type=Path, default=Path("runs.jsonl"), metavar="FILE",
                   help="run records (JSONL), appended to (default runs.jsonl)")
    p.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="environment variable holding the candidate's key (sent as a bearer token, never stored)")
    p.add_argument("--ca-bundle", default=None, metavar="PEM",
                   help="verify an https candidate with these CA certificates instead of the system's")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S", help="per-call read timeout (default 120)")
    p.add_argument("--start", default=None, metavar="CMD",
                   help="start the candidate's server with this command first and stop it at the end; "
                   "{port} in CMD and --to becomes a free port")
    p.add_argument("--start-timeout", type=float, default=60.0, metavar="S",
                   help="how long --start's server may take to listen (default 60)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    ns = p.parse_args(argv)
    url = ns.target
    start = ns.start
    if "{port}" in url or (start and "{port}" in start):
        port = str(free_port())
        url, start = url.replace("{port}", port), start.replace("{port}", port) if start else None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        p.error(f"--to {ns.target!r}: expected http(s)://HOST[:PORT][/PATH]")
    key = None
    if ns.api_key_env:
        key = os.environ.get(ns.api_key_env)
        if not key:
            p.error(f"--api-key-env {ns.api_key_env}: the variable is not set")
    try:
        tls_context(ns.ca_bundle)
    except ValueError as exc:
        p.error(str(exc))
    try:
        items, skipped = plan(ns.source)
    except (ReplayError, CaseError, ValueError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    unknown = sorted({i.case.grader for i in items} - set(GRADERS))
    if unknown:
        print(f"{PROG}: error: grader {unknown[0]!r} is not built in (a conftest hook's); grade these sites with "
              f"`pytest {ns.source} --model NAME` instead", file=sys.stderr)
        return 2
    upstream = Upstream(url, ns.timeout, ca_bundle=ns.ca_bundle)
    protocol = PROTOCOLS[DEFAULT_PROTOCOL].params()
    log = RunLog(ns.out)
    written: list[dict[str, Any]] = []
    shown = redact_url(url)
    try:
        with started(start, url, ns.start_timeout):
            print(f"{PROG}: {len(items)} call(s) from {ns.source} -> {shown} as {ns.name!r}", flush=True)
            for item in items:
                status = reply = error = None
                latency, timeout = 0.0, False
                t0 = time.perf_counter()
                try:
                    status, reply, latency = send(upstream, item, ns.model, key)
                except UpstreamError as exc:
                    if exc.certificate:  # every call would fail the same way: stop, say which option
                        raise ReplayError(str(exc)) from None
                    error, timeout, latency = f"{shown}: {exc}", exc.timeout, time.perf_counter() - t0
                if reply is not None:
                    reply["error"] = _scrub(reply.get("error"), key)
                traj = trajectory(item, ns.name, status, reply, latency, _scrub(error, key), timeout)
                config = model_config(ns.name, url, item.rec["api"], ns.model or str(item.rec.get("model") or ""),
                                      ns.api_key_env)
                case: Any = item.case  # build_record reads the fields every kind's case has (items.py passes Any too)
                record = build_record(case, traj, grade_call(item.case, traj), config,
                                      item_nodeid(item.file, item.case.id, "v0", "i0", item.run, ns.name),
                                      protocol=protocol)
                record["replay"] = {"capture_id": item.rec.get("id"), "captured_at": item.rec.get("time"),
                                    "status": status}
                if key and key in json.dumps(record):  # the candidate echoed its key somewhere: never stored
                    record = json.loads(json.dumps(record).replace(key, "[REDACTED]"))
                log.append(record)
                written.append(record)
    except ReplayError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        log.close()
    for line in summary(written):
        print(line)
    left = ", ".join(f"{n} {why}" for why, n in skipped.items())
    infra = sum(r["infra_error"] for r in written)
    print(f"{len(written)} run record(s) -> {ns.out}" + (f"; {infra} infrastructure error(s)" if infra else "")
          + (f"; not replayed: {left}" if left else ""))
    if written and infra == len(written):  # nothing was measured: never a quiet success from a dead endpoint
        print(f"{PROG}: error: {shown} answered none of the {infra} call(s); first: {written[0]['error']}",
              file=sys.stderr)
        return 1
    return 0
