"""What one pytest process's run holds, beside the options it was asked for (options.Options).

`RunState` is the session's mutable side: providers made on first use, the run log, the
cassettes, the judge client, the probe's findings, pool replicas taken out, embedded servers,
the resume index, this session's directory and the --max-cost meter. The controller fills it
(session.AgentFloorSession) and hands a worker what it needs (``workerinput``, `to_workerinput`);
a worker starts from its own `Options` plus that (`from_workerinput`). Both live in
``config.stash`` (`options.options_key`, `state_key`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # this module is imported by every benchmark run: everything heavy loads on use
    from .config import ModelConfig
    from .corpus import CassetteStore
    from .judge.client import Judge
    from .options import Options
    from .plan import CostMeter
    from .providers.base import Provider
    from .results import RunLog

#: the workerinput keys the controller hands each xdist worker (besides the local servers' URLs)
RESUME_KEY, PROBE_KEY, POOL_OUT_KEY = "agentfloor_resume", "agentfloor_probe", "agentfloor_pool_out"
SESSION_DIR_KEY, COST_START_KEY = "agentfloor_session_dir", "agentfloor_cost_start"


@dataclass
class RunState:
    """The run's mutable state in one pytest process (controller or worker)."""

    options: Options
    #: model name -> (probe classification, detail), from the controller's probe at session start
    probes: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: replicas (indexes into base_url) of a pooled model that failed the session's probe: out at the start
    pool_out: dict[str, list[int]] = field(default_factory=dict)
    #: embedded model servers this process started (controller only): config name -> local.server.LocalServer
    local_servers: dict[str, Any] = field(default_factory=dict)
    #: --resume: the keys of the items already complete (deselected)
    resume_keys: set[str] = field(default_factory=set)
    providers: dict[str, Provider] = field(default_factory=dict)
    run_log: RunLog | None = None
    cassettes: CassetteStore | None = None
    judge_client: Judge | None = None
    #: this session's own directory under report_dir/sessions/ (runs.jsonl is written there)
    session_dir: Path | None = None
    #: where this session's own records start in its runs.jsonl (after any resumed ones), for --max-cost
    cost_start: int = 0
    cost_meter: CostMeter | None = None
    #: every form of the models' API keys and base_url passwords, collected once (masking.model_secrets)
    _secrets: tuple[str, ...] | None = None

    @classmethod
    def from_workerinput(cls, options: Options, workerinput: Mapping[str, Any]) -> RunState:
        """An xdist worker's state: what the controller handed it (`to_workerinput`)."""
        session_dir = workerinput.get(SESSION_DIR_KEY)
        return cls(options,
                   resume_keys=set(workerinput.get(RESUME_KEY, ())),
                   probes={k: (str(v[0]), str(v[1])) for k, v in workerinput.get(PROBE_KEY, {}).items()},
                   pool_out=dict(workerinput.get(POOL_OUT_KEY, {})),
                   cost_start=int(workerinput.get(COST_START_KEY, 0)),
                   session_dir=Path(session_dir) if session_dir else None)

    def to_workerinput(self) -> dict[str, Any]:
        """What a worker needs of the controller's state (JSON-serialisable, for node.workerinput)."""
        out: dict[str, Any] = {
            RESUME_KEY: sorted(self.resume_keys),
            PROBE_KEY: {k: list(v) for k, v in self.probes.items()},
            POOL_OUT_KEY: self.pool_out,
            SESSION_DIR_KEY: str(self.session_dir or ""),
            COST_START_KEY: self.cost_start,
        }
        if self.local_servers:
            from .local.session import WORKERINPUT_KEY, worker_urls

            out[WORKERINPUT_KEY] = worker_urls(self.local_servers)
        return out

    def spent(self) -> float:
        """USD spent by this session's records so far, as every process sees it in runs.jsonl."""
        if self.cost_meter is None:
            from .plan import CostMeter

            self.cost_meter = CostMeter((self.session_dir or self.options.report_dir) / "runs.jsonl", self.cost_start)
        return self.cost_meter.read()

    def model_secrets(self) -> tuple[str, ...]:
        """What records and failure text must never show (masking.py), read once per process from
        the selected models and the judge: a key set after the session started is not looked up again."""
        if self._secrets is None:
            from .masking import model_secrets

            self._secrets = model_secrets([*self.options.selected, self.options.judge])
        return self._secrets

    def provider(self, config: ModelConfig) -> Provider:
        """This process's provider for a model, made on first use (recording, replaying or live)."""
        if config.name not in self.providers:
            from .corpus import CASSETTE_FILE, CassetteStore, RecordingProvider, ReplayProvider
            from .providers.registry import make_provider

            opts = self.options
            cassettes = None
            if opts.replay or opts.record:
                cassettes = self.cassettes = self.cassettes or CassetteStore(
                    opts.report_dir / CASSETTE_FILE, secrets=self.model_secrets())
            if cassettes is not None and opts.replay:
                self.providers[config.name] = ReplayProvider(config, cassettes)
            else:
                from .context import session_turns
                from .providers.limits import limited

                live = limited(make_provider(config, turns=session_turns(opts.protocol)), config)
                if self.pool_out.get(config.name):  # an xdist worker: replicas the controller's probe found dead
                    import time

                    from .providers.pool import PooledProvider

                    assert isinstance(live, PooledProvider)  # only a pool has replicas (limited() leaves it bare)
                    for i in self.pool_out[config.name]:
                        live.members[i].state.take_out(time.monotonic())
                self.providers[config.name] = RecordingProvider(live, cassettes) if cassettes is not None else live
        return self.providers[config.name]

    def judge_for(self) -> Judge | None:
        """This process's judge.client.Judge (None without --judge); its cache is shared by every
        session and worker: report_dir/judge-cache.jsonl."""
        opts = self.options
        if opts.judge is None:
            return None
        if self.judge_client is None:
            from .judge.cache import CACHE_FILE, JudgeCache
            from .judge.client import Judge

            cache = None if opts.judge_cache == "off" else JudgeCache(
                opts.report_dir / CACHE_FILE, opts.judge_cache, secrets=self.model_secrets())
            self.judge_client = Judge(opts.judge, cache, offline=opts.replay)
        return self.judge_client

    def log(self) -> RunLog:
        if self.run_log is None:
            from .results import RunLog

            self.run_log = RunLog((self.session_dir or self.options.report_dir) / "runs.jsonl")
        return self.run_log

    def close(self) -> None:
        """Close what this process opened (providers, judge client, run log); session.close runs between
        this and `close_late` (it releases the report dir, which the cassettes and servers outlive)."""
        for provider in self.providers.values():
            provider.close()
        if self.judge_client is not None:
            self.judge_client.close()
        if self.run_log:
            self.run_log.close()

    def close_late(self) -> None:
        if self.cassettes:
            self.cassettes.close()
        if self.local_servers:
            from .local.session import stop_local_servers

            stop_local_servers(self.local_servers)


state_key = pytest.StashKey[RunState]()
