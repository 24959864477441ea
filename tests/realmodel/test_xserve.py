"""agentfloor-llama-server (local/xserve.py): llama-server's command line over the xllamacpp wheel.

The flag mapping and the pinned-hash check run without a model; one test starts the real server on the
embedded weights through LocalServer exactly as the plugin does (marked realmodel).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from pytest_agentfloor.local import server as server_mod
from pytest_agentfloor.local import xserve
from pytest_agentfloor.local.model_files import QWEN_05B

from .conftest import need, required


@pytest.fixture
def wheel() -> None:
    if not xserve.available():
        if required():
            pytest.fail("xllamacpp is not installed (pip install -e '.[local]')")
        pytest.skip("xllamacpp is not installed")


def test_flags_map_to_the_servers_params(wheel: None, tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    args = xserve.parser().parse_args(
        ["--model", "m.gguf", "--host", "127.0.0.1", "--port", "1234", "--ctx-size", "7168", "--threads", "1",
         "--threads-batch", "2", "--parallel", "3", "--alias", "qwen", "--jinja", "--no-webui",
         "--chat-template-file", str(template), "--poll", "0", "--ubatch-size", "256"])
    p = xserve.params(args)
    assert (p.model.path, p.port, p.n_ctx, p.n_parallel) == ("m.gguf", 1234, 7168, 3)
    assert list(p.hostnames) == ["127.0.0.1"]
    assert (p.cpuparams.n_threads, p.cpuparams_batch.n_threads) == (1, 2)
    assert (p.cpuparams.poll, p.n_ubatch) == (0, 256)
    assert set(p.model_alias) == {"qwen"} and p.use_jinja and not p.ui
    assert p.chat_template == "{{ messages }}"  # the file's text, as llama-server reads it
    defaults = xserve.params(xserve.parser().parse_args(["--model", "m.gguf", "--threads", "2"]))
    assert defaults.cpuparams_batch.n_threads == 2  # --threads-batch defaults to --threads, as in llama-server


def test_every_flag_the_plugin_writes_is_taken(tmp_path: Path) -> None:
    cmd = server_mod.LocalServer(tmp_path / "m.gguf", log_path=tmp_path / "l", template=tmp_path / "t.jinja",
                                 port=1, threads=1, threads_batch=1, binary="x").command()
    xserve.parser().parse_args(cmd[1:])  # argparse exits on any flag it does not know


def test_an_unknown_flag_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        xserve.main(["--model", "m.gguf", "--rope-scaling", "yarn"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --rope-scaling yarn" in capsys.readouterr().err


def test_a_build_that_is_not_the_pinned_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFLOOR_CACHE_DIR", str(tmp_path / "cache"))
    ext = tmp_path / "xllamacpp.abi3.so"
    ext.write_bytes(b"the pinned build")
    monkeypatch.setattr(xserve, "PINNED", {ext.name: hashlib.sha256(b"the pinned build").hexdigest()})
    xserve.verify(ext)  # hashes, then stamps
    stamp = xserve._stamp_file()
    assert stamp.is_file()
    ext.write_bytes(b"another build!!!")  # same size, another mtime: the stamp no longer vouches for it
    os.utime(ext, ns=(ext.stat().st_atime_ns, ext.stat().st_mtime_ns + 1_000_000_000))
    with pytest.raises(xserve.ServeError, match=r"xllamacpp.abi3.so: sha256 [0-9a-f]{64} is not the pinned"):
        xserve.verify(ext)
    monkeypatch.setenv(xserve.HASH_ENV, "1")
    xserve.verify(ext)  # the user asked for an unpinned build


def test_the_installed_extension_is_the_pinned_build(wheel: None) -> None:
    path = xserve.extension_path()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == xserve.PINNED[path.name]


def test_the_shim_comes_before_a_source_build(wheel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(server_mod.BINARY_ENV, raising=False)
    found = server_mod.find_binary()
    assert found.name == server_mod.SHIM
    out = subprocess.run([str(found), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--chat-template-file" in out.stdout


@pytest.mark.realmodel
def test_serves_the_embedded_model_and_stops_on_sigterm(wheel: None, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    need(QWEN_05B)
    monkeypatch.delenv(server_mod.BINARY_ENV, raising=False)
    from pytest_agentfloor.local.model_files import ensure_model

    log = tmp_path / "server.log"
    srv = server_mod.LocalServer(ensure_model(QWEN_05B), log_path=log, ctx_size=1024, threads=1,
                                 template=server_mod.template_path(QWEN_05B.template),
                                 binary=server_mod.find_binary())
    with srv:
        assert srv.health()
        import json
        import urllib.request

        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        models = json.load(direct.open(srv.openai_url + "/models", timeout=30))
        assert [m["id"] for m in models["data"]] == ["local"]
    assert not srv.running
    text = log.read_text()
    assert "xllamacpp 2026.10.11549" in text and "listening on http://127.0.0.1:" in text
