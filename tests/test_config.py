"""models.toml: built-in scripted models, the overlay, errors that name file and field, pricing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentfloor.config import SCRIPTED_POLICIES, ConfigError, ModelConfig, Pricing, builtin_models, load_models


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
