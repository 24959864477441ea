"""Model configurations: models.toml plus the built-in scripted policies.

A configuration names the environment variable that holds an API key, never the key; the
public view of a configuration (`public()`) is what records and reports may carry.
"""

from __future__ import annotations

import ipaddress
import math
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ProviderName = Literal["scripted", "openai", "ollama", "local", "replay", "recorded"]
MAX_SLOTS = 64  # llama-server slots: each holds a whole episode's context in memory
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a request bound longer than a week is a typo (and overflows thread waits)
MIN_RPM = 0.01  # slower than one request in 100 minutes is a typo: the spacing wait would never end
MAX_THREADS = 256

SCRIPTED_POLICIES: tuple[str, ...] = (
    "oracle",
    "menu_shy",
    "workflow_shy",
    "guide_shy",
    "hallucinate",
    "malformed",
    "exhaust",
    "resign",
    "plan_only",
    "wrong_tool",
    "partial",
    "repeat",
    "over_actuate",
    "always_refuse",
)


def _no_bool_for_number(cls: type[BaseModel], value: Any, info: Any) -> Any:
    """TOML's `true` is not a number: pydantic's lax mode would read `context_window = true` as 1."""
    if isinstance(value, bool):
        annotation = str(cls.model_fields[info.field_name].annotation)
        if "bool" not in annotation and ("int" in annotation or "float" in annotation):
            raise ValueError("expected a number, got a boolean (true/false)")
    return value


#: the largest price per field: far above any real one (per hour of hardware, per million tokens), low enough
#: that no cost a run can accrue overflows (an absurd price is a typo, not a tariff)
MAX_PRICE_USD = 1e6


class Pricing(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    hourly_usd: float | None = Field(None, ge=0, le=MAX_PRICE_USD, description="amortised hardware cost per hour "
                                     "the model is busy serving requests (see docs/reports.md)")
    input_per_mtok: float | None = Field(None, ge=0, le=MAX_PRICE_USD)
    output_per_mtok: float | None = Field(None, ge=0, le=MAX_PRICE_USD)

    _numbers = field_validator("*", mode="before")(classmethod(_no_bool_for_number))

    def cost(self, tokens_in: int, tokens_out: int, busy_s: float) -> float:
        """``busy_s``: the time the model was busy serving the run (Trajectory.busy_s), not wall time.

        A figure a server got wrong (negative, NaN, infinite) is charged as 0, never subtracted:
        money spent can only grow (callers flag such usage and record the cost as unknown).
        """
        usd = 0.0
        if self.hourly_usd is not None:
            usd += self.hourly_usd * _usage(busy_s) / 3600.0
        if self.input_per_mtok is not None:
            usd += self.input_per_mtok * _usage(tokens_in) / 1e6
        if self.output_per_mtok is not None:
            usd += self.output_per_mtok * _usage(tokens_out) / 1e6
        return usd


def _usage(value: object) -> float:
    """A usage figure fit to be charged: a finite number >= 0, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    try:
        v = float(value)
    except OverflowError:  # an integer too large for a float
        return 0.0
    return v if math.isfinite(v) and v > 0 else 0.0


class ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str
    provider: ProviderName
    model: str = ""
    base_url: str | tuple[str, ...] | None = Field(
        None, description="the API root; a list of several is an endpoint pool: replicas of the same model "
        "(openai and ollama), see docs/scaling.md")
    api_key_env: str | None = Field(None, description="NAME of the environment variable holding the key")
    temperature: float = Field(0.0, ge=0, le=100, description="sampling temperature (no server takes a negative one)")
    seed: int | None = None
    think: bool | None = Field(None, description="Ollama's reasoning switch (sent as `think` when set)")
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = Field(
        None, description="OpenAI-compatible reasoning level (sent as `reasoning_effort` when set)")
    max_tokens: int = Field(1024, gt=0, description="per-request completion cap")
    context_window: int | None = Field(None, gt=0, description="tokens of context (Ollama: options.num_ctx); "
                                       "None: Ollama asks the server and sizes it, others leave it to the server")
    context_window_max: int | None = Field(None, gt=0, description="upper bound of an automatically sized "
                                           "Ollama context window (server memory grows with it)")
    timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, description="hard wall-clock bound per request, "
                             "in seconds (at most a week, as --episode-timeout)")
    max_connections: int | None = Field(None, gt=0, description="requests this process sends the endpoint at once "
                                        "(all episodes share it; None: no limit beyond --concurrency)")
    rpm: float | None = Field(None, ge=MIN_RPM, description="requests per minute this process sends the endpoint "
                              "at most (at least one request in 100 minutes)")
    slots: int | None = Field(None, gt=0, le=MAX_SLOTS, description="embedded server only: llama-server "
                              "--parallel, the episodes it serves at once (each slot gets the full context)")
    threads: int | None = Field(None, gt=0, le=MAX_THREADS, description="embedded server only: llama-server "
                                "--threads (generation)")
    threads_batch: int | None = Field(None, gt=0, le=MAX_THREADS, description="embedded server only: "
                                      "llama-server --threads-batch (prompt reading; default: as threads)")
    retries: int = Field(2, ge=0)
    system_prompt: Literal["default", "explicit_submission", "structured"] = "default"
    repairs: tuple[Literal["workflow_prompt", "interface_guide", "router", "controller", "canonical_delivery"], ...] \
        | None = Field(None, description="repair switches (docs/pressures.md, harness_repairs.py); None: none")
    cap_scale: int | None = Field(None, ge=2, le=64, description="completion cap x this (the cap sweep's high arm, "
                                  "docs/pressures.md): the protocol's cap, else max_tokens; None: as is")
    params_b: float | None = Field(None, ge=0, description="parameter count in billions, for recipes")
    pricing: Pricing = Field(default_factory=Pricing)
    policy: str | None = Field(None, description="scripted policy name")
    hosted: bool | None = Field(None, description="served by a hosted API (true) or on your own hardware "
                                "(false), for the call-site routing policies; None: inferred (see is_hosted)")
    path: str | None = Field(None, description="provider \"recorded\": the JSONL file of recorded outputs "
                             "(relative to models.toml), see docs/callsite.md")

    _numbers = field_validator("*", mode="before")(classmethod(_no_bool_for_number))

    @field_validator("repairs", mode="after")
    @classmethod
    def _repairs(cls, value: Any) -> Any:
        """Sorted and de-duplicated, so the same set always gives the same keys; () is None."""
        return tuple(sorted(set(value))) or None if value is not None else None

    @field_validator("base_url", mode="before")
    @classmethod
    def _base_urls(cls, value: Any) -> Any:
        """One URL (a string), or an endpoint pool: a non-empty list of distinct URL strings."""
        if value is None:
            return value
        if isinstance(value, str):
            if value:  # "" is the provider's default endpoint
                _check_url(value)
            return value
        if not isinstance(value, (list, tuple)):
            raise ValueError("must be a URL string or a list of URL strings (an endpoint pool), "
                             f"not {type(value).__name__}")
        if not value:
            raise ValueError("an endpoint pool needs at least one URL (or leave base_url out)")
        for n, url in enumerate(value):
            if not isinstance(url, str) or not url.strip():
                raise ValueError(f"entry {n} of the endpoint pool must be a non-empty URL string, not {url!r}")
            _check_url(url, f"entry {n} of the endpoint pool: ")
        seen = [u.rstrip("/") for u in value]
        dup = next((redact_url(value[seen.index(seen[n])]) for n in range(len(seen)) if seen[n] in seen[:n]), None)
        if dup is not None:
            raise ValueError(f"the endpoint pool lists {dup} twice")
        return tuple(value)

    @model_validator(mode="after")
    def _check(self) -> "ModelConfig":
        if self.provider == "scripted" and self.policy not in SCRIPTED_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(SCRIPTED_POLICIES)}")
        if self.provider == "recorded" and not self.path:
            raise ValueError('provider "recorded" needs \'path\' (the JSONL file of recorded outputs)')
        if self.path is not None and self.provider != "recorded":
            raise ValueError(f"path: for provider \"recorded\" only, not {self.provider!r}")
        if self.provider in ("openai", "ollama") and not self.model:
            raise ValueError(f"provider {self.provider!r} needs 'model' (the served model id)")
        if self.is_pool and self.provider not in ("openai", "ollama"):
            raise ValueError(f"base_url: a list of URLs (an endpoint pool) is for providers openai and ollama, "
                             f"not {self.provider!r}; give one URL string")
        server = [f for f in self.SERVER_FIELDS if getattr(self, f) is not None]
        if server and (self.provider != "local" or self.base_url):
            raise ValueError(f"{' and '.join(server)}: for the embedded model server only (provider = \"local\" "
                             f"without base_url); a server you run yourself takes them where you start it")
        return self

    @property
    def is_pool(self) -> bool:
        """base_url is a list: replicas of one model (even a list of one), balanced by providers/pool.py."""
        return isinstance(self.base_url, tuple)

    @property
    def base_urls(self) -> tuple[str, ...]:
        """Every configured URL: the pool's, or the one base_url; () when the provider's default applies."""
        if isinstance(self.base_url, tuple):
            return self.base_url
        return (self.base_url,) if self.base_url else ()

    @property
    def single_url(self) -> str | None:
        """The base_url of a configuration with at most one (what a provider is made from: a pool's
        provider is made per replica, `replica`); None when the provider's default applies."""
        if isinstance(self.base_url, tuple):
            raise TypeError(f"models.{self.name}: an endpoint pool's providers are made per replica")
        return self.base_url

    def replica(self, url: str) -> "ModelConfig":
        """This configuration served by one URL of its pool (what each replica's provider gets)."""
        return self.model_copy(update={"base_url": url})

    def key_base_url(self) -> str | None:
        """What resume, cassette and judge-cache keys hold for the endpoint: the (redacted) URL of a
        single-URL model, unchanged from before pools existed, and for a pool no URL at all: the
        keys describe the model, not the replica that served it, so adding, removing or reordering
        replicas keeps them."""
        if self.is_pool:
            return POOL_KEY
        return redact_url(self.base_url) if isinstance(self.base_url, str) and self.base_url else None

    def __repr_args__(self) -> Any:
        """A repr (tracebacks with locals, debug output) never shows a password in base_url."""
        for key, value in super().__repr_args__():
            if key == "base_url" and isinstance(value, str):
                value = redact_url(value)
            elif key == "base_url" and isinstance(value, tuple):
                value = tuple(redact_url(v) for v in value)
            yield key, value

    #: what reports read about a model, not a condition of its runs: kept out of resume keys
    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("hosted",)
    #: fields added after records existed: left out of public() while unset, so that the public view
    #: (and so the resume key) of every earlier configuration stays what it was
    NEW_FIELDS: ClassVar[tuple[str, ...]] = ("hosted", "path", "repairs", "cap_scale")

    #: how the embedded llama.cpp server is started (docs/local-model.md)
    SERVER_FIELDS: ClassVar[tuple[str, ...]] = ("slots", "threads", "threads_batch")
    #: how fast requests are sent or served, not what is measured: not part of a run's condition (at
    #: temperature 0 no item's outcome changed with the embedded server's slots or threads, docs/local-model.md)
    LIMIT_FIELDS: ClassVar[tuple[str, ...]] = ("max_connections", "rpm", *SERVER_FIELDS)

    def public(self) -> dict[str, Any]:
        """Everything but secrets; base URLs lose any credentials they embed."""
        data = self.model_dump(mode="json")
        for key in self.NEW_FIELDS:
            if data.get(key) is None:
                data.pop(key, None)
        if isinstance(data.get("base_url"), list):
            data["base_url"] = [redact_url(u) for u in data["base_url"]]
        elif data.get("base_url"):
            data["base_url"] = redact_url(data["base_url"])
        return data


def is_hosted(public: Any) -> bool:
    """Whether a model (its public configuration) is hosted, for the call-site routing policies.

    The rule, first match wins: an explicit ``hosted = true/false``; token pricing
    (``input_per_mtok`` or ``output_per_mtok``) is hosted; hourly pricing (amortised hardware) is
    local; providers ``local``, ``ollama``, ``scripted`` and ``recorded`` are local; provider
    ``openai`` is hosted unless every base_url is a loopback address (``localhost``, 127.0.0.0/8,
    ``::1``; no base_url means the OpenAI API, hosted); anything else is local.
    """
    cfg = public if isinstance(public, dict) else {}
    if isinstance(cfg.get("hosted"), bool):
        return bool(cfg["hosted"])
    raw_pricing = cfg.get("pricing")
    pricing: dict[str, Any] = raw_pricing if isinstance(raw_pricing, dict) else {}
    if pricing.get("input_per_mtok") is not None or pricing.get("output_per_mtok") is not None:
        return True
    if pricing.get("hourly_usd") is not None:
        return False
    if cfg.get("provider") == "openai":
        urls = cfg.get("base_url")
        urls = [urls] if isinstance(urls, str) else list(urls or [])
        return not urls or not all(isinstance(u, str) and is_loopback(u) for u in urls)
    return False


def _check_url(url: str, where: str = "") -> None:
    """An http(s) URL with a host (and a valid port): a garbage base_url is an error at load, not 30
    infrastructure errors later. The message shows the URL redacted (it may embed a key)."""
    import unicodedata
    from urllib.parse import urlsplit

    from .render import safe_text

    shown = safe_text(redact_url(url), multiline=False)
    if url != url.strip() or any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in url):
        raise ValueError(f"{where}{shown!r} holds whitespace or control characters; expected e.g. http://host:port/v1")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{where}{shown!r} is not a URL ({exc}); expected e.g. http://host:port/v1") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{where}{shown!r} is not an http(s) URL with a host; expected e.g. http://localhost:11434 "
                         "or https://api.example.com/v1")
    del port


#: the endpoint in the keys of a pooled model: a marker no URL can be
POOL_KEY = "<endpoint pool>"


def key_base_url(public_base_url: Any) -> Any:
    """`ModelConfig.key_base_url` for a stored (public) configuration's base_url."""
    return POOL_KEY if isinstance(public_base_url, (list, tuple)) else public_base_url


def redact_url(url: str) -> str:
    """The one way a URL is shown or stored: no user:password, no query (keys hide there), no fragment.

    Every message, record, report and terminal line that carries a URL goes through here (or
    through `redact_text`, for free text that may contain one).
    """
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:  # user, password, or an empty user information ("http://@host")
            host = parts.netloc.rpartition("@")[2]
            parts = parts._replace(netloc=host)
        return urlunsplit(parts._replace(query="", fragment=""))
    except ValueError:  # e.g. an invalid port or IPv6 literal: keep nothing that could be a secret
        return redact_text(url)


strip_credentials = redact_url  # the earlier name, kept for callers


def redact_secrets(text: str, url: str | None, key: str | None = None) -> str:
    """`text` with the API key and the password (and user:password) of `url` masked as ***: a server
    may echo either in an error body, which then reaches records and the terminal."""
    from urllib.parse import unquote, urlsplit

    secrets = [key] if key else []
    try:
        parts = urlsplit(url or "")
        if parts.password:
            secrets += [f"{parts.username}:{parts.password}", parts.password, unquote(parts.password)]
    except ValueError:
        pass
    for secret in sorted({s for s in secrets if s and len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact_text(text)

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"<>]*@")


def redact_text(text: str) -> str:
    """`text` with the user:password@ of every URL in it masked as ***@ (for messages and tracebacks)."""
    if not text or "@" not in text:
        return text
    return _URL_USERINFO.sub(r"\g<scheme>***@", text)


#: model names become part of pytest node ids and of comma-separated --model lists
MODEL_NAME = re.compile(r"(?!.*::)[A-Za-z0-9][A-Za-z0-9._:+-]{0,99}")


class ConfigError(Exception):
    pass


def builtin_models() -> dict[str, ModelConfig]:
    out = {"oracle": ModelConfig(name="oracle", provider="scripted", policy="oracle")}
    for p in SCRIPTED_POLICIES[1:]:
        out[f"fault-{p}"] = ModelConfig(name=f"fault-{p}", provider="scripted", policy=p)
    return out


def load_models(path: Path | None) -> dict[str, ModelConfig]:
    """Built-in scripted models, overlaid by the `[models.NAME]` tables of models.toml."""
    models = builtin_models()
    if path is None or not path.exists():
        return models
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {column}); "
                          "save the file as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    tables = data.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: 'models' must be a table of [models.NAME] tables")
    for name, table in tables.items():
        if not MODEL_NAME.fullmatch(name):
            raise ConfigError(f"{path}: models.{name!r}: a model name may hold letters, digits and . _ - : + "
                              "(no spaces, commas, brackets or '::'), as it is part of test ids and --model lists")
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: models.{name} must be a table")
        if table.get("provider") == "recorded" and isinstance(table.get("path"), str) and table["path"]:
            table = {**table, "path": str((path.parent / table["path"]).resolve())}  # relative to models.toml
        try:
            models[name] = ModelConfig.model_validate({"name": name, **table})
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            raise ConfigError(f"{path}: models.{name}{'.' + loc if loc else ''}: {msg}") from None
    return models


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine (localhost, 127.0.0.0/8, ::1): such requests never use a proxy."""
    try:
        host = (urlsplit(url if "//" in url else f"http://{url}").hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
