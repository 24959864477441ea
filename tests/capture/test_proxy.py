"""The capture proxy over real loopback HTTP: the agent gets what the upstream sent, byte for byte;
each pair is stored once, under its call site, without secrets (docs/capture.md)."""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from pytest_agentfloor.capture.config import load_config
from pytest_agentfloor.capture.redact import Redactor
from pytest_agentfloor.capture.store import read_captures
from tests.capture.helpers import client, fixed_clock, records, running_proxy
from tests.fakeserver import FakeModelServer, reply, status

PATHS = {"openai": "/v1/chat/completions", "ollama": "/api/chat"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
#: headers whose value is the server's or the connection's, not the reply's
FRAMING = {"date", "server", "transfer-encoding", "connection", "content-length"}


def _fetch(c: httpx.Client, url: str, body: dict, headers: dict | None = None) -> tuple[int, dict, bytes, list[bytes]]:
    with c.stream("POST", url, json=body, headers=headers or {}) as r:
        chunks = [ch for ch in r.iter_raw() if ch]
        return r.status_code, {k: v for k, v in r.headers.items() if k not in FRAMING}, b"".join(chunks), chunks


@pytest.mark.parametrize("api", ["openai", "ollama"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("answer", ["text", "tools"])
def test_the_agent_gets_the_upstreams_reply_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         api: str, stream: bool, answer: str) -> None:
    fixed_clock(monkeypatch)
    action = (reply("The weather in Paris is sunny today.") if answer == "text"
              else reply(tool_calls=[("get_weather", {"city": "Paris"}, "call_7")]))
    body = {"model": "gpt-x", "stream": stream, "tools": TOOLS,
            "messages": [{"role": "system", "content": "You are a weather agent."},
                         {"role": "user", "content": "Weather in Paris?"}]}
    with FakeModelServer(default=action) as up, running_proxy(up.url, tmp_path) as (url, _), client() as c:
        direct = _fetch(c, up.url + PATHS[api], body)
        proxied = _fetch(c, url + PATHS[api], body)
        assert up.requests[0] == up.requests[1] == body  # forwarded unchanged
    assert proxied[:3] == direct[:3]
    if stream:
        assert direct[1]["content-type"] in ("text/event-stream", "application/x-ndjson")
    (rec,) = records(tmp_path)
    assert rec["site"] == "unassigned" and rec["status"] == 200 and rec["stream"] is stream
    assert rec["request"]["messages"] == body["messages"] and rec["request"]["tools"] == TOOLS
    if answer == "text":
        assert rec["reply"]["text"] == "The weather in Paris is sunny today."
    else:
        assert [(c["name"], c["arguments"]) for c in rec["reply"]["tool_calls"]] == [("get_weather", {"city": "Paris"})]
    assert rec["latency_s"] > 0 and rec["upstream_model"] == "gpt-x"


class _Gate(BaseHTTPRequestHandler):
    """Sends the first event, waits until the test has seen it, then the rest."""
    protocol_version = "HTTP/1.0"
    seen = threading.Event()

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n')
        self.wfile.flush()
        self.seen.wait(10)
        self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
                         b"data: [DONE]\n\n")


def test_streamed_chunks_reach_the_agent_as_they_arrive(tmp_path: Path) -> None:
    _Gate.seen.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Gate)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with running_proxy(f"http://127.0.0.1:{httpd.server_address[1]}", tmp_path) as (url, _), client() as c:
            with c.stream("POST", url + "/v1/chat/completions", json={"model": "m", "stream": True,
                                                                       "messages": []}) as r:
                pieces = r.iter_raw()
                first = next(pieces)  # arrives while the upstream still holds the rest back
                assert b"Hel" in first
                _Gate.seen.set()
                rest = b"".join(pieces)
            assert b"[DONE]" in rest
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert records(tmp_path)[0]["reply"]["text"] == "Hello"


@pytest.mark.parametrize("api", ["openai", "ollama"])
@pytest.mark.parametrize("code", [500, 429])
def test_upstream_errors_are_passed_through_with_their_status(tmp_path: Path, api: str, code: int) -> None:
    err = status(code, "slow down" if code == 429 else "boom", headers={"Retry-After": "7"} if code == 429 else {})
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    with FakeModelServer() as up, running_proxy(up.url, tmp_path) as (url, _), client() as c:
        up.push(err, err)
        direct = _fetch(c, up.url + PATHS[api], body)
        proxied = _fetch(c, url + PATHS[api], body)
    assert proxied[0] == direct[0] == code and proxied[2] == direct[2]
    assert proxied[1].get("retry-after") == direct[1].get("retry-after")
    (rec,) = records(tmp_path)
    assert rec["status"] == code and rec["reply"]["error"] == ("slow down" if code == 429 else "boom")


def test_an_unreachable_upstream_is_a_502_and_is_recorded(tmp_path: Path) -> None:
    with running_proxy("http://127.0.0.1:9", tmp_path) as (url, _), client() as c:
        r = c.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 502 and "upstream" in r.json()["error"]["message"]
    assert records(tmp_path)[0]["status"] == 502


def test_other_paths_are_forwarded_but_not_captured(tmp_path: Path) -> None:
    with FakeModelServer() as up, running_proxy(up.url, tmp_path) as (url, _), client() as c:
        r = c.get(url + "/v1/models")
    assert r.status_code == 404 and "no route for GET /v1/models" in r.text
    assert records(tmp_path) == []


def test_concurrent_agents_each_get_their_own_reply_and_one_line_each(tmp_path: Path) -> None:
    def echo(body: dict) -> object:
        return reply(f"echo {body['messages'][-1]['content']}")

    def agent(n: int) -> list[bool]:
        with client() as c:
            out = []
            for i in range(10):
                r = c.post(url + f"/site/agent{n % 3}/v1/chat/completions",
                           json={"model": "m", "messages": [{"role": "user", "content": f"{n}-{i}"}]})
                out.append(r.json()["choices"][0]["message"]["content"] == f"echo {n}-{i}")
            return out

    with FakeModelServer(echo) as up, running_proxy(up.url, tmp_path) as (url, proxy):
        with ThreadPoolExecutor(8) as pool:
            results = [ok for oks in pool.map(agent, range(8)) for ok in oks]
        assert proxy.captured == 80
    assert all(results) and len(results) == 80
    recs = records(tmp_path)
    assert len(recs) == 80 and sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["agent0.jsonl", "agent1.jsonl",
                                                                                   "agent2.jsonl"]
    for rec in recs:
        asked = rec["request"]["messages"][-1]["content"]
        assert rec["reply"]["text"] == f"echo {asked}" and rec["site"] == f"agent{int(asked.split('-')[0]) % 3}"


def test_secrets_never_reach_the_capture_files(tmp_path: Path) -> None:
    key, azure, query_key = "sk-planted-4f1c9a7e2b3d4c5e6f70", "azkey-99887766554433", "qk-1234567890abcdef"
    out = tmp_path / "captured"
    body = {"model": "m", "messages": [{"role": "user", "content": f"my key is {key}, use it"}]}
    with FakeModelServer(default=reply(f"noted: {key}")) as up, running_proxy(up.url, out) as (url, _), client() as c:
        for stream in (False, True):
            r = c.post(url + f"/v1/chat/completions?api-version=2024-06-01&key={query_key}",
                       json=dict(body, stream=stream), headers={"Authorization": f"Bearer {key}", "api-key": azure})
            assert r.status_code == 200
        assert up.received[0].body == dict(body, stream=False)  # the upstream got the prompt as sent
        seen = up.received[0]
    assert seen.headers["authorization"] == f"Bearer {key}" and seen.headers["api-key"] == azure  # forwarded
    stored = b"".join(p.read_bytes() for p in out.rglob("*"))
    for secret in (key, azure, query_key, "sk-planted"):
        assert secret.encode() not in stored
    rec, streamed = records(out)
    assert "[REDACTED]" in rec["request"]["messages"][0]["content"] and "api-version=2024-06-01" in rec["path"]
    assert rec["reply"]["text"] == streamed["reply"]["text"] == "noted: [REDACTED]"
    assert "authorization" not in json.dumps(rec).lower()


def test_site_from_header_path_and_rule(tmp_path: Path) -> None:
    cfg = tmp_path / "capture.toml"
    cfg.write_text('[[site]]\nname = "planner"\nsystem_prompt_contains = "You plan"\n\n'
                   '[[site]]\nname = "weather"\ntools = ["get_weather"]\nmodel = "gpt-x"\n')
    out = tmp_path / "captured"
    plan = [{"role": "system", "content": "You plan pipelines."}, {"role": "user", "content": "x"}]
    with FakeModelServer() as up, running_proxy(up.url, out, load_config(cfg)) as (url, _), client() as c:
        c.post(url + "/v1/chat/completions", json={"model": "m", "messages": plan},
               headers={"X-Agentfloor-Site": "Intent Router"})
        c.post(url + "/site/codegen/v1/chat/completions", json={"model": "m", "messages": plan})
        c.post(url + "/v1/chat/completions", json={"model": "m", "messages": plan})
        c.post(url + "/api/chat", json={"model": "gpt-x", "messages": [], "tools": TOOLS, "stream": False})
        c.post(url + "/api/chat", json={"model": "other", "messages": [], "tools": TOOLS, "stream": False})
        assert [r.path for r in up.received] == ["/v1/chat/completions"] * 3 + ["/api/chat"] * 2  # prefix stripped
        assert all("x-agentfloor-site" not in r.headers for r in up.received)
    got = [(r["site"], r["site_from"]) for r in records(out)]
    assert sorted(got) == sorted([("intent_router", "header"), ("codegen", "path"), ("planner", "rule"),
                                  ("weather", "rule"), ("unassigned", "none")])


def test_redaction_patterns_and_the_hook_run_before_anything_is_written(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acme_redactor.py").write_text(
        "def pytest_agentfloor_capture_redact(record):\n"
        "    for m in record['request']['messages']:\n"
        "        m['content'] = m['content'].replace('ACME', '[CLIENT]')\n"
        "    if record['reply']['text']:\n"
        "        record['reply']['text'] = record['reply']['text'].replace('ACME', '[CLIENT]')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / "capture.toml"
    cfg.write_text("[redact]\npatterns = ['\\d{3}-\\d{2}-\\d{4}']\nreplacement = \"<pii>\"\nplugins = [\"acme_redactor\"]\n")
    config = load_config(cfg)
    out = tmp_path / "captured"
    redactor = Redactor(config.patterns, config.replacement, config.plugins)
    with FakeModelServer(default=reply("ACME's SSN 123-45-6789 noted")) as up, \
            running_proxy(up.url, out, config, redactor=redactor) as (url, _), client() as c:
        c.post(url + "/v1/chat/completions",
               json={"model": "m", "messages": [{"role": "user", "content": "ACME, SSN 123-45-6789"}]})
    stored = b"".join(p.read_bytes() for p in out.glob("*.jsonl"))
    assert b"ACME" not in stored and b"123-45-6789" not in stored
    rec = records(out)[0]
    assert rec["request"]["messages"][0]["content"] == "[CLIENT], SSN <pii>"
    assert rec["reply"]["text"] == "[CLIENT]'s SSN <pii> noted"


def test_captures_are_readable_while_written_and_a_half_line_is_skipped(tmp_path: Path) -> None:
    with FakeModelServer() as up, running_proxy(up.url, tmp_path) as (url, _), client() as c:
        for i in range(3):
            c.post(url + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": str(i)}]})
            assert len(records(tmp_path)) == i + 1  # the line is there once the reply is
        with open(tmp_path / "unassigned.jsonl", "ab") as fh:  # a line being written
            fh.write(b'{"v":1,"site":"unass')
        assert len(records(tmp_path)) == 3


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"v":1}\nnot json\n')
    with pytest.raises(ValueError, match=r"x.jsonl:2: not a JSON line"):
        list(read_captures(tmp_path))


def test_the_command_refuses_a_remote_listen_address_without_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentfloor.capture.command import main

    with pytest.raises(SystemExit) as exc:
        main(["--upstream", "http://127.0.0.1:9", "--listen", "0.0.0.0:0"])
    assert exc.value.code == 2 and "--allow-remote" in capsys.readouterr().err
    assert sys.modules.get("pytest_agentfloor.capture.proxy") is not None


def test_an_agent_that_hangs_up_mid_reply_leaves_the_next_call_working(tmp_path: Path) -> None:
    with FakeModelServer(default=reply("a long answer " * 2000)) as up, running_proxy(up.url, tmp_path) as (url, _):
        import socket

        host, port = url.split("//")[1].split(":")
        body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
        with socket.create_connection((host, int(port))) as s:  # reads the head and hangs up
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            assert s.recv(64).startswith(b"HTTP/1.1 200")
        with client() as c:
            for _ in range(3):
                r = c.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
                assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith("a long")


def test_a_keep_alive_upstream_connection_is_reused_and_a_stale_one_replaced(tmp_path: Path) -> None:
    from pytest_agentfloor.capture.upstream import Upstream

    class KeepAlive(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        peers: list[int] = []

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.peers.append(self.client_address[1])
            data = b'{"choices": [{"message": {"content": "ok"}}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        up = Upstream(f"http://127.0.0.1:{httpd.server_address[1]}", 10)
        for _ in range(3):
            resp = up.send("POST", "/v1/chat/completions", [("Content-Type", "application/json")], b"{}")
            assert b"".join(up.chunks(resp)) == b'{"choices": [{"message": {"content": "ok"}}]}'
        assert len(set(KeepAlive.peers)) == 1  # one connection for the three
        up._local.conn.sock.shutdown(2)  # as if the upstream had closed it while idle
        resp = up.send("POST", "/v1/chat/completions", [("Content-Type", "application/json")], b"{}")
        assert b"".join(up.chunks(resp)).endswith(b"}") and len(set(KeepAlive.peers)) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()
