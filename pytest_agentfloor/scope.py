"""What the plugin may touch in a pytest run: which files are cases, and whether this is a benchmark run.

The plugin is loaded into every pytest run of a project that installs it. It stays inert (no
probe, no network, no report files, no usage errors, no case collection, no extra output) unless
the run is a benchmark run: a model option is given on the command line, or the arguments reach
case files. A case file is recognised by its content, never by its folder's name
(:func:`shaped_as_case`): it carries a built-in kind's signature (the ladder's top-level ``id``
and ``tier`` with its ``[prompts]``, a call-site table's ``kind`` and ``site``, a pressure file's
``kind`` and ``intent``: casefiles.py) or declares an installed plug-in kind. Only TOML
files under the configured case paths (ini ``agentfloor_case_paths``, default ``cases/`` at the
rootdir), or named on the command line, are looked at; a ``cases/`` folder of anything else
leaves the run alone. Once a run is a benchmark run, a TOML file beside ladder cases that declares
no kind is collected as well (a ladder case may omit its kind line), so that an empty or broken
case is reported rather than skipped. This module imports nothing heavy: it runs in every pytest run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .casefiles import case_shape, shaped_as_case

_paths_key = pytest.StashKey[list[Path]]()
_paths_error_key = pytest.StashKey[pytest.UsageError]()
_explicit_key = pytest.StashKey[set[Path]]()
_targets_key = pytest.StashKey[bool]()
_beside_key = pytest.StashKey[dict]()

def case_paths(config: pytest.Config) -> list[Path]:
    """The configured case directories, absolute.

    Every pytest run asks (is this a benchmark run?): a bad ini value is kept for case_paths_error,
    which a benchmark run raises, and meanwhile the default stands; an unrelated run goes on."""
    if _paths_key not in config.stash:
        from .options import ini_value

        try:
            configured = [Path(p).resolve() for p in ini_value(config, "agentfloor_case_paths")]
        except (pytest.UsageError, ValueError, OSError, RuntimeError) as exc:  # a bad type, an unclosed quote
            from .options import ini_label  # (shlex; pytest 9.2 makes it a usage error), a NUL byte, a link loop

            said = str(exc) if "agentfloor_case_paths" in str(exc) else \
                f"{ini_label(config, 'agentfloor_case_paths')}: {exc} (expected a list of directories)"
            config.stash[_paths_error_key] = pytest.UsageError(said)
            configured = []
        config.stash[_paths_key] = configured or [Path(config.rootpath, "cases").resolve()]
    return config.stash[_paths_key]


def case_paths_error(config: pytest.Config) -> pytest.UsageError | None:
    """The usage error of a bad ``agentfloor_case_paths`` (None: it is fine or unset)."""
    case_paths(config)
    return config.stash.get(_paths_error_key, None)


def _arg_paths(config: pytest.Config) -> list[Path]:
    base = Path(config.invocation_params.dir)
    return [(base / str(arg).split("::")[0]).resolve() for arg in config.args]


def explicit_case_files(config: pytest.Config) -> set[Path]:
    """Case files named on the command line: naming one makes it a case wherever it is."""
    if _explicit_key not in config.stash:
        config.stash[_explicit_key] = {p for p in _arg_paths(config) if p.suffix == ".toml" and p.is_file()
                                       and shaped_as_case(p)}
    return config.stash[_explicit_key]


def is_case_file(config: pytest.Config, path: Path) -> bool:
    if path.suffix != ".toml":
        return False
    path = path.resolve()
    if path in explicit_case_files(config):
        return True
    if not any(path.is_relative_to(root) for root in case_paths(config)):
        return False
    shaped, declared = case_shape(path)  # one read of the file's head
    if shaped:
        return True
    # collected only in a benchmark run: a ladder case may omit its kind line, so a file beside ladder
    # cases that declares no kind (an empty or half-written case, binary garbage) is taken for one
    # and reported, not skipped; call-site and pressure tables always declare theirs
    return declared is None and _beside_ladder_cases(config, path.parent)


def _beside_ladder_cases(config: pytest.Config, directory: Path) -> bool:
    seen = config.stash.setdefault(_beside_key, {})
    if directory not in seen:
        files = (p for p in directory.glob("*.toml") if p.is_file())
        seen[directory] = any(shaped and kind in (None, "episode") for shaped, kind in map(case_shape, files))
    return seen[directory]


def holds_case(directory: Path) -> bool:
    """Whether any TOML file under `directory` is a case file (stops at the first)."""
    try:
        return any(shaped_as_case(p) for p in directory.rglob("*.toml") if p.is_file())
    except OSError:
        return False


def targets_cases(config: pytest.Config) -> bool:
    """Whether the arguments reach a case file: a case file itself, or a directory that holds one
    under a case path (a case path inside it, or it inside a case path)."""
    if _targets_key not in config.stash:
        config.stash[_targets_key] = _targets_cases(config)
    return config.stash[_targets_key]


def _targets_cases(config: pytest.Config) -> bool:
    roots = [r for r in case_paths(config) if r.is_dir()]
    for p in _arg_paths(config):
        if p in explicit_case_files(config):
            return True
        if not p.is_dir():
            continue
        for r in roots:
            if r.is_relative_to(p) and holds_case(r):
                return True
            if p.is_relative_to(r) and holds_case(p):
                return True
    return False


def model_option_given(config: pytest.Config) -> bool:
    """--model / --agentfloor-model on the command line (an ini default alone does not count)."""
    return config.getoption("agentfloor_models", None) is not None


def is_benchmark_run(config: pytest.Config) -> bool:
    return model_option_given(config) or targets_cases(config)
