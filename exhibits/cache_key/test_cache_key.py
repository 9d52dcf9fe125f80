"""The cache_key exhibit against JAX itself.

Independent truths: the file JAX's persistent cache writes for a plain ``jax.jit(f)`` compile
(public API: ``jax_compilation_cache_dir`` and a directory listing), JAX's own per-ingredient
DEBUG log lines (``get_cache_key hash of serialized <name>`` / ``hash after serializing``), and,
for the flag filter, whether adding a flag to ``XLA_FLAGS`` changes the key JAX writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.protocol import EVENT_ADAPTER, RunOptions
from jaxscope.sandbox.snippet import load_snippet

from exhibits.cache_key import probe
from exhibits.cache_key.events import CacheKeyComputed, XlaFlagsFiltered
from exhibits.conftest import EXHIBITS, FakeContext, run_probe
from testkit import run_cli

# jax.config.update and jax.clear_caches are untyped: read them as Any (mypy strict)
CONFIG: Any = jax.config
CLEAR_CACHES: Any = jax.clear_caches
EXAMPLES = Path(__file__).resolve().parent / "examples"
REPO = Path(__file__).resolve().parents[2]
MATMUL = (EXAMPLES / "matmul.py").read_text()
ORDER = [
    "computation",
    "jax_lib version",
    "backend version",
    "XLA flags",
    "compile_options",
    "accelerator_config",
    "compression",
    "custom_hook",
]


def keys(ctx: FakeContext) -> list[CacheKeyComputed]:
    return ctx.of_type(CacheKeyComputed)


@contextlib.contextmanager
def plain_cache() -> Iterator[Path]:
    """The persistent cache on, public API only, in ``./jaxscope-persistent-cache`` of a fresh
    temp dir (the same relative path the probe gives JAX, so compile options agree)."""
    from jax.experimental.compilation_cache import compilation_cache as public_cc

    previous = os.getcwd()
    work = tempfile.mkdtemp()
    os.chdir(work)
    saved = {
        n: getattr(jax.config, n)
        for n in ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    }
    public_cc.reset_cache()
    CONFIG.update("jax_compilation_cache_dir", probe.CACHE_DIR)
    CONFIG.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        yield Path(probe.CACHE_DIR)
    finally:
        for n, v in saved.items():
            CONFIG.update(n, v)
        public_cc.reset_cache()
        os.chdir(previous)


def written_key(source: str, xla_flags: str | None = None) -> str:
    """The key of ``jax.jit(f)`` as the file name JAX writes (plain JAX, public API)."""
    snippet = load_snippet(source)
    CLEAR_CACHES()
    saved = os.environ.get("XLA_FLAGS")
    with plain_cache() as directory:
        if xla_flags is not None:
            os.environ["XLA_FLAGS"] = xla_flags
        try:
            jitted = jax.jit(
                snippet.f,
                static_argnums=snippet.static_argnums,
                static_argnames=snippet.static_argnames,
            )
            jitted.lower(*snippet.args, **snippet.kwargs).compile()
        finally:
            if saved is None:
                os.environ.pop("XLA_FLAGS", None)
            else:
                os.environ["XLA_FLAGS"] = saved
        name = getattr(snippet.f, "__name__", "f")
        files = [p.name for p in directory.glob(f"jit_{name}-*-cache")]
    assert len(files) == 1, files
    return files[0].removesuffix("-cache")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_recomputed_key_equals_the_file_jax_writes(example: str) -> None:
    source = (EXAMPLES / example).read_text()
    (base,) = keys(run_probe("cache_key", source))
    assert base.equal
    assert base.key == base.jax_key == base.returned_key
    assert base.cache_file == base.key + "-cache"
    assert base.persistent == "miss"  # a fresh cache directory each run
    assert [i.name for i in base.ingredients] == ORDER
    assert re.fullmatch(r"jit_\w+-[0-9a-f]{64}", base.key)
    assert base.key.endswith(base.ingredients[-1].running)
    # byte for byte the name of the file plain JAX writes for the same program
    assert base.key == written_key(source)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_digests_equal_jax_own_debug_lines() -> None:
    logger = logging.getLogger("jax._src.cache_key")
    handler = _Lines()
    saved = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        (base,) = keys(run_probe("cache_key", MATMUL))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)
    single = dict(
        re.findall(
            r"^get_cache_key hash of serialized (.+): ([0-9a-f]{64})$",
            "\n".join(handler.lines),
            re.M,
        )
    )
    running = dict(
        re.findall(
            r"^get_cache_key hash after serializing (.+): ([0-9a-f]{64})$",
            "\n".join(handler.lines),
            re.M,
        )
    )
    # the last compile logged is ours (the log keeps the latest value per name)
    assert {i.name: i.digest for i in base.ingredients} == single
    assert {i.name: i.running for i in base.ingredients} == running


EXPECTED_CHANGES = {
    "body": ["computation"],
    "shapes": ["computation"],
    "donate_argnums": ["computation"],
    "compiler_options": ["compile_options"],
    "xla_flag": ["XLA flags"],
    "custom_hook": ["custom_hook"],
    "name": ["computation"],
    "line": [],
}


@pytest.mark.parametrize("perturb", list(EXPECTED_CHANGES))
def test_each_perturbation_changes_exactly_its_digests(perturb: str) -> None:
    base, other = keys(run_probe("cache_key", MATMUL, RunOptions(perturb=perturb)))
    assert base.perturbation is None and other.perturbation == perturb
    assert base.equal and other.equal
    changed = [
        b.name
        for b, o in zip(base.ingredients, other.ingredients, strict=True)
        if b.digest != o.digest
    ]
    assert changed == other.changed == EXPECTED_CHANGES[perturb]
    if changed:
        assert other.key != base.key and other.persistent == "miss"
    else:
        # same key: JAX found the base entry on disk
        assert other.key == base.key and other.persistent == "hit"
    if perturb == "name":
        assert other.key.startswith("jit_f_renamed-")


def test_line_changes_the_key_only_with_metadata_in_the_key() -> None:
    """The moved function really has other line numbers: hashing the module with its debug
    info (jax_compilation_cache_include_metadata_in_key) tells the two apart."""
    CONFIG.update("jax_compilation_cache_include_metadata_in_key", True)
    try:
        base, other = keys(run_probe("cache_key", MATMUL, RunOptions(perturb="line")))
    finally:
        CONFIG.update("jax_compilation_cache_include_metadata_in_key", False)
    assert other.changed == ["computation"]
    assert base.equal and other.equal


def test_same_answer_twice() -> None:
    first = keys(run_probe("cache_key", MATMUL, RunOptions(perturb="body")))
    second = keys(run_probe("cache_key", MATMUL, RunOptions(perturb="body")))
    assert [k.model_dump() for k in first] == [k.model_dump() for k in second]


def test_flag_filter_equals_jax() -> None:
    flags = "--xla_dump_to=/tmp/nowhere --xla_cpu_enable_fast_math=true --xla_dump_hlo_as_text"
    ctx = run_probe("cache_key", MATMUL, RunOptions(xla_flags=flags))
    filtered = ctx.one(XlaFlagsFiltered)
    assert [v.flag for v in filtered.flags] == sorted(flags.split())
    base_key = written_key(MATMUL, xla_flags="")
    for v in filtered.flags:
        # truth: does adding this flag to XLA_FLAGS change the key JAX writes?
        assert (written_key(MATMUL, xla_flags=v.flag) != base_key) == v.kept, v.flag
        assert v.reason.startswith("kept" if v.kept else "dropped")
    assert "--xla_dump_to" in filtered.excluded


def test_unknown_perturbation_fails() -> None:
    """An invalid_snippet error naming the valid perturbations, not blamed on JAX or on f."""
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import InvalidSnippet

    with pytest.raises(InvalidSnippet, match="unknown perturbation 'nope'; valid: ") as info:
        run_probe("cache_key", MATMUL, RunOptions(perturb="nope"))
    failed = classify(info.value, "trace", load_snippet(MATMUL).f)
    assert failed.kind == "invalid_snippet" and failed.source is None
    for name in probe.PERTURBATIONS:
        assert name in failed.message


def test_cli_key_and_digests_as_jax_writes_them() -> None:
    path = str(EXAMPLES / "matmul.py")
    printed = run_cli("run", "cache_key", path, "--print", "key", cwd=REPO)
    assert printed.returncode == 0, printed.stderr
    streamed = run_cli("run", "cache_key", path, "--json", cwd=REPO)
    assert streamed.returncode == 0, streamed.stderr
    events = [EVENT_ADAPTER.validate_json(line) for line in streamed.stdout.splitlines()]
    (base,) = [e for e in events if isinstance(e, CacheKeyComputed)]
    assert base.equal and base.cache_file == base.jax_key + "-cache"
    # the same worker set-up gives the same key, and --print key is JAX's key exactly
    assert printed.stdout == base.jax_key + "\n"
    digests = run_cli("run", "cache_key", path, "--print", "digests", cwd=REPO)
    assert json.loads(digests.stdout) == {i.name: i.digest for i in base.ingredients}


# The key plain JAX writes for an example, in a fresh process with this one's environment (the
# golden files' recipe, exhibits/cache_key/golden/regen.py). The key also depends on the machine
# (the same jaxlib, backend, device count and XLA_FLAGS gave another key on another CPU), so the
# truth is computed here rather than read from the recorded goldens.
_PLAIN_KEY = (
    "import sys\nfrom pathlib import Path\nfrom exhibits.cache_key.golden import regen\n"
    "print(regen.written_key(Path(sys.argv[1])))\n"
)


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_keys_equal_what_plain_jax_writes_in_a_fresh_process(example: str) -> None:
    path = EXAMPLES / f"{example}.py"
    plain = subprocess.run(
        [sys.executable, "-c", _PLAIN_KEY, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=EXHIBITS.parent,
        check=False,
    )
    assert plain.returncode == 0, plain.stderr
    (base,) = keys(run_probe("cache_key", path.read_text()))
    assert base.key == plain.stdout.strip().splitlines()[-1]


def _xla_starts_with(flags: str) -> tuple[bool, str]:
    """Truth: does XLA's CPU backend start with ``XLA_FLAGS=flags`` (a fresh process)?"""
    done = subprocess.run(
        [sys.executable, "-c", "import jax; jax.devices()"],
        env={**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode == 0, done.stderr


def test_junk_flags_are_not_called_program_changing() -> None:
    """JAX hashes every token it does not exclude by name; the reason says when a token is no
    XLA flag, and XLA itself refuses to start with each of those."""
    junk = ["garbage", "--bogus_flag=1", "-x"]
    real = "--xla_cpu_enable_fast_math=true"
    ctx = run_probe("cache_key", MATMUL, RunOptions(xla_flags=" ".join([*junk, real])))
    verdicts = {v.flag: v for v in ctx.one(XlaFlagsFiltered).flags}
    assert sorted(verdicts) == sorted([*junk, real])
    for flag in junk:
        v = verdicts[flag]
        assert v.kept  # JAX's filter keeps it: that is what JAX does
        assert "can change the compiled program" not in v.reason
        assert "XLA will reject it at startup" in v.reason
        started, stderr = _xla_starts_with(flag)
        assert not started and "XLA_FLAGS" in stderr, flag
    assert "--bogus_flag is unknown to jaxscope" in verdicts["--bogus_flag=1"].reason
    assert "not a flag" in verdicts["garbage"].reason
    assert verdicts[real].reason.startswith("kept: it can change the compiled program")
    assert _xla_starts_with(real)[0]
