"""Which values of a 64-bit argument JAX's 32-bit copy changes, and which of those it corrupts
rather than rounds (``docs/design/0024-findings.md``, "Silent dtype changes").

With ``jax_enable_x64`` off JAX canonicalizes a numpy ``float64``/``int64``/``uint64``/
``complex128`` argument to 32 bits, as its docs say. Rounding a float to the nearest float32 is
that documented behaviour: the value keeps float32's precision (its error is at most float32's
unit roundoff, 2**-24 of the value), and the exhibit says it as a note. A value the copy does not
merely round is corrupted, and that is a finding:

* ``overflow``: a finite float beyond float32's range, held as inf;
* ``underflow``: a nonzero float below float32's smallest normal number, held as 0 or as a
  subnormal that lost digits (its error exceeds 2**-24 of the value);
* ``whole_number``: in a float array whose finite values are all whole numbers (counts, ids,
  indices: float64 holds each such number up to 2**53 exactly), one that float32 holds as
  another whole number (float32 holds every whole number only up to 2**24);
* ``wrapped``: an integer outside the 32-bit type's range, wrapped around (jax-ml/jax#18385:
  numpy's unchecked cast; a Python int that large raises ``OverflowError`` instead).

A complex value counts by its modulus (rounding each part keeps the error within 2**-24 of it).
Pure numpy: the caller reads what JAX
holds (``jax.device_put``) and passes both arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Corruption = Literal["overflow", "underflow", "whole_number", "wrapped"]


@dataclass(frozen=True)
class Demotion:
    """What the 32-bit copy did to an argument: ``changed`` the elements whose value differs
    (a boolean array of the argument's shape; a NaN kept as a NaN is unchanged), ``corrupted``
    those of them it did not merely round, and ``first_corruption`` how the first of those (in
    C order) was corrupted (``None`` when none was)."""

    changed: np.ndarray[Any, np.dtype[np.bool_]]
    corrupted: np.ndarray[Any, np.dtype[np.bool_]]
    first_corruption: Corruption | None


def demotion(before: np.ndarray[Any, Any], held: np.ndarray[Any, Any]) -> Demotion:
    """Compare ``before`` (the argument, a 64-bit numpy array) with ``held`` (what JAX holds:
    the same shape in the 32-bit dtype)."""
    back = held.astype(before.dtype)
    same = back == before
    if before.dtype.kind in "fc":  # a NaN is kept as a NaN
        same |= np.isnan(back) & np.isnan(before)
    changed = ~np.asarray(same)
    if before.dtype.kind in "iu":
        return Demotion(changed, changed, "wrapped" if changed.any() else None)
    finfo = np.finfo(held.dtype)  # float32's, for complex64 too
    roundoff = float(finfo.eps) / 2  # float32's unit roundoff: 2**-24
    finite = np.isfinite(before)
    with np.errstate(invalid="ignore", over="ignore"):
        overflow = finite & ~np.isfinite(back)
        beyond = finite & (np.abs(back - before) > roundoff * np.abs(before))
    underflow = beyond & ~overflow & (np.abs(before) < float(finfo.tiny))
    reason = np.where(overflow, "overflow", np.where(underflow, "underflow", ""))
    if before.dtype.kind == "f":
        values = before[finite]
        whole = bool(np.all(values == np.trunc(values))) and bool(np.all(np.abs(values) <= 2.0**53))
        if whole:
            reason = np.where(changed & (reason == ""), "whole_number", reason)
    corrupted = np.asarray(reason != "")
    flat = reason.reshape(-1)[corrupted.reshape(-1)]
    first: Corruption | None = str(flat[0]) if len(flat) else None  # type: ignore[assignment]
    return Demotion(changed, corrupted, first)
