"""What the plugin may touch in a pytest run: which files are cases, and whether this is a benchmark run.

The plugin is loaded into every pytest run of a project that installs it. It stays inert (no
probe, no network, no report files, no usage errors, no case collection) unless the run is a
benchmark run: a model option is given on the command line, or the arguments reach case files.
Case files are the files shaped as cases (kinds.is_case_file: ``tier_*/ID.toml``, or a
``callsite/*.toml`` table declaring its kind) under the configured case paths (ini
``agentfloor_case_paths``, default ``cases/`` at the rootdir), or named on the command line
itself; no other TOML file is opened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_paths_key = pytest.StashKey[list[Path]]()
_explicit_key = pytest.StashKey[set[Path]]()


def case_paths(config: pytest.Config) -> list[Path]:
    """The configured case directories, absolute."""
    if _paths_key not in config.stash:
        configured = [Path(p).resolve() for p in config.getini("agentfloor_case_paths")]
        config.stash[_paths_key] = configured or [Path(config.rootpath, "cases").resolve()]
    return config.stash[_paths_key]


def _arg_paths(config: pytest.Config) -> list[Path]:
    base = Path(config.invocation_params.dir)
    return [(base / str(arg).split("::")[0]).resolve() for arg in config.args]


def explicit_case_files(config: pytest.Config) -> set[Path]:
    """Case-shaped files named on the command line: naming one makes it a case wherever it is."""
    if _explicit_key not in config.stash:
        from .kinds import is_case_file as shaped

        config.stash[_explicit_key] = {p for p in _arg_paths(config) if p.suffix == ".toml" and p.is_file()
                                       and shaped(p)}
    return config.stash[_explicit_key]


def is_case_file(config: pytest.Config, path: Path) -> bool:
    if path.suffix != ".toml":
        return False
    path = path.resolve()
    if path in explicit_case_files(config):
        return True
    if not any(path.is_relative_to(root) for root in case_paths(config)):
        return False
    from .kinds import is_case_file as shaped

    return shaped(path)


def targets_cases(config: pytest.Config) -> bool:
    """Whether the arguments reach case files: a case file, a case directory, or a directory holding one."""
    roots = [r for r in case_paths(config) if r.is_dir()]
    for p in _arg_paths(config):
        if p in explicit_case_files(config):
            return True
        if p.is_dir() and any(p.is_relative_to(r) or r.is_relative_to(p) for r in roots):
            return True
    return False


def model_option_given(config: pytest.Config) -> bool:
    """--model / --agentfloor-model on the command line (an ini default alone does not count)."""
    return config.getoption("agentfloor_models", None) is not None


def is_benchmark_run(config: pytest.Config) -> bool:
    return model_option_given(config) or targets_cases(config)
