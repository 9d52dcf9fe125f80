"""The export exhibit's ``--print`` artefacts (``jaxscope run export FILE --print stablehlo``):

- ``stablehlo``: ``Exported.mlir_module()``, the exported StableHLO module text, as JAX prints it.
- ``exported``: a JSON object of the ``Exported``'s fields: ``fun_name``, ``in_avals`` and
  ``out_avals`` (``["f32[b,8]", ...]``, JAX's ``str_short``), ``platforms``,
  ``calling_convention_version``, ``nr_devices``, ``module_kept_var_idx``,
  ``uses_global_constants``, ``disabled_safety_checks``, ``ordered_effects``,
  ``unordered_effects``, ``in_shardings_hlo``, ``out_shardings_hlo``, ``serialized_bytes``, and
  for a shape-polymorphic export ``dim_vars`` (``{"b": "args[1].shape[0]"}``) and
  ``constraints`` (``["args[1].shape[0] >= 1"]``).
- ``roundtrip``: a JSON object ``{"serialized_bytes", "same_fields", "callable_here", "equal",
  "max_abs_diff", "calls": [{"label", "dim_values", "equal", "identical", "max_abs_diff",
  "error", "constraint_check"}]}``: ``equal`` true when every call's outputs equal
  ``jax.jit(f)``'s, ``max_abs_diff`` the largest over the calls; the ``constraint_check`` call
  (every dimension variable 0) is left out of both: JAX's shape check refuses it (``error``).

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

from jaxscope.exhibit_api import EventBase

from .events import DimsSolved, ExportRoundTripped, FunctionExported, StablehloExported

T = TypeVar("T")


def _one(events: Sequence[EventBase], cls: type[T]) -> T | None:
    found = [e for e in events if isinstance(e, cls)]
    return found[-1] if found else None


def _stablehlo(events: Sequence[EventBase]) -> str | None:
    e = _one(events, StablehloExported)
    return None if e is None else e.text


def _exported(events: Sequence[EventBase]) -> str | None:
    e = _one(events, FunctionExported)
    if e is None:
        return None
    fields: dict[str, object] = {
        "fun_name": e.fun_name,
        "in_avals": [a.aval.short for a in e.in_avals],
        "out_avals": [a.aval.short for a in e.out_avals],
        "platforms": e.platforms,
        "calling_convention_version": e.calling_convention_version,
        "nr_devices": e.nr_devices,
        "module_kept_var_idx": e.module_kept_var_idx,
        "uses_global_constants": e.uses_global_constants,
        "disabled_safety_checks": e.disabled_safety_checks,
        "ordered_effects": e.ordered_effects,
        "unordered_effects": e.unordered_effects,
        "in_shardings_hlo": e.in_shardings_hlo,
        "out_shardings_hlo": e.out_shardings_hlo,
        "serialized_bytes": e.serialized_bytes,
    }
    dims = _one(events, DimsSolved)
    if dims is not None:
        fields["dim_vars"] = {v.name: v.solved_as for v in dims.variables}
        fields["constraints"] = [c.text for c in dims.constraints]
    return json.dumps(fields)


def _roundtrip(events: Sequence[EventBase]) -> str | None:
    e = _one(events, ExportRoundTripped)
    if e is None:
        return None
    compared = [c for c in e.calls if not c.constraint_check]
    diffs = [c.max_abs_diff for c in compared if c.max_abs_diff is not None]
    return json.dumps(
        {
            "serialized_bytes": e.serialized_bytes,
            "same_fields": e.same_fields,
            "callable_here": e.callable_here,
            "equal": bool(compared) and all(c.equal for c in compared),
            "max_abs_diff": max(diffs) if diffs else None,
            "calls": [
                {
                    "label": c.label,
                    "dim_values": c.dim_values,
                    "equal": c.equal,
                    "identical": c.identical,
                    "max_abs_diff": c.max_abs_diff,
                    "error": c.error,
                    "constraint_check": c.constraint_check,
                }
                for c in e.calls
            ],
        }
    )


ARTEFACTS = {"stablehlo": _stablehlo, "exported": _exported, "roundtrip": _roundtrip}
