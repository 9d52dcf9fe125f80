"""The Compiled station: optimized HLO text, XLA's cost estimate and memory statistics.

Sources (``jax.stages.Compiled``, public):

* ``compiled_text`` is ``Compiled.as_text()`` (the optimized, scheduled HLO module).
* ``cost`` is ``Compiled.cost_analysis()``: a dict of floats from XLA's HLO cost analysis
  (``flops``, ``transcendentals``, ``bytes accessed``, per-operand ``bytes accessed0{}``,
  ``utilization0{}``...). Some jaxlib versions return a list with one dict per device program:
  we keep the first. ``None`` when the backend reports none.
* ``memory`` holds the integer fields of ``Compiled.memory_analysis()``
  (``jaxlib._jax.CompiledMemoryStats``), all in bytes: ``argument_size_in_bytes``,
  ``output_size_in_bytes``, ``alias_size_in_bytes``, ``temp_size_in_bytes``,
  ``generated_code_size_in_bytes``, ``peak_memory_in_bytes`` and their ``host_*`` twins.
  ``None`` when the backend has no memory analysis.
"""

from __future__ import annotations

import math
from typing import Any

from exhibits.stations.events import ExecutableCompiled

MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "peak_memory_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
    "host_generated_code_size_in_bytes",
)

CAVEAT_ESTIMATE = (
    "cost_analysis is XLA's static estimate from the HLO cost model, not a measurement: it does "
    "not see runtime effects (caches, overlap, dispatch)."
)
CAVEAT_FLOPS = (
    "flops counts the floating-point operations of the optimized HLO by XLA's cost model (a dot "
    "of [m,k]x[k,n] counts 2*m*k*n, a sum of n elements n-1 adds); transcendentals (tanh, exp, "
    "...) are counted separately, not as flops. Lowered.cost_analysis() (before optimization) "
    "may give other numbers."
)
CAVEAT_BYTES = (
    "'bytes accessed' sums operand and result sizes of each HLO op; it is not DRAM traffic."
)
CAVEAT_MISSING_COST = "this backend reports no cost_analysis."
CAVEAT_NEGATIVE = "a value of -1 means the backend does not report that figure: {keys}."
CAVEAT_MISSING_MEMORY = "this backend reports no memory_analysis."


def normalize_cost(raw: Any) -> dict[str, float] | None:
    """``Compiled.cost_analysis()`` as one ``{name: float}`` dict (first entry of a list)."""
    if raw is None:
        return None
    if isinstance(raw, (list, tuple)):
        if not raw:
            return None
        raw = raw[0]
    out: dict[str, float] = {}
    for key, value in dict(raw).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            out[str(key)] = number
    return out


def memory_fields(stats: Any) -> dict[str, int] | None:
    """The byte counts of a ``CompiledMemoryStats`` (fields this jaxlib lacks are left out)."""
    if stats is None:
        return None
    return {name: int(getattr(stats, name)) for name in MEMORY_FIELDS if hasattr(stats, name)}


def executable_compiled(compiled: Any) -> ExecutableCompiled:
    """The :class:`ExecutableCompiled` event of a ``jax.stages.Compiled``."""
    try:
        cost = normalize_cost(compiled.cost_analysis())
    except Exception:  # some backends raise (NotImplemented/Unimplemented) instead of None
        cost = None
    try:
        memory = memory_fields(compiled.memory_analysis())
    except Exception:
        memory = None
    caveats: list[str] = []
    if cost is None:
        caveats.append(CAVEAT_MISSING_COST)
    else:
        caveats += [CAVEAT_ESTIMATE, CAVEAT_FLOPS, CAVEAT_BYTES]
        negative = sorted(k for k, v in cost.items() if v < 0)
        if negative:
            caveats.append(CAVEAT_NEGATIVE.format(keys=", ".join(negative)))
    if memory is None:
        caveats.append(CAVEAT_MISSING_MEMORY)
    return ExecutableCompiled(
        compiled_text=compiled.as_text(), cost=cost, memory=memory, caveats=caveats
    )
