"""The embedded server's slots and threads (issue 18): models.toml fields, the flags the server is
started with, and the plugin playing as many local episodes at once as the server has slots.

No llama.cpp here: the "server" is a stdlib script that takes llama-server's command line, answers
`/health` and chat completions, and counts the requests it holds at once; the weights check is
replaced in the inner run's conftest (the file is never read by the stand-in).
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentfloor.config import ConfigError, ModelConfig, load_models
from pytest_agentfloor.corpus import config_fingerprint
from pytest_agentfloor.local.model_files import QWEN_05B
from pytest_agentfloor.local.server import LocalServer, LocalServerError, default_threads
from pytest_agentfloor.local.session import DEFAULT_SLOTS, server_settings, slot_context
from pytest_agentfloor.prefetch import OrderedGate, episode_places, job_for

REPO = Path(__file__).resolve().parents[1]


# -- models.toml ------------------------------------------------------------------------------------
def _load(tmp_path: Path, body: str) -> dict[str, ModelConfig]:
    path = tmp_path / "models.toml"
    path.write_text(body)
    return load_models(path)


def test_slots_and_threads_are_read_from_models_toml(tmp_path: Path) -> None:
    m = _load(tmp_path, '[models.q]\nprovider = "local"\nslots = 2\nthreads = 1\nthreads_batch = 2\n')["q"]
    assert (m.slots, m.threads, m.threads_batch) == (2, 1, 2)
    plain = _load(tmp_path, '[models.q]\nprovider = "local"\n')["q"]
    assert (plain.slots, plain.threads, plain.threads_batch) == (None, None, None)


@pytest.mark.parametrize("body, message", [
    ('provider = "local"\nslots = 0\n', "models.q.slots: Input should be greater than 0"),
    ('provider = "local"\nslots = 65\n', "models.q.slots: Input should be less than or equal to 64"),
    ('provider = "local"\nthreads = "two"\n', "models.q.threads: Input should be a valid integer"),
    ('provider = "local"\nthreads_batch = -1\n', "models.q.threads_batch: Input should be greater than 0"),
    ('provider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\nslots = 2\n',
     'models.q: slots: for the embedded model server only (provider = "local" without base_url)'),
    ('provider = "local"\nbase_url = "http://127.0.0.1:1/v1"\nthreads = 1\nslots = 2\n',
     "models.q: slots and threads: for the embedded model server only"),
])
def test_bad_server_fields_name_file_model_and_field(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, "[models.q]\n" + body)
    assert str(err.value).startswith(f"{tmp_path / 'models.toml'}: ")
    assert message in str(err.value)


def test_default_threads_are_the_usable_cores_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from pytest_agentfloor.local import server

    monkeypatch.delenv(server.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert default_threads() == 3  # the cores this process may use, not the host's 64
    monkeypatch.delattr(os, "sched_getaffinity")  # macOS, Windows
    assert default_threads() == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert default_threads() == 1
    for raw, expected in (("2", 2), (" 1 ", 1), ("0", 1), ("lots", 1)):  # a bad value falls back
        monkeypatch.setenv(server.THREADS_ENV, raw)
        assert default_threads() == expected


def test_server_fields_are_not_part_of_a_runs_condition() -> None:
    """Resuming a run with other slots or threads continues it (they set speed, not the measurement);
    records written before the fields existed keep their fingerprint."""
    plain = ModelConfig(name="q", provider="local")
    tuned = plain.model_copy(update={"slots": 4, "threads": 2, "threads_batch": 2})
    assert config_fingerprint(tuned.public()) == config_fingerprint(plain.public())
    old = {k: v for k, v in plain.public().items() if k not in ("slots", "threads", "threads_batch")}
    assert config_fingerprint(old) == config_fingerprint(plain.public())
    assert tuned.public()["slots"] == 4  # still shown in records


# -- one server for the configurations of one model ---------------------------------------------------
def test_server_settings_defaults_and_the_largest_slot_count() -> None:
    a = ModelConfig(name="a", provider="local")
    assert server_settings([a]) == (DEFAULT_SLOTS, default_threads(), None)
    b = ModelConfig(name="b", provider="local", slots=3, threads=1)
    c = ModelConfig(name="c", provider="local", slots=2, threads_batch=2)
    assert server_settings([a, b, c]) == (3, 1, 2)


def test_configurations_sharing_a_server_must_agree_on_threads() -> None:
    a = ModelConfig(name="a", provider="local", threads=1)
    b = ModelConfig(name="b", provider="local", threads=2)
    with pytest.raises(LocalServerError, match=r"models\.a\.threads = 1 and models\.b\.threads = 2 share one "
                                               r"embedded server \(same model\): set the same threads"):
        server_settings([a, b])


def test_command_carries_slots_threads_and_batch_threads(tmp_path: Path) -> None:
    server = LocalServer(tmp_path / "m.gguf", log_path=tmp_path / "log", ctx_size=3 * 8192, threads=1,
                         threads_batch=2, parallel=3, binary=tmp_path / "llama-server")
    server.port = 1234
    cmd = server.command()
    flags = {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("--")}
    assert (flags["--parallel"], flags["--threads"], flags["--threads-batch"], flags["--ctx-size"]) == (
        "3", "1", "2", "24576")
    no_batch = LocalServer(tmp_path / "m.gguf", log_path=tmp_path / "log", threads=2)
    no_batch.port = 1
    assert "--threads-batch" not in no_batch.command()  # llama-server then reads prompts with --threads


# -- how many episodes the plugin plays at once -------------------------------------------------------
def _item(workers: int | None = None, **fields: object) -> SimpleNamespace:
    config = SimpleNamespace() if workers is None else SimpleNamespace(workerinput={"workercount": workers})
    return SimpleNamespace(model=ModelConfig(name="q", provider="local", **fields), config=config)


def test_episode_places_follow_the_slots_split_over_xdist_workers() -> None:
    assert episode_places(_item()) == DEFAULT_SLOTS
    assert episode_places(_item(slots=4)) == 4
    assert episode_places(_item(slots=4, max_connections=3)) == 3
    assert episode_places(_item(workers=2, slots=4)) == 2
    assert episode_places(_item(workers=4, slots=2)) == 1  # at least one per worker (the server queues the rest)
    mine = SimpleNamespace(model=ModelConfig(name="q", provider="local", base_url="http://127.0.0.1:1/v1"),
                           config=SimpleNamespace())
    assert episode_places(mine) is None  # a server you run: max_connections limits its requests
    assert episode_places(SimpleNamespace(model=ModelConfig(name="o", provider="openai", model="m"),
                                          config=SimpleNamespace())) is None


def _counting_job(state: dict, lock: threading.Lock, n: int) -> int:
    with lock:
        state["started"].append(n)
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
    time.sleep(0.01)
    with lock:
        state["now"] -= 1
    return n


def _hold(gate: OrderedGate, ticket: int) -> tuple[threading.Event, threading.Thread]:
    """A job that keeps one place of `gate` until its event is set."""
    release = threading.Event()
    holder = threading.Thread(target=gate.run, args=(ticket, release.wait))
    busy = gate.busy
    holder.start()
    while gate.busy <= busy:
        time.sleep(0.001)
    return release, holder


def test_embedded_local_episodes_play_ahead_and_a_server_you_run_plays_inline() -> None:
    def item(**fields: object) -> SimpleNamespace:
        return SimpleNamespace(model=ModelConfig(name="q", provider="local", **fields), config=SimpleNamespace(),
                               episode_job=lambda: (lambda: "played"), get_closest_marker=lambda name: None)

    job = job_for(item(slots=2))
    assert job is not None and job() == "played"
    assert job_for(item(base_url="http://127.0.0.1:1/v1")) is None


def test_ordered_gate_starts_waiting_jobs_in_ticket_order() -> None:
    gate, lock = OrderedGate(1), threading.Lock()
    state: dict = {"now": 0, "peak": 0, "started": []}
    release, holder = _hold(gate, 0)
    results: dict[int, int] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, gate.run(n, lambda: _counting_job(
        state, lock, n)))) for n in (5, 3, 4, 1, 2)]  # they arrive out of ticket order
    for t in threads:
        t.start()
    while len(gate._waiting) < 5:
        time.sleep(0.001)
    release.set()
    for t in threads + [holder]:
        t.join(10)
    assert results == {n: n for n in (1, 2, 3, 4, 5)}
    assert state["started"] == [1, 2, 3, 4, 5] and state["peak"] == 1


def test_ordered_gate_runs_at_most_its_places_at_once() -> None:
    gate, lock = OrderedGate(2), threading.Lock()
    state: dict = {"now": 0, "peak": 0, "started": []}
    threads = [threading.Thread(target=gate.run, args=(n, lambda n=n: _counting_job(state, lock, n)))
               for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(state["started"]) == list(range(12))
    assert 1 <= state["peak"] <= 2 and gate.busy == 0


def test_a_stopped_gate_starts_no_waiting_job() -> None:
    stopped = {"now": False}
    gate = OrderedGate(1, stopped=lambda: stopped["now"])
    ran: list[object] = []
    release, holder = _hold(gate, 1)
    waiter = threading.Thread(target=lambda: ran.append(gate.run(2, lambda: 2)))
    waiter.start()
    while len(gate._waiting) < 1:
        time.sleep(0.001)
    stopped["now"] = True  # -x while the episode waited for a slot
    release.set()
    holder.join(10)
    waiter.join(10)
    assert ran == [None] and gate.busy == 0


# -- the plugin with a stand-in llama-server ------------------------------------------------------------
STAND_IN = r'''#!{python}
"""llama-server's command line, /health and chat completions; holds the first requests until HOLD are in flight
(each waits at most WAIT seconds for them)."""
import argparse, http.server, json, os, sys, threading, time
ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int); ap.add_argument("--host")
args, _ = ap.parse_known_args()
print("stand-in llama-server", " ".join(sys.argv[1:]), flush=True)
hold, wait, stats = int(os.environ["STAND_IN_HOLD"]), float(os.environ["STAND_IN_WAIT"]), os.environ["STAND_IN_STATS"]
lock, reached = threading.Lock(), threading.Event()
state = {{"now": 0, "peak": 0, "requests": 0}}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status": "ok"}}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            state["now"] += 1; state["requests"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] >= hold: reached.set()
        reached.wait(wait)  # until HOLD requests are in flight at once (or WAIT s: fewer never come)
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
            with open(stats, "w") as fh: json.dump(state, fh)
        body = json.dumps({{"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{{"index": 0, "message": {{"role": "assistant", "content": "I cannot tell."}},
                         "finish_reason": "stop"}}],
            "usage": {{"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}}}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.ThreadingHTTPServer((args.host, args.port), H).serve_forever()
'''

NO_WEIGHTS = '''
from pathlib import Path
import pytest_agentfloor.local.session as local_session

def _weights(spec, cache=None):  # the stand-in never reads them
    path = Path(__file__).parent / "fake.gguf"
    path.write_bytes(b"GGUF")
    return path

local_session.ensure_model = _weights
'''


# With one episode at a time the hold is never reached, so every request waits WAIT: 0.5 s instead
# of 5 still catches a second episode in flight (episodes start together and each request is held),
# and keeps the 10 requests from waiting 50 s.
@pytest.mark.parametrize("slots, concurrency, peak, wait", [(3, "8", 3, 5.0), (2, "1", 1, 0.5)])
def test_the_plugin_starts_the_server_with_the_slots_and_plays_that_many_episodes(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, slots: int, concurrency: str, peak: int,
        wait: float) -> None:
    binary = pytester.path / "llama-server"
    binary.write_text(STAND_IN.format(python=sys.executable))
    binary.chmod(0o755)
    stats = pytester.path / "stats.json"
    monkeypatch.setenv("AGENTFLOOR_LLAMA_SERVER", str(binary))
    monkeypatch.setenv("STAND_IN_HOLD", str(slots))
    monkeypatch.setenv("STAND_IN_WAIT", str(wait))
    monkeypatch.setenv("STAND_IN_STATS", str(stats))
    for var in ("AGENTFLOOR_LOCAL_URL", "AGENTFLOOR_LOCAL_URL_LOCAL"):
        monkeypatch.delenv(var, raising=False)
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makeconftest(NO_WEIGHTS)
    pytester.makefile(".toml", models=f'[models.local]\nprovider = "local"\nslots = {slots}\nthreads = 1\n'
                                      'threads_batch = 2\nretries = 0\ntimeout_s = 30\n')
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "local", "--variants", "all", "--instances",
                                "i0", "--agentfloor-runs", "2", "--no-probe", "-p", "no:cacheprovider",
                                "--agentfloor-concurrency", concurrency)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) + outcomes.get("passed", 0) == 10, result.stdout.str()
    log = (pytester.path / "reports" / "local-server.log").read_text()
    per_slot = slot_context(QWEN_05B, [ModelConfig(name="local", provider="local")])
    assert f"--ctx-size {per_slot * slots} --threads 1 --parallel {slots} " in log
    assert "--threads-batch 2" in log
    seen = json.loads(stats.read_text())
    assert seen["requests"] == 10
    assert seen["peak"] == peak  # as many episodes at once as the server has slots, never more
