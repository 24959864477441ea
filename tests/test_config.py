"""models.toml: built-in scripted models, the overlay, errors that name file and field, pricing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentfloor.config import (
    POOL_KEY, SCRIPTED_POLICIES, ConfigError, ModelConfig, Pricing, builtin_models, key_base_url, load_models,
    redact_text, redact_url,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(text)
    return path


def test_builtin_models_are_the_oracle_and_one_fault_per_policy() -> None:
    models = builtin_models()
    assert sorted(models) == sorted(["oracle"] + [f"fault-{p}" for p in SCRIPTED_POLICIES[1:]])
    assert all(m.provider == "scripted" and m.name == n for n, m in models.items())
    assert models["oracle"].policy == "oracle" and models["fault-resign"].policy == "resign"


def test_no_file_gives_the_builtins(tmp_path: Path) -> None:
    assert load_models(None) == builtin_models()
    assert load_models(tmp_path / "absent.toml") == builtin_models()


def test_a_file_without_models_gives_the_builtins(tmp_path: Path) -> None:
    assert load_models(write(tmp_path, "# nothing configured yet\n")) == builtin_models()


def test_a_models_table_is_added_and_may_replace_a_builtin(tmp_path: Path) -> None:
    models = load_models(write(tmp_path, """
[models."qwen3:8b"]
provider = "ollama"
model = "qwen3:8b"
base_url = "http://127.0.0.1:11434"
seed = 7
pricing = { hourly_usd = 0.5 }

[models.oracle]
provider = "scripted"
policy = "resign"
"""))
    q = models["qwen3:8b"]
    assert (q.name, q.provider, q.model, q.seed, q.pricing.hourly_usd) == ("qwen3:8b", "ollama", "qwen3:8b", 7, 0.5)
    assert (q.temperature, q.max_tokens, q.timeout_s, q.retries) == (0.0, 1024, 60.0, 2)  # documented defaults
    assert models["oracle"].policy == "resign"
    assert "fault-partial" in models


@pytest.mark.parametrize("text, message", [
    ("[models.x\n", "models.toml: not valid TOML"),
    ("models = 3\n", "models.toml: 'models' must be a table of [models.NAME] tables"),
    ("[models]\nx = 3\n", "models.toml: models.x must be a table"),
    ('[models.x]\nprovider = "openai"\nmodel = "m"\ncolour = "red"\n', "models.toml: models.x.colour: unknown field"),
    ('[models.x]\nprovider = "openai"\n', "models.toml: models.x: provider 'openai' needs 'model'"),
    ('[models.x]\nprovider = "ollama"\n', "models.toml: models.x: provider 'ollama' needs 'model'"),
    ('[models.x]\nprovider = "scripted"\npolicy = "genius"\n', "models.toml: models.x: policy must be one of oracle,"),
    ('[models.x]\nprovider = "magic"\n', "models.toml: models.x.provider: Input should be"),
    ('[models.x]\nprovider = "openai"\nmodel = "m"\nmax_tokens = 0\n', "models.toml: models.x.max_tokens: Input should be greater than 0"),
    ('[models.x]\nprovider = "openai"\nmodel = "m"\nretries = -1\n', "models.toml: models.x.retries: Input should be greater than or equal to 0"),
    ('[models.x]\nprovider = "openai"\nmodel = "m"\npricing = { hourly_usd = -1 }\n',
     "models.toml: models.x.pricing.hourly_usd: Input should be greater than or equal to 0"),
])
def test_errors_name_the_file_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_models(write(tmp_path, text))
    assert str(info.value).startswith(str(tmp_path / message.split(":")[0]) + ":" + message.split(":", 1)[1])


def test_a_scripted_model_needs_no_model_id_and_local_needs_none() -> None:
    ModelConfig(name="s", provider="scripted", policy="oracle")
    ModelConfig(name="l", provider="local")


@pytest.mark.parametrize("pricing, tokens_in, tokens_out, busy_s, usd", [
    ({}, 10**6, 10**6, 3600, 0.0),
    ({"input_per_mtok": 3.0}, 2_000_000, 5, 0, 6.0),
    ({"output_per_mtok": 15.0}, 5, 200_000, 0, 3.0),
    ({"hourly_usd": 1.8}, 0, 0, 600, 0.3),  # ten minutes of an hourly price
    ({"hourly_usd": 2.0, "input_per_mtok": 1.0, "output_per_mtok": 4.0}, 500_000, 250_000, 1800, 1.0 + 0.5 + 1.0),
])
def test_pricing_hand_worked(pricing: dict, tokens_in: int, tokens_out: int, busy_s: float, usd: float) -> None:
    assert Pricing(**pricing).cost(tokens_in, tokens_out, busy_s) == pytest.approx(usd, rel=1e-12)


def test_public_view_keeps_settings_and_drops_credentials() -> None:
    cfg = ModelConfig(name="r", provider="openai", model="m", base_url="https://u:p@h.example:8443/v1?k=s#f",
                      api_key_env="MY_KEY", temperature=0.3, seed=5)
    public = cfg.public()
    assert public["base_url"] == "https://h.example:8443/v1"
    assert (public["api_key_env"], public["temperature"], public["seed"], public["model"]) == ("MY_KEY", 0.3, 5, "m")
    assert ModelConfig(name="s", provider="scripted", policy="oracle").public()["base_url"] is None


# -- unreadable files: the error names the line and column (written against mutation testing) ------
@pytest.mark.parametrize("raw, where", [
    (b"# caf\xe9\n", "1: not UTF-8 (byte 0xe9 at column 6)"),  # on the first line
    (b"\n# \xff\n# after\n", "2: not UTF-8 (byte 0xff at column 3)"),  # after a newline at offset 0
    (b'# a\n# b\nx = "\xc3"\n# c\n', "3: not UTF-8 (byte 0xc3 at column 6)"),  # newlines before and after
])
def test_a_file_that_is_not_utf8_names_line_and_column(tmp_path: Path, raw: bytes, where: str) -> None:
    path = tmp_path / "models.toml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as info:
        load_models(path)
    assert str(info.value) == f"{path}:{where}; save the file as UTF-8"


def test_a_file_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.mkdir()  # exists, but reading it fails
    with pytest.raises(ConfigError) as info:
        load_models(path)
    assert str(info.value) == f"{path}: cannot be read: Is a directory"


@pytest.mark.parametrize("name", ["has space", "a,b", "x::y", "-lead", "", "br[0]", "x" * 101])
def test_a_model_name_that_cannot_be_part_of_a_test_id_is_refused(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, f'[models."{name}"]\nprovider = "scripted"\npolicy = "oracle"\n')
    with pytest.raises(ConfigError) as info:
        load_models(path)
    assert str(info.value) == (f"{path}: models.{name!r}: a model name may hold letters, digits and . _ - : + "
                               "(no spaces, commas, brackets or '::'), as it is part of test ids and --model lists")


@pytest.mark.parametrize("name", ["qwen3:8b", "gpt-4.1+tools", "a_b", "x" * 100])
def test_model_names_with_the_allowed_characters_load(tmp_path: Path, name: str) -> None:
    assert load_models(write(tmp_path, f'[models."{name}"]\nprovider = "scripted"\npolicy = "oracle"\n'))[name].name == name


# -- redaction ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("", ""),
    ("no address here", "no address here"),
    ("mail ops@example.com", "mail ops@example.com"),  # an @ outside a URL is left alone
    ("GET http://u:pw@h.example/v1 failed", "GET http://***@h.example/v1 failed"),
    ("a https://tok@api.example/x and ftp://me:1@f.example", "a https://***@api.example/x and ftp://***@f.example"),
    ("http://h.example/path@v2", "http://h.example/path@v2"),  # an @ after the host is no user information
])
def test_redact_text_masks_user_information_in_free_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_redact_url_of_a_url_it_cannot_parse_still_drops_the_password() -> None:
    assert redact_url("http://u:pw-secret@[::1/v1") == "http://***@[::1/v1"


def test_the_repr_of_a_configuration_never_shows_a_password() -> None:
    cfg = ModelConfig(name="r", provider="openai", model="m#frag?q=1", base_url="https://u:pw-secret@h.example/v1")
    text = repr(cfg)
    assert "pw-secret" not in text and "base_url='https://h.example/v1'" in text
    assert "model='m#frag?q=1'" in text  # only base_url is redacted
    assert "base_url=None" in repr(ModelConfig(name="s", provider="scripted", policy="oracle"))


POOL = ["https://u:pw-secret@a.example/v1?k=s", "http://b.example:8000/v1#f"]


def test_the_repr_of_a_pool_never_shows_a_password() -> None:
    cfg = ModelConfig(name="p", provider="openai", model="m", base_url=POOL, max_connections=3)
    text = repr(cfg)
    assert "pw-secret" not in text and "k=s" not in text
    assert "base_url=('https://a.example/v1', 'http://b.example:8000/v1')" in text
    assert "max_connections=3" in text  # other fields keep their value


def test_public_view_of_a_pool_lists_every_replica_without_credentials() -> None:
    data = ModelConfig(name="p", provider="ollama", model="m", base_url=POOL).public()
    assert data["base_url"] == ["https://a.example/v1", "http://b.example:8000/v1"]
    assert data["name"] == "p" and data["provider"] == "ollama" and data["model"] == "m"


def test_a_replica_is_the_same_configuration_with_one_url() -> None:
    cfg = ModelConfig(name="p", provider="openai", model="m", base_url=POOL, rpm=60)
    one = cfg.replica("http://b.example:8000/v1")
    assert one.base_url == "http://b.example:8000/v1" and not one.is_pool
    assert (one.name, one.provider, one.model, one.rpm) == ("p", "openai", "m", 60)
    assert cfg.is_pool and cfg.base_url == tuple(POOL)  # the pool itself is unchanged


def test_the_key_url_is_redacted_for_one_url_and_a_marker_for_a_pool() -> None:
    one = ModelConfig(name="r", provider="openai", model="m", base_url="https://u:pw@h.example/v1?k=s")
    assert one.key_base_url() == "https://h.example/v1"
    assert ModelConfig(name="r", provider="openai", model="m").key_base_url() is None
    assert ModelConfig(name="r", provider="openai", model="m", base_url="").key_base_url() is None
    assert ModelConfig(name="s", provider="scripted", policy="oracle").key_base_url() is None
    pool = ModelConfig(name="p", provider="openai", model="m", base_url=POOL)
    assert pool.key_base_url() == POOL_KEY == "<endpoint pool>"
    # a stored (public) configuration gives the same keys as the live one
    assert key_base_url(pool.public()["base_url"]) == POOL_KEY
    assert key_base_url(tuple(POOL)) == POOL_KEY
    assert key_base_url(one.public()["base_url"]) == "https://h.example/v1"
    assert key_base_url(None) is None


@pytest.mark.parametrize("field", ["context_window", "max_tokens", "timeout_s", "max_connections"])
def test_a_boolean_where_a_number_belongs_is_an_error_naming_the_field(tmp_path: Path, field: str) -> None:
    # before (red team): pydantic's lax mode read `context_window = true` as 1, so Ollama got num_ctx 1
    path = write(tmp_path, f'[models.m]\nprovider = "ollama"\nmodel = "x"\n{field} = true\n')
    with pytest.raises(ConfigError) as info:
        load_models(path)
    assert field in str(info.value) and "boolean" in str(info.value)


def test_booleans_stay_booleans_and_numbers_numbers(tmp_path: Path) -> None:
    models = load_models(write(tmp_path, '[models.m]\nprovider = "ollama"\nmodel = "x"\nthink = true\nhosted = false\n'
                                         'context_window = 4096\ntimeout_s = 30\n'))
    m = models["m"]
    assert m.think is True and m.hosted is False and m.context_window == 4096 and m.timeout_s == 30.0


def test_a_password_in_the_url_or_the_key_echoed_by_a_server_is_masked() -> None:
    from pytest_agentfloor.config import redact_secrets

    url = "http://agent:pw%2Fsecret@127.0.0.1:9/v1"
    text = "401: user agent:pw/secret, password pw%2Fsecret or pw/secret, key sk-live-123"
    out = redact_secrets(text, url, "sk-live-123")
    assert "secret" not in out and "sk-live" not in out and out.count("***") == 4
