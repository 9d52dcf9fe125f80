"""The one module of jaxscope that exhibit code imports: the exhibits' face of the core.

Every exhibit module that runs in the sandbox worker (``exhibits/<id>/probe.py``, ``events.py``,
``options.py``, ``explain.py``, ``artefacts.py`` and their helper modules; not tests, golden
scripts or examples) imports jaxscope only from here (``backend/tests/test_import_rules.py``
checks it), and the core learns about exhibits only through ``exhibits/registry.py``: an exhibit
is a plugin with one face each way (design 0054). What it re-exports, each from the module
that defines it:

* the probe API: :class:`ProbeContext` and the helpers that blame a setting's line or explain
  an error (``jaxscope.sandbox.probe_api``), the loaded :class:`Snippet` (``snippet_model``),
  :class:`InvalidSnippet` and ``load_snippet`` (``sandbox.snippet``), and the description of a
  caught exception (``describe_failure``, ``sandbox.errors``);
* the events' base and the shared views (``jaxscope.protocol``: :class:`EventBase`, jaxprs,
  avals, source locations, value previews, rules, the lifecycle events a probe emits), and
  :class:`WireModel` (``jaxscope.wire``, the base of an ``options.py`` model);
* the error explainers' building blocks (``jaxscope.explainers``) and the cut texts of the
  user's exceptions (``jaxscope.user_text``);
* the gradients' shared helpers (``grad_argnums``, ``grad_output``, ``finite_diff``, whose module
  is re-exported whole too), and the torch track's ``torch_internals`` (whole: the torch twin of
  ``jaxscope.internals.api``) and ``move_state``;
* every name of ``jaxscope.internals.api``, the one door into JAX's private machinery (a test
  holds this module to that facade's names).

Nothing is imported with this module: a name is imported from its home on first use (PEP 562),
so an ``options.py`` that ``jaxscope.protocol`` imports while it is defined can import
``WireModel`` from here, an ``events.py`` that the server imports does not import JAX, and a
worker imports only what its probe uses. A name a probe needs that is not here is added in
three places: its group of imports under ``TYPE_CHECKING``, ``_HOMES`` (not for internals.api's
names, which are found there) and ``__all__``; ``backend/tests/test_exhibit_api.py`` checks
that they agree and that each name is the object of its home.
"""

# The internals facade's names come in by ``import *`` (for mypy; at run time by __getattr__):
# ruff cannot see them in __all__.
# ruff: noqa: F405

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxscope import finite_diff, torch_internals
    from jaxscope.explainers import (
        SHAPE_HELP,
        ErrorContext,
        Explanation,
        MessageHelp,
        first_match,
        is_tracer_error,
        tracer_errors,
    )
    from jaxscope.finite_diff import (
        FLAT,
        KINK,
        NONFINITE,
        NOT_SAMPLED,
        ROUNDED,
        SMOOTH,
        FiniteDifferences,
        central_differences,
        compare,
        gradient_tolerance,
        is_float_leaf,
        narrower,
        narrowest_float,
        tolerance,
    )
    from jaxscope.grad_argnums import choose_argnums
    from jaxscope.grad_output import (
        OutputRule,
        aval_text,
        shorten_scalar_error,
    )
    from jaxscope.internals.api import *  # noqa: F403
    from jaxscope.protocol import (
        ArrayPreview,
        AvalView,
        EqnView,
        EventBase,
        EventModel,
        JaxprStaged,
        JaxprView,
        NestedNumbers,
        RuleView,
        RunFinished,
        RunOptions,
        SourceLoc,
        StageTimed,
        ValueView,
        without_previews,
    )
    from jaxscope.run_options import options_as
    from jaxscope.sandbox.errors import (
        describe_failure,
        is_memory_error,
        user_frames,
    )
    from jaxscope.sandbox.probe_api import (
        ProbeContext,
        blame_line,
        blame_typed,
        during,
        eval_option,
        explain,
        mark_during,
        setting_line,
    )
    from jaxscope.sandbox.snippet import (
        InvalidSnippet,
        load_snippet,
    )
    from jaxscope.snippet_model import (
        SNIPPET_FILENAME,
        Snippet,
        source_lines,
    )
    from jaxscope.torch_state import move_state
    from jaxscope.user_text import (
        cut_message,
        exception_class,
        exception_text,
    )
    from jaxscope.wire import WireModel

# The module each name of __all__ is imported from on first use, but for the names of the
# internals facade (every name not listed here: ``_INTERNALS_API``) and the two modules
# re-exported whole (``_MODULES``).
_INTERNALS_API = "jaxscope.internals.api"
_MODULES = frozenset({"finite_diff", "torch_internals"})
_HOMES: dict[str, tuple[str, ...]] = {
    "jaxscope.wire": ("WireModel",),
    "jaxscope.run_options": ("options_as",),
    "jaxscope.protocol": (
        "ArrayPreview",
        "AvalView",
        "EqnView",
        "EventBase",
        "EventModel",
        "JaxprStaged",
        "JaxprView",
        "NestedNumbers",
        "RuleView",
        "RunFinished",
        "RunOptions",
        "SourceLoc",
        "StageTimed",
        "ValueView",
        "without_previews",
    ),
    "jaxscope.snippet_model": (
        "SNIPPET_FILENAME",
        "Snippet",
        "source_lines",
    ),
    "jaxscope.sandbox.probe_api": (
        "ProbeContext",
        "blame_line",
        "blame_typed",
        "during",
        "eval_option",
        "explain",
        "mark_during",
        "setting_line",
    ),
    "jaxscope.sandbox.snippet": (
        "InvalidSnippet",
        "load_snippet",
    ),
    "jaxscope.sandbox.errors": (
        "describe_failure",
        "is_memory_error",
        "user_frames",
    ),
    "jaxscope.explainers": (
        "SHAPE_HELP",
        "ErrorContext",
        "Explanation",
        "MessageHelp",
        "first_match",
        "is_tracer_error",
        "tracer_errors",
    ),
    "jaxscope.user_text": (
        "cut_message",
        "exception_class",
        "exception_text",
    ),
    "jaxscope.grad_argnums": ("choose_argnums",),
    "jaxscope.grad_output": (
        "OutputRule",
        "aval_text",
        "shorten_scalar_error",
    ),
    "jaxscope.finite_diff": (
        "FLAT",
        "KINK",
        "NONFINITE",
        "NOT_SAMPLED",
        "ROUNDED",
        "SMOOTH",
        "FiniteDifferences",
        "central_differences",
        "compare",
        "gradient_tolerance",
        "is_float_leaf",
        "narrower",
        "narrowest_float",
        "tolerance",
    ),
    "jaxscope.torch_state": ("move_state",),
}
_HOME: dict[str, str] = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "CACHE_DIR",
    "CHECK_SOURCES",
    "CHECK_TITLES",
    "COUNTED_CACHES",
    "FAULT_ATTR",
    "FLAT",
    "KINK",
    "MAX_REPEATS",
    "NONFINITE",
    "NOT_IMPORTED",
    "NOT_SAMPLED",
    "ROUNDED",
    "SHAPE_HELP",
    "SMOOTH",
    "SNIPPET_FILENAME",
    "SWAPPED_OUT_STREAMS",
    "ArgTrace",
    "ArrayPreview",
    "AvalView",
    "BakedConstant",
    "BatchStepRecord",
    "BodyObserved",
    "BudgetReached",
    "CallPlan",
    "CarryObservation",
    "CheckResult",
    "CustomBwd",
    "CustomFunction",
    "Diagnosis",
    "DimConstraint",
    "EqnView",
    "ErrorContext",
    "EventBase",
    "EventModel",
    "Explanation",
    "FiniteDifferences",
    "FoundPallasCall",
    "HostRead",
    "InvalidSnippet",
    "JaxprStaged",
    "JaxprView",
    "JitCallRecord",
    "JvpJaxprRecord",
    "JvpStepRecord",
    "KeyRecord",
    "LinearJaxprRecord",
    "Linearized",
    "LinenParam",
    "LinenRecorder",
    "MessageHelp",
    "NestedNumbers",
    "NnxRecorder",
    "NnxVariable",
    "NodeFault",
    "NonfiniteEqn",
    "OutputRule",
    "PrecisionLoss",
    "ProbeContext",
    "Promotion",
    "RandomCall",
    "RecompileStepRecord",
    "RecordedCall",
    "RecordedEqn",
    "RuleView",
    "RunFinished",
    "RunOptions",
    "ShardingAnnotation",
    "Snippet",
    "SolvedDims",
    "SourceLoc",
    "StageTimed",
    "StructureChange",
    "TransposeStepRecord",
    "TransposeStepView",
    "ValueView",
    "WalkResult",
    "Watch",
    "WireModel",
    "WrappedFunStack",
    "WrappedFunStep",
    "all_checks",
    "argument_trees",
    "aval_text",
    "aval_view",
    "baked_constants",
    "batched_jaxpr",
    "blame_line",
    "blame_typed",
    "block_until_ready",
    "branch_out_avals",
    "cache_file_suffix",
    "cache_size",
    "call_name",
    "capture_batching",
    "capture_cache_keys",
    "capture_jvp",
    "carry_avals",
    "central_differences",
    "check_container",
    "choose_argnums",
    "choose_tangents",
    "clean_cache_dir",
    "clear_in_memory_caches",
    "closed_function",
    "code_line",
    "collective_eqns",
    "collective_values",
    "communicates",
    "compare",
    "compile_with_peak",
    "concrete_args",
    "concrete_shape",
    "config_flipped",
    "config_options",
    "count_eqns",
    "custom_bwd",
    "custom_bwd_return",
    "custom_hook_returning",
    "custom_rules_on_path",
    "cut_message",
    "default_known",
    "describe_failure",
    "device_to_host_reads",
    "diagnose",
    "dim_values",
    "dtype_eqn_count",
    "dtype_promotions",
    "during",
    "eqn_snippet_line",
    "error_source",
    "eval_option",
    "example_jaxpr",
    "exception_class",
    "exception_text",
    "excluded_flags",
    "executable_compiled",
    "executions",
    "explain",
    "find_custom_functions",
    "find_pallas_calls",
    "find_shard_maps",
    "finite_diff",
    "first_callers",
    "first_difference",
    "first_match",
    "fresh_caches",
    "function_source",
    "grad_seed",
    "gradient_tolerance",
    "guarded",
    "hidden_nonfinite",
    "inside",
    "is_float_leaf",
    "is_jitted",
    "is_memory_error",
    "is_nonfinite",
    "is_primitive",
    "is_tracer_error",
    "is_transfer_guard_error",
    "iter_eqns",
    "jax_primitive_ids",
    "jaxpr_view",
    "jitted_donates",
    "jitted_fun",
    "jitted_name",
    "jitted_statics",
    "jvp_program",
    "key_entries",
    "known_primitives",
    "leaf_aval",
    "linear_jaxpr_staged",
    "linearize_vjp",
    "load_snippet",
    "map_inputs",
    "mark_during",
    "module_lowered",
    "move_state",
    "multiline_jaxpr_view",
    "narrower",
    "narrowest_float",
    "note_program_size",
    "noting_caches",
    "observe_call",
    "observe_control_flow",
    "observe_jit_call",
    "observing_shard_map",
    "observing_trace_stack",
    "options_as",
    "output_previews",
    "pallas_block_indices",
    "pallas_compiled_fun",
    "pallas_index_map_line",
    "pallas_kernel_view",
    "pallas_mosaic_kernels",
    "pallas_ref_effects",
    "persistent_cache",
    "persistent_cache_enabled",
    "persistent_module_name",
    "persistent_settings",
    "placeholder_paths",
    "plan_call",
    "precision_losses",
    "preview_value",
    "primal_output",
    "primitive_definition",
    "primitive_objects_in",
    "program_executed",
    "program_profile",
    "random_calls",
    "recompute_cache_key",
    "recording_calls",
    "recording_eqns",
    "recording_linen",
    "recording_nnx",
    "rejected_bwd",
    "remat_table",
    "reset_caches",
    "return_source",
    "rule_column_tables",
    "rule_columns",
    "rule_import_modules",
    "rule_table_sizes",
    "rule_view",
    "setting_line",
    "shard_map_body",
    "shard_map_body_fun",
    "shard_map_eqn_body",
    "shard_map_inputs",
    "sharding_annotations",
    "shorten_scalar_error",
    "snippet_globals",
    "solved_dims",
    "source_lines",
    "source_statement",
    "spec_leaf_paths",
    "split_program",
    "stage_timers",
    "store_kind",
    "store_value",
    "stripped_module_text",
    "structure_change",
    "tolerance",
    "torch_internals",
    "trace_context_names",
    "trace_context_now",
    "tracer_errors",
    "type_name",
    "unused_invars",
    "user_frames",
    "value_view",
    "var_vma",
    "walk_pytree",
    "walk_scan_body",
    "walk_transpose",
    "watching",
    "watching_jit_calls",
    "watching_wrapped_funs",
    "without_previews",
    "without_rule",
    "wrapped_core_code",
    "write_once_text",
    "xla_flag_filter",
    "xla_flags_env",
]


def __getattr__(name: str) -> Any:
    """The re-exported ``name``, imported from its home module on first use (then cached in
    this module's namespace)."""
    if name not in _EXPORTED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _MODULES:
        value: Any = importlib.import_module(f"jaxscope.{name}")
    else:
        value = getattr(importlib.import_module(_HOME.get(name, _INTERNALS_API)), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


_EXPORTED = frozenset(__all__)
