"""The round trip's comparison (``roundtrip.compare``) on outputs with NaN, infinities and
bfloat16, against numpy's own comparison of the same values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import export

from .roundtrip import compare


def _f(x: jax.Array) -> jax.Array:
    return jnp.log(x) / x


def test_nan_and_inf_in_the_same_places_are_equal_with_diff_zero() -> None:
    # Before: bfloat16's numpy kind is 'V', so NaN != NaN made the deserialized module
    # 'differ' from jit(f) (a false finding); float32's inf - inf = NaN made max_abs_diff None.
    for dtype in (np.float32, ml_dtypes.bfloat16):
        x = np.array([[0.0, -1.0, 2.0, 3.0]] * 3, np.float32).astype(dtype)
        exp = export.export(jax.jit(_f))(*export.symbolic_args_specs((x,), ["(b, 4)"]))
        got = export.deserialize(exp.serialize()).call(x)  # type: ignore[no-untyped-call]
        want = jax.jit(_f)(x)
        g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
        # the truth: the same values, with NaN (log(-1)) and -inf (log(0) / 0) in the same places
        assert np.array_equal(g, w, equal_nan=True) and not np.isfinite(g).all()
        assert compare([got], [want]) == (True, True, 0.0)


def test_a_real_difference_is_measured_past_the_nans() -> None:
    a = np.array([np.nan, np.inf, 1.0, 2.0], np.float32)
    b = np.array([np.nan, np.inf, 1.0, 2.5], np.float32)
    assert compare([a], [b]) == (False, False, 0.5)
    half = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    assert compare([half[0]], [half[1]]) == (False, False, 0.5)
    # an infinite gap has no finite maximum
    c = np.array([np.nan, 1.0, 1.0, 2.0], np.float32)
    assert compare([a], [c]) == (False, False, None)
    assert compare([np.arange(3)], [np.arange(3)]) == (True, True, 0.0)
