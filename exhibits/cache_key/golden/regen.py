"""Regenerate ``exhibits/cache_key/golden/<example>.json`` from plain JAX (never from the probe).

For each example (``examples/*.py``), compile ``jax.jit(f, static_argnums, static_argnames)`` with
the persistent cache on (public API: ``jax_compilation_cache_dir`` set to the relative path
``jaxscope-persistent-cache`` inside a fresh temporary directory, as the probe does, and
``jax_persistent_cache_min_compile_time_secs=0``) and record the name of the file JAX writes
(``<key>-cache``), with the environment the key depends on (jaxlib version, backend, device
count, ``XLA_FLAGS``). The key depends on the machine as well (another CPU gave another key
with all four equal), so the tests compute it with :func:`written_key` in a fresh process
instead of reading these files; the files show what a key looks like.
Run: ``.venv/bin/python exhibits/cache_key/golden/regen.py``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import jax
from jax.experimental.compilation_cache import compilation_cache as public_cc

HERE = Path(__file__).resolve().parent
EXAMPLES = sorted((HERE.parent / "examples").glob("*.py"))
CACHE_DIR = "jaxscope-persistent-cache"
CONFIG: Any = jax.config
CLEAR_CACHES: Any = jax.clear_caches


def environment() -> dict[str, Any]:
    """What besides the program the key depends on."""
    return {
        "jaxlib": importlib.metadata.version("jaxlib"),
        "backend": jax.default_backend(),
        "device_count": jax.device_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def written_key(path: Path) -> str:
    """The key JAX writes for the example's jit, as a file name in a fresh cache directory."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    f = namespace["f"]
    args = tuple(namespace["args"])
    previous = os.getcwd()
    os.chdir(tempfile.mkdtemp())
    CLEAR_CACHES()
    public_cc.reset_cache()
    CONFIG.update("jax_compilation_cache_dir", CACHE_DIR)
    CONFIG.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        jitted = jax.jit(
            f,
            static_argnums=namespace.get("static_argnums", ()),
            static_argnames=namespace.get("static_argnames", ()),
        )
        jitted.lower(*args, **namespace.get("kwargs", {})).compile()
        files = sorted(Path(CACHE_DIR).glob(f"jit_{f.__name__}-*-cache"))
    finally:
        CONFIG.update("jax_compilation_cache_dir", None)
        CONFIG.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        public_cc.reset_cache()
        os.chdir(previous)
    assert len(files) == 1, files
    return files[0].name.removesuffix("-cache")


def main() -> None:
    for path in EXAMPLES:
        record = {"environment": environment(), "key": written_key(path)}
        out = HERE / f"{path.stem}.json"
        out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {out.relative_to(HERE.parent.parent.parent)}")


if __name__ == "__main__":
    main()
