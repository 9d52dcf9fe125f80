"""A reused PRNG key is a finding (issue 15, "PRNG key reuse"): ``jaxscope run prng`` exits 3 and
names the reusing line and the first use on stderr. Cases: the exhibit's examples, written from
the JAX docs' "never reuse keys" sharp bit (typed keys, found by ``jax.debug_key_reuse``) and a
loop over raw ``uint32`` keys (found by jaxscope's own check). The truth: plain JAX, in this
process, gives equal random bits for the two uses of the key (the reuse is real), and the lines
are found in the examples' text.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import jax
import numpy as np

from exhibits.conftest import jaxscope_run

EXAMPLES = Path(__file__).resolve().parent / "examples"


def line_of(name: str, piece: str) -> int:
    text = (EXAMPLES / name).read_text().splitlines()
    return next(i for i, t in enumerate(text, 1) if piece in t and t.startswith("    "))


def run(name: str) -> subprocess.CompletedProcess[str]:
    return jaxscope_run("prng", EXAMPLES / name, "--print", "reuse")


def test_a_typed_key_used_twice_is_a_finding() -> None:
    key = jax.random.key(0)
    # the two uses consume one key: the same bits underneath (the sharp bit is real)
    bits = jax.random.bits(key, (4,))
    assert np.array_equal(np.asarray(bits), np.asarray(jax.random.bits(key, (4,))))
    proc = run("reuse_bug.py")
    second = line_of("reuse_bug.py", "jax.random.bernoulli(key")
    first = line_of("reuse_bug.py", "jax.random.normal(key")
    assert proc.returncode == 3, proc.stderr
    assert f"(KeyReuse) at line {second}" in proc.stderr
    assert f"first consumed at line {first}" in proc.stderr and "jax.debug_key_reuse" in proc.stderr


def test_a_raw_key_used_twice_is_a_finding_of_jaxscopes_own_check() -> None:
    proc = run("prngkey_loop.py")
    second = line_of("prngkey_loop.py", "jax.random.split(key)")
    first = line_of("prngkey_loop.py", "jax.random.normal(key")
    assert proc.returncode == 3, proc.stderr
    assert f"(KeyReuse) at line {second}" in proc.stderr
    assert f"first consumed at line {first}" in proc.stderr
    assert "cannot see them" in proc.stderr


def test_split_keys_are_no_finding() -> None:
    proc = run("split_then_draw.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
