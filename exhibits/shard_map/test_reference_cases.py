"""A shard_map program that JAX runs without complaint but that computes something else than its
reference is a finding, never a pass (issue 15, "Wrong results are findings"): the ``cases/RF*``
snippets, each from a public report cited in its docstring, run through the real sandbox with
``jaxscope run shard_map FILE --print verdict``.

The truth is computed here with plain JAX and numpy: the per-device blocks the body sees are cut
out of the global array with numpy, the body's result on each block is computed with numpy, and
the reference with numpy on the whole array. A broken case must exit 3, with ``ok`` false and the
first differing element and both values as numpy has them; its fix must exit 0 with ``ok`` true.
"""

from __future__ import annotations

import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from exhibits.conftest import CASES, jaxscope_run


def verdict(name: str) -> tuple[int, dict[str, Any], str]:
    proc = jaxscope_run("shard_map", CASES / f"{name}.py", "--print", "verdict")
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def first_past(got: np.ndarray, want: np.ndarray) -> tuple[list[int], float, float]:
    """The first element past float32 tolerance (1e-4 * max(1, |want|)), by numpy."""
    bad = np.abs(got - want) > 1e-4 * np.maximum(1.0, np.abs(want))
    if got.ndim == 0:
        assert bool(bad)
        return [], float(got), float(want)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return list(index), float(got[index]), float(want[index])


def test_a_blockwise_mean_differs_from_the_global_one() -> None:
    x = np.arange(24.0, dtype=np.float32).reshape(8, 3)
    blocks = np.split(x, 4)  # what each of the 4 devices sees under P("x", None)
    got = np.concatenate([b - b.mean() for b in blocks])
    want = x - x.mean()  # f on the global array: the exhibit's reference when none is given
    code, v, stderr = verdict("RF01_local_mean_broken")
    assert code == 3 and v["ok"] is False and v["reference"] == "f"
    index, g, w = first_past(got, want)
    (d,) = v["differs"]
    assert d["index"] == index and d["got"] == pytest.approx(g) and d["want"] == pytest.approx(w)
    assert d["max_abs_diff"] == pytest.approx(float(np.max(np.abs(got - want))))
    assert "ReferenceMismatch" in stderr and "needs a collective" in stderr


def test_the_fixed_mean_agrees_with_its_reference() -> None:
    code, v, _ = verdict("RF01_local_mean_fixed")
    assert code == 0 and v["ok"] is True and v["reference"] == "reference" and v["differs"] == []


def test_an_unchecked_partial_sum_is_one_devices_value() -> None:
    x = np.arange(16.0, dtype=np.float32)
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    # plain JAX's own result: with check_vma=False, P() takes one device's partial sum
    spec, whole = P("x"), P()  # type: ignore[no-untyped-call]
    plain = jax.jit(
        jax.shard_map(jnp.sum, mesh=mesh, in_specs=(spec,), out_specs=whole, check_vma=False)
    )(x)
    assert float(plain) == float(np.split(x, 4)[0].sum())
    code, v, stderr = verdict("RF02_unchecked_sum_broken")
    assert code == 3 and v["ok"] is False and v["reference"] == "reference"
    (d,) = v["differs"]
    assert d["index"] == [] and d["got"] == float(plain) and d["want"] == float(x.sum())
    assert "differ from the snippet's reference(*args)" in stderr


def test_the_psum_fix_agrees_with_its_reference() -> None:
    code, v, _ = verdict("RF02_unchecked_sum_fixed")
    assert code == 0 and v["ok"] is True and v["differs"] == []
