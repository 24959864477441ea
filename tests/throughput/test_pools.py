"""Endpoint pools (issue 18): one model, several replicas in `base_url = [...]`.

Real pytest runs and real providers against loopback fake servers: a healthy and a failing
replica (HTTP 500, or a port nothing listens on), two healthy ones for the balance, and one that
recovers. Keys (resume, cassette, judge cache) must not depend on the replicas.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ConfigError, ModelConfig, load_models
from pytest_agentfloor.corpus import config_fingerprint, request_key
from pytest_agentfloor.judge.client import fingerprint as judge_fingerprint
from pytest_agentfloor.providers.registry import make_provider
from pytest_agentfloor.providers.endpoints import EVICT_AFTER
from pytest_agentfloor.providers.pool import PooledProvider
from tests.fakeserver import FakeModelServer, reply, status
from tests.throughput.test_concurrency import A1Server, records

REPO = Path(__file__).resolve().parents[2]
#: five variants x four runs: twenty items
ITEMS = ("cases/tier_A/A1.toml", "--instances", "i0", "--agentfloor-runs", "4", "-p", "no:cacheprovider")
USER = [{"role": "user", "content": "hi"}]


class Correct(A1Server):
    """Answers every variant of A1 by its reference, so every item passes."""

    def __init__(self, delay_s: float = 0.02):
        super().__init__(delay_s)
        self.by_prompt = {p: ("ok", ref, d) for p, (_, ref, d) in self.by_prompt.items()}

    def respond(self, body: Any) -> Any:
        if next(m["content"] for m in body["messages"] if m["role"] == "user") not in self.by_prompt:
            return reply(tool_calls=[("lookup_record", {"record_id": "CUS-4417"})])  # the session's probe
        return super().respond(body)


def dead_port_url() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def pool_toml(urls: list[str], **extra: Any) -> str:
    fields = "".join(f"{k} = {json.dumps(v)}\n" for k, v in extra.items())
    return (f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = {json.dumps(urls)}\n'
            f"retries = 0\ntimeout_s = 10\n{fields}")


@pytest.fixture
def cases(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    return pytester


# -- models.toml --------------------------------------------------------------------------------
def test_base_url_list_is_a_pool_and_the_string_form_still_works(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models.one]\nprovider = "openai"\nmodel = "m"\nbase_url = "http://a:1/v1"\n'
                    '[models.two]\nprovider = "ollama"\nmodel = "m"\n'
                    'base_url = ["http://u:pw@a:1", "http://b:2"]\n')
    models = load_models(path)
    assert not models["one"].is_pool and models["one"].base_urls == ("http://a:1/v1",)
    assert models["two"].is_pool and models["two"].base_urls == ("http://u:pw@a:1", "http://b:2")
    assert models["two"].public()["base_url"] == ["http://a:1", "http://b:2"]  # no credentials
    assert "pw" not in repr(models["two"])


@pytest.mark.parametrize("value, says", [
    ("[]", "needs at least one URL"),
    ('["http://a:1", 3]', "entry 1 of the endpoint pool must be a non-empty URL string"),
    ('["http://a:1", "http://a:1/"]', "lists http://a:1 twice"),
    ("7", "must be a URL string or a list of URL strings"),
])
def test_a_bad_pool_is_named_by_file_model_and_field(tmp_path: Path, value: str, says: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(f'[models.gpu]\nprovider = "openai"\nmodel = "m"\nbase_url = {value}\n')
    with pytest.raises(ConfigError) as info:
        load_models(path)
    assert str(info.value).startswith(f"{path}: models.gpu.base_url: ") and says in str(info.value)


def test_a_pool_is_for_openai_and_ollama_only(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models.emb]\nprovider = "local"\nmodel = "m"\nbase_url = ["http://a:1/v1"]\n')
    with pytest.raises(ConfigError, match=r"models\.emb: base_url: a list of URLs .* not 'local'"):
        load_models(path)


# -- keys describe the model, not the replica ----------------------------------------------------
def test_keys_do_not_change_when_a_replica_is_added_or_reordered() -> None:
    base = dict(name="m", provider="openai", model="x", temperature=0.0)
    a, b, c = "http://a:1/v1", "http://u:secret@b:2/v1", "http://c:3/v1"
    pools = [ModelConfig(**base, base_url=urls) for urls in ([a], [a, b], [b, a], [c, b, a])]
    msgs = [{"role": "user", "content": "q"}]
    assert len({config_fingerprint(p.public()) for p in pools}) == 1
    assert len({request_key(p, msgs, [], ("A1", "v0", "i0", 0)) for p in pools}) == 1
    assert len({judge_fingerprint(p) for p in pools}) == 1
    # the single-URL form keeps the keys it had before pools existed (its redacted URL is in them)
    single = ModelConfig(**base, base_url=a)
    assert single.key_base_url() == a
    assert config_fingerprint(single.public()) != config_fingerprint(pools[0].public())
    assert config_fingerprint(single.public()) != config_fingerprint(single.model_copy(
        update={"base_url": c}).public())


def test_resume_across_an_added_and_reordered_replica(cases: pytest.Pytester) -> None:
    with Correct() as one, Correct() as two:
        cases.path.joinpath("models.toml").write_text(pool_toml([one.server.openai_url]))
        first = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-concurrency", "4")
        assert first.parseoutcomes().get("passed") == 20
        served = len(one.server.requests)
        cases.path.joinpath("models.toml").write_text(pool_toml([two.server.openai_url, one.server.openai_url]))
        again = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-resume", "--agentfloor-concurrency", "4",
                                "--no-probe")
    again.stdout.fnmatch_lines(["*resumed 20 item(s)*"])
    assert two.server.requests == [] and len(one.server.requests) == served  # nothing played again


def test_replay_after_the_replicas_changed(cases: pytest.Pytester) -> None:
    with Correct() as one, Correct() as two:
        urls = [one.server.openai_url, two.server.openai_url]
        cases.path.joinpath("models.toml").write_text(pool_toml(urls))
        recorded = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-record")
    assert recorded.parseoutcomes().get("passed") == 20
    cases.path.joinpath("models.toml").write_text(pool_toml([dead_port_url(), urls[1]]))
    replayed = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-replay", "--agentfloor-concurrency", "4")
    assert replayed.parseoutcomes().get("passed") == 20
    # the replayed records name where the recording ran, kept in the cassette
    assert {t["endpoint"] for r in records(cases)[-20:] for t in r["trajectory"]["turns"]} <= set(urls)


# -- a failing replica ---------------------------------------------------------------------------
@pytest.mark.parametrize("probe", ["probe", "no-probe"])
def test_a_failing_replica_is_taken_out_and_every_item_passes(cases: pytest.Pytester, probe: str) -> None:
    broken = FakeModelServer(default=status(500, "replica down"))
    with Correct() as good, broken:
        cases.path.joinpath("models.toml").write_text(pool_toml([broken.openai_url, good.server.openai_url]))
        result = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-concurrency", "4",
                                 *(["--no-probe"] if probe == "no-probe" else []))
        bad_requests = len(broken.requests)
        bad_url, good_url = broken.openai_url, good.server.openai_url
    assert result.parseoutcomes().get("passed") == 20, result.stdout.str()[-3000:]
    if probe == "probe":  # found dead at the start: a warning, not an error, and no item is sent there
        result.stdout.fnmatch_lines([f"*WARNING model fake: endpoint {bad_url}: error*HTTP 500*"])
        assert bad_requests <= 2  # the probe, and at most one trial if the run outlasts the cool-down
    else:  # found by failing: EVICT_AFTER failures, plus requests already on their way (4 episodes)
        assert bad_requests <= EVICT_AFTER + 4, bad_requests
    recs = records(cases)
    assert len(recs) == 20 and all(r["passed"] for r in recs)
    endpoints = [r["endpoint"] for r in recs]
    assert all(e == good_url for e in endpoints[-10:]), endpoints  # after the eviction
    # a request the failing replica refused moved on to the healthy one: every turn names it
    assert all(t["endpoint"] == good_url for r in recs for t in r["trajectory"]["turns"])


@pytest.mark.parametrize("wire", ["openai", "ollama"])
def test_a_refusing_replica_fails_over_within_the_request(wire: str) -> None:
    """retries = 0, and still no error: a request moves to the next replica without counting as a retry."""
    with Correct() as good:
        urls = [dead_port_url(), good.server.openai_url] if wire == "openai" else \
            [dead_port_url().removesuffix("/v1"), good.server.url]
        config = ModelConfig(name="m", provider=wire, model="tiny", retries=0, timeout_s=5, base_url=urls)
        pool = make_provider(config)
        assert isinstance(pool, PooledProvider)
        for _ in range(6):
            prompt = next(iter(good.by_prompt))
            pool.complete([{"role": "user", "content": prompt}], [], case=None)
        dead, healthy = (m.state for m in pool.members)
    assert dead.failed <= EVICT_AFTER and dead.evicted_until is not None
    assert healthy.served == 6


def test_all_replicas_out_still_tries_the_least_recently_failed() -> None:
    with FakeModelServer() as a, FakeModelServer() as b:
        config = ModelConfig(name="m", provider="ollama", model="tiny", retries=0, base_url=[a.url, b.url])
        pool = make_provider(config)
        for m in pool.members:
            m.state.take_out(time.monotonic())
        pool.members[0].state.last_failure -= 5  # failed longer ago
        assert pool.complete(USER, [], case=None).content == "done"
    assert len(a.requests) == 1 and b.requests == []


def test_a_recovered_replica_is_used_again() -> None:
    with FakeModelServer() as flaky, FakeModelServer() as steady:
        flaky.push(*[status(502, "restarting")] * EVICT_AFTER)
        config = ModelConfig(name="m", provider="openai", model="tiny", retries=0,
                             base_url=[flaky.openai_url, steady.openai_url])
        pool = make_provider(config)
        for _ in range(2 * EVICT_AFTER):  # the flaky one fails its three, the steady one answers all
            assert pool.complete(USER, [], case=None).content == "done"
        state = pool.members[0].state
        assert state.evicted_until is not None and state.evicted_until > time.monotonic() + 5
        before = len(flaky.requests)
        state.evicted_until = time.monotonic()  # its cool-down is over: the next request is the trial
        for _ in range(6):
            pool.complete(USER, [], case=None)
    assert pool.members[0].state.evicted_until is None
    assert len(flaky.requests) - before >= 3  # the trial and its share after it
    assert before == EVICT_AFTER


# -- balance ---------------------------------------------------------------------------------------
def test_least_outstanding_spreads_load_over_two_healthy_replicas(cases: pytest.Pytester) -> None:
    with Correct(delay_s=0.03) as one, Correct(delay_s=0.03) as two:
        cases.path.joinpath("models.toml").write_text(pool_toml([one.server.openai_url, two.server.openai_url]))
        result = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-concurrency", "8")
        counts = (len(one.server.requests), len(two.server.requests))
        urls = {one.server.openai_url, two.server.openai_url}
    assert result.parseoutcomes().get("passed") == 20
    total = sum(counts)
    assert min(counts) >= total * 0.3, counts  # both carry a substantial share
    served = Counter(t["endpoint"] for r in records(cases) for t in r["trajectory"]["turns"])
    assert set(served) == urls and sum(served.values()) == total - 2  # all but the two probe requests


def test_max_connections_holds_per_replica(cases: pytest.Pytester) -> None:
    with Correct() as one, Correct() as two:
        cases.path.joinpath("models.toml").write_text(
            pool_toml([one.server.openai_url, two.server.openai_url], max_connections=1))
        result = cases.runpytest(*ITEMS, "--model", "fake", "--agentfloor-concurrency", "8", "--no-probe")
    assert result.parseoutcomes().get("passed") == 20
    assert one.peak == 1 and two.peak == 1


def test_the_documented_pool_examples_load(tmp_path: Path) -> None:
    """docs/scaling.md's toml block and models.toml's qwen-pool work as written."""
    text = (REPO / "docs" / "scaling.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```toml\n")[1:]]
    pool_blocks = [b for b in blocks if "base_url = [" in b]
    assert pool_blocks
    for n, block in enumerate(pool_blocks):
        path = tmp_path / f"m{n}.toml"
        path.write_text(block)
        assert any(m.is_pool for m in load_models(path).values())
    assert load_models(REPO / "models.toml")["qwen-pool"].base_urls == (
        "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1")


def test_the_served_endpoint_is_noted_without_credentials() -> None:
    from pytest_agentfloor.providers.endpoints import episode_net

    with FakeModelServer() as srv:
        secret_url = srv.openai_url.replace("http://", "http://user:s3cret@")
        pool = make_provider(ModelConfig(name="m", provider="openai", model="tiny", retries=0,
                                         base_url=[dead_port_url(), secret_url]))
        with episode_net() as net:
            pool.complete(USER, [], case=None)
        assert net.endpoint == srv.openai_url and "s3cret" not in pool.endpoint
