"""HTTPS upstreams and candidates: --ca-bundle verifies a self-signed certificate made in the test; a
wrong bundle fails with a short error naming --ca-bundle (the proxy's 502, replay's exit 2)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from pytest_agentfloor.capture.command import main as capture_main
from tests.capture.helpers import client, records, running_proxy, serving
from tests.capture.test_agent_loop import upstream
from tests.fakeserver import FakeModelServer

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "captured"
BODY = {"model": "gpt-x", "messages": [{"role": "system", "content": "You route each user turn: answer with one word, "
                                        "weather or other."}, {"role": "user", "content": "Weather in Oslo?"}]}


def self_signed(folder: Path, name: str) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, made with openssl; the certificate is its own CA bundle."""
    if shutil.which("openssl") is None:
        pytest.skip("neither the cryptography package nor openssl is available to make a test certificate")
    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


@contextmanager
def https_fake(cert: Path, key: Path) -> Iterator[tuple[str, FakeModelServer]]:
    """tests/fakeserver.py's model server behind TLS with this certificate."""
    fake = FakeModelServer(upstream)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    handler = type("_Handler", (fake.handler_class,), {fake.owner_attr: fake})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    with serving(httpd, "https") as url:
        yield url, fake


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("certs")
    return {"right": self_signed(folder, "right"), "wrong": self_signed(folder, "wrong")}


def test_proxy_verifies_an_https_upstream_with_the_bundle(certs: dict, tmp_path: Path) -> None:
    cert, key = certs["right"]
    with https_fake(cert, key) as (url, fake), running_proxy(url, tmp_path / "cap", ca_bundle=str(cert)) as (proxy, _):
        with client() as http:
            r = http.post(proxy + "/v1/chat/completions", json=BODY, headers={"X-Agentfloor-Site": "router"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "weather"
    assert len(fake.received) == 1
    assert [rec["reply"]["text"] for rec in records(tmp_path / "cap")] == ["weather"]


def test_proxy_with_a_wrong_bundle_answers_502_naming_it(certs: dict, tmp_path: Path) -> None:
    cert, key = certs["right"]
    wrong = str(certs["wrong"][0])
    with https_fake(cert, key) as (url, fake), running_proxy(url, tmp_path / "cap", ca_bundle=wrong) as (proxy, _):
        with client() as http:
            r = http.post(proxy + "/v1/chat/completions", json=BODY)
    assert r.status_code == 502
    message = r.json()["error"]["message"]
    assert f"does not verify with --ca-bundle {wrong}" in message and len(message) < 400
    assert fake.received == []
    # without a bundle the system store is used, and the error says how to give one
    with https_fake(cert, key) as (url, _), running_proxy(url, tmp_path / "cap2") as (proxy, _):
        with client() as http:
            r = http.post(proxy + "/v1/chat/completions", json=BODY)
    assert r.status_code == 502 and "give --ca-bundle PEM" in r.json()["error"]["message"]


def test_proxy_refuses_an_unusable_bundle_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for bundle, why in ((junk, "not a PEM certificate bundle"), (tmp_path / "missing.pem", "no such file")):
        with pytest.raises(SystemExit) as exc:
            capture_main(["--upstream", "https://127.0.0.1:9", "--ca-bundle", str(bundle), "--listen", "127.0.0.1:0"])
        assert exc.value.code == 2
        assert f"--ca-bundle {bundle}: {why}" in capsys.readouterr().err


def test_replay_to_an_https_candidate(certs: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "captured"
    shutil.copytree(EXAMPLE, folder)
    cert, key = certs["right"]
    runs = tmp_path / "runs.jsonl"
    with https_fake(cert, key) as (url, fake):
        assert capture_main(["replay", "--from", str(folder), "--to", url, "--ca-bundle", str(cert),
                             "--out", str(runs)]) == 0
        assert len(fake.received) == 13
    assert "13 run record(s)" in capsys.readouterr().out
    with https_fake(cert, key) as (url, fake):
        wrong = str(certs["wrong"][0])
        assert capture_main(["replay", "--from", str(folder), "--to", url, "--ca-bundle", wrong,
                             "--out", str(tmp_path / "bad.jsonl")]) == 2
        assert fake.received == []
    err = capsys.readouterr().err
    assert f"does not verify with --ca-bundle {wrong}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad.jsonl").exists()
