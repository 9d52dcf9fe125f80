"""The one door from the probes into ``jaxscope.internals``: every exhibit module that runs in
the worker (``exhibits/<id>/probe.py`` and its helpers, not tests or golden scripts) reaches
internals only through here, by way of ``jaxscope.exhibit_api``, which re-exports every name of
this module and is all the exhibits import of jaxscope (``backend/tests/test_import_rules.py``,
``test_exhibit_api.py`` check both).

It defines nothing: it re-exports, each with the signature of the submodule that defines it,
exactly the names the probes use, so that what the exhibits depend on in internals is one list
to read. A name that two submodules share (``walk``, ``StepRecord``, ``observing``) or that is too
general alone (``rule_tables.columns``, ``config_table.options``) is re-exported under a name
that says which machinery it belongs to.

Importing this module imports nothing: the imports below are read by mypy (``TYPE_CHECKING``)
and, at run time, by :func:`_homes` from this file's own text, and each name is imported from
its submodule on first use (PEP 562, as ``jaxscope.exhibit_api`` does), so that a probe imports
only the machinery it uses: the tracing probe 5 submodules instead of all ~45 (~0.02 CPU-s
instead of 0.2-0.4; the warm template imports the first exhibit's probe before it is ready,
issue 36's cold start, design 0079).
"""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The imports are grouped by what they are for, each renamed name bound in its group, rather
# than in one sorted block (I001) with every assignment after it. Each statement of the
# block is an import from a submodule, an import of a submodule (``as _name``), or a name bound
# to an attribute of such a submodule (``name = _submodule.attribute``): :func:`_homes` reads
# nothing else.
# ruff: noqa: I001

if TYPE_CHECKING:
    # Submodules whose names are re-exported under another name (bound below, by assignment).
    from jaxscope.internals import cache_key as _cache_key
    from jaxscope.internals import config_table as _config_table
    from jaxscope.internals import program_size as _program_size
    from jaxscope.internals import pytree_walk as _pytree_walk
    from jaxscope.internals import recompiles as _recompiles
    from jaxscope.internals import rule_tables as _rule_tables
    from jaxscope.internals import shard_map_checks as _shard_map_checks
    from jaxscope.internals import trace_stack as _trace_stack
    from jaxscope.internals import transpose_walk as _transpose_walk

    # The calling convention and running a compiled program: a snippet's arguments, timing,
    # previews.
    from jaxscope.internals.calling import (
        CallPlan as CallPlan,
        block_until_ready as block_until_ready,
        concrete_args as concrete_args,
        placeholder_paths as placeholder_paths,
        plan_call as plan_call,
    )
    from jaxscope.internals.execution import (
        MAX_REPEATS as MAX_REPEATS,
        output_previews as output_previews,
        program_executed as program_executed,
    )
    from jaxscope.internals.buffer_peak import compile_with_peak as compile_with_peak
    from jaxscope.internals.device_profile import (
        program_profile as program_profile,
    )

    # A program traced and worked on before it is lowered: the run's limits grow with its size.
    note_program_size = _program_size.note

    # Views of jaxprs, avals and values with JAX's own names.
    from jaxscope.internals.views import (
        aval_view as aval_view,
        jaxpr_view as jaxpr_view,
        preview_value as preview_value,
    )

    # Tracing and the stations: the jit-call observer, timers, the eqn stream, lowering, compiling.
    from jaxscope.internals.cache import (
        SWAPPED_OUT_STREAMS as SWAPPED_OUT_STREAMS,
        cache_size as cache_size,
        fresh_caches as fresh_caches,
        observe_call as observe_call,
    )
    from jaxscope.internals.compiled import (
        executable_compiled as executable_compiled,
    )
    from jaxscope.internals.lowering import (
        module_lowered as module_lowered,
    )
    from jaxscope.internals.monitoring import (
        stage_timers as stage_timers,
    )
    from jaxscope.internals.recording import (
        RecordedEqn as RecordedEqn,
        recording_eqns as recording_eqns,
    )

    # Forward-mode autodiff, partial evaluation and remat policies.
    from jaxscope.internals.jvp_steps import (
        JvpJaxprRecord as JvpJaxprRecord,
        JvpStepRecord as JvpStepRecord,
        capture_jvp as capture_jvp,
        choose_tangents as choose_tangents,
        closed_function as closed_function,
    )
    from jaxscope.internals.remat import (
        remat_table as remat_table,
    )
    from jaxscope.internals.split import (
        default_known as default_known,
        jvp_program as jvp_program,
        split_program as split_program,
    )

    # The backward pass step by step, and the custom rules on a disagreeing gradient's path.
    from jaxscope.internals.rule_blame import (
        custom_rules_on_path as custom_rules_on_path,
    )
    from jaxscope.internals.transpose_walk import (
        LinearJaxprRecord as LinearJaxprRecord,
        Linearized as Linearized,
        TransposeStepView as TransposeStepView,
        WalkResult as WalkResult,
        call_name as call_name,
        grad_seed as grad_seed,
        inside as inside,
        is_nonfinite as is_nonfinite,
        linear_jaxpr_staged as linear_jaxpr_staged,
        linearize_vjp as linearize_vjp,
        noting_caches as noting_caches,
        value_view as value_view,
        walk_scan_body as walk_scan_body,
    )

    TransposeStepRecord = _transpose_walk.StepRecord
    walk_transpose = _transpose_walk.walk

    # The NaN finder: a custom bwd's forward values, non-finite values hidden inside an eqn.
    from jaxscope.internals.hidden_nonfinite import (
        NonfiniteEqn as NonfiniteEqn,
        hidden_nonfinite as hidden_nonfinite,
    )

    # The dtypes exhibit: the implicit, lasting widenings of f's jaxpr.
    from jaxscope.internals import dtype_changes as _dtype_changes
    from jaxscope.internals.dtype_changes import Promotion as Promotion

    dtype_promotions = _dtype_changes.promotions
    dtype_eqn_count = _dtype_changes.eqn_count

    # ... and where a bfloat16/float16 result loses what float32 keeps (f run as written and in
    # float32, eqn by eqn).
    from jaxscope.internals.precision_loss import (
        PrecisionLoss as PrecisionLoss,
        precision_losses as precision_losses,
    )

    # The sharding exhibit: with_sharding_constraint / device_put annotations inside f.
    from jaxscope.internals.sharding_annotations import (
        ShardingAnnotation as ShardingAnnotation,
        sharding_annotations as sharding_annotations,
    )

    from jaxscope.internals.nan_walk import (
        CustomBwd as CustomBwd,
        custom_bwd as custom_bwd,
        custom_bwd_return as custom_bwd_return,
        primal_output as primal_output,
    )

    # custom_vjp/custom_jvp: finding the user's rules, recording their calls, checking them.
    from jaxscope.internals.custom_rules import (
        CustomFunction as CustomFunction,
        RecordedCall as RecordedCall,
        code_line as code_line,
        error_source as error_source,
        find_custom_functions as find_custom_functions,
        recording_calls as recording_calls,
        rejected_bwd as rejected_bwd,
        return_source as return_source,
        snippet_globals as snippet_globals,
        without_rule as without_rule,
    )

    # Batching rules step by step, and the trace nest of a transform stack.
    from jaxscope.internals.batching_steps import (
        BatchStepRecord as BatchStepRecord,
        batched_jaxpr as batched_jaxpr,
        capture_batching as capture_batching,
        example_jaxpr as example_jaxpr,
        map_inputs as map_inputs,
    )
    from jaxscope.internals.trace_stack import (
        ArgTrace as ArgTrace,
        count_eqns as count_eqns,
    )

    observing_trace_stack = _trace_stack.observing

    # JAX's rule tables (jvp, transpose, batching, lowering) per primitive.
    from jaxscope.internals.rule_tables import (
        NOT_IMPORTED as NOT_IMPORTED,
        is_primitive as is_primitive,
        jax_primitive_ids as jax_primitive_ids,
        known_primitives as known_primitives,
        primitive_objects_in as primitive_objects_in,
        rule_view as rule_view,
        source_statement as source_statement,
    )

    rule_column_tables = _rule_tables.column_tables
    rule_columns = _rule_tables.columns
    primitive_definition = _rule_tables.definition
    rule_import_modules = _rule_tables.import_modules
    rule_table_sizes = _rule_tables.table_sizes

    # Pytrees: JAX's registry and the order it visits a container's nodes in.
    from jaxscope.internals.pytree_walk import (
        FAULT_ATTR as FAULT_ATTR,
        NodeFault as NodeFault,
        check_container as check_container,
        first_difference as first_difference,
        leaf_aval as leaf_aval,
        type_name as type_name,
    )

    walk_pytree = _pytree_walk.walk

    # Control flow: JAX's own carry and branch checks, observed.
    from jaxscope.internals.control_flow import (
        CarryObservation as CarryObservation,
        branch_out_avals as branch_out_avals,
        carry_avals as carry_avals,
        eqn_snippet_line as eqn_snippet_line,
        function_source as function_source,
        iter_eqns as iter_eqns,
        observe_control_flow as observe_control_flow,
    )

    # shard_map calls found inside a user's f (real code), and the arrays each received.
    from jaxscope.internals.shard_map_found import (
        find_shard_maps as find_shard_maps,
    )
    from jaxscope.internals.shard_map_found import (
        shard_map_body_fun as shard_map_body_fun,
    )
    from jaxscope.internals.shard_map_found import (
        shard_map_inputs as shard_map_inputs,
    )

    # pmap: a shard_map body's collectives run on the devices one eqn at a time.
    from jaxscope.internals.pmap_collectives import (
        collective_values as collective_values,
    )
    from jaxscope.internals.pmap_collectives import (
        shard_map_body as shard_map_body,
    )

    # shard_map: its checks, its body as each device sees it, its collectives.
    from jaxscope.internals.shard_map_checks import (
        CHECK_SOURCES as CHECK_SOURCES,
        CHECK_TITLES as CHECK_TITLES,
        BodyObserved as BodyObserved,
        CheckResult as CheckResult,
        all_checks as all_checks,
        collective_eqns as collective_eqns,
        communicates as communicates,
        shard_map_eqn_body as shard_map_eqn_body,
        spec_leaf_paths as spec_leaf_paths,
        var_vma as var_vma,
    )

    observing_shard_map = _shard_map_checks.observing

    # Caches: the persistent cache key, the cache layers of a jit call, recompiles, the config
    # table.
    from jaxscope.internals.cache_key import (
        CACHE_DIR as CACHE_DIR,
        cache_file_suffix as cache_file_suffix,
        capture_cache_keys as capture_cache_keys,
        clean_cache_dir as clean_cache_dir,
        clear_in_memory_caches as clear_in_memory_caches,
        custom_hook_returning as custom_hook_returning,
        excluded_flags as excluded_flags,
        persistent_cache as persistent_cache,
        persistent_settings as persistent_settings,
        stripped_module_text as stripped_module_text,
        xla_flag_filter as xla_flag_filter,
        xla_flags_env as xla_flags_env,
    )

    recompute_cache_key = _cache_key.recompute
    from jaxscope.internals.cache_layers import (
        COUNTED_CACHES as COUNTED_CACHES,
        JitCallRecord as JitCallRecord,
        argument_trees as argument_trees,
        is_jitted as is_jitted,
        jitted_donates as jitted_donates,
        jitted_fun as jitted_fun,
        jitted_name as jitted_name,
        jitted_statics as jitted_statics,
        key_entries as key_entries,
        multiline_jaxpr_view as multiline_jaxpr_view,
        observe_jit_call as observe_jit_call,
        persistent_cache_enabled as persistent_cache_enabled,
        persistent_module_name as persistent_module_name,
        reset_caches as reset_caches,
        trace_context_now as trace_context_now,
        watching_jit_calls as watching_jit_calls,
    )
    from jaxscope.internals.structure_change import (
        StructureChange as StructureChange,
        structure_change as structure_change,
    )

    config_flipped = _config_table.flipped
    config_options = _config_table.options
    from jaxscope.internals.config_table import (
        trace_context_names as trace_context_names,
    )
    from jaxscope.internals.recompiles import (
        BudgetReached as BudgetReached,
        Diagnosis as Diagnosis,
        KeyRecord as KeyRecord,
        Watch as Watch,
        diagnose as diagnose,
        watching as watching,
    )

    RecompileStepRecord = _recompiles.StepRecord

    # Flax: linen's Scope.param/make_rng and nnx's RngStream/Variable observed, and JAX's dead-code
    # elimination of a jaxpr's inputs (the parameters apply never reads).
    from jaxscope.internals.flax_hooks import (
        LinenParam as LinenParam,
        LinenRecorder as LinenRecorder,
        NnxRecorder as NnxRecorder,
        NnxVariable as NnxVariable,
        recording_linen as recording_linen,
        recording_nnx as recording_nnx,
        unused_invars as unused_invars,
    )

    # jax.export: the dimension variables of a shape-polymorphic export, solved as JAX solves them,
    # and the constraints JAX checks when the exported module is called.
    from jaxscope.internals.export_dims import (
        DimConstraint as DimConstraint,
        SolvedDims as SolvedDims,
        concrete_shape as concrete_shape,
        dim_values as dim_values,
        solved_dims as solved_dims,
    )

    # Pallas: the pallas_call eqns of f, each BlockSpec's index map, the kernel's effects on its
    # refs.
    from jaxscope.internals.pallas_found import (
        FoundPallasCall as FoundPallasCall,
        find_pallas_calls as find_pallas_calls,
    )
    from jaxscope.internals import pallas_found as _pallas_found

    pallas_block_indices = _pallas_found.block_indices
    pallas_ref_effects = _pallas_found.ref_effects
    pallas_kernel_view = _pallas_found.kernel_view

    # linear_util: the WrappedFun stacks built around the snippet's functions, their real call order
    # and write-once stores, and what traced f when no WrappedFun did.
    from jaxscope.internals import wrapped_fun_watch as _wrapped_fun_watch

    # Imported as the facade's name, not bound by assignment: mypy cannot tell the type of the
    # assigned context manager inside this block ([has-type]).
    from jaxscope.internals.wrapped_fun_watch import watching as watching_wrapped_funs  # noqa: F401
    from jaxscope.internals.wrapped_fun_watch import (
        first_callers as first_callers,
        store_kind as store_kind,
        store_value as store_value,
        write_once_text as write_once_text,
    )

    WrappedFunStack = _wrapped_fun_watch.Stack
    WrappedFunStep = _wrapped_fun_watch.Step
    wrapped_core_code = _wrapped_fun_watch.core_code

    # The review exhibit: device-to-host reads and numpy/Python random calls from the snippet,
    # host-to-device transfers under a per-line transfer guard, executables launched (profiler),
    # and the constants baked into a traced jaxpr with the line that reads each.
    from jaxscope.internals.review_hooks import (
        BakedConstant as BakedConstant,
        HostRead as HostRead,
        RandomCall as RandomCall,
        baked_constants as baked_constants,
        device_to_host_reads as device_to_host_reads,
        executions as executions,
        guarded as guarded,
        is_transfer_guard_error as is_transfer_guard_error,
        random_calls as random_calls,
    )


# Pallas on a TPU through Mosaic (design 0073): imported on first use (Mosaic's tpu dialect and
# pass manager are needed only by a "tpu_compile" worker's pallas run).
def pallas_compiled_fun(closed: Any, interpret: bool = False) -> tuple[Any, list[Any]]:
    """``pallas_mosaic.compiled_fun``: f's jaxpr with every pallas_call's interpret set."""
    from jaxscope.internals import pallas_mosaic

    return pallas_mosaic.compiled_fun(closed, interpret)


def pallas_mosaic_kernels(lowered: Any) -> list[Any]:
    """``pallas_mosaic.mosaic_kernels``: each tpu_custom_call of a TPU lowering, read back."""
    from jaxscope.internals import pallas_mosaic

    return list(pallas_mosaic.mosaic_kernels(lowered))


def pallas_index_map_line(index_map: Any) -> int | None:
    """``pallas_mosaic.index_map_line``: the snippet line of a BlockSpec's index map."""
    from jaxscope.internals import pallas_mosaic

    return pallas_mosaic.index_map_line(index_map)


@functools.cache
def _homes() -> dict[str, tuple[str, str]]:
    """Each public name the ``TYPE_CHECKING`` block binds: ``(submodule, attribute)`` (the
    block read from this file with ``ast``, ~1 ms once per process)."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    submodules: dict[str, str] = {}
    homes: dict[str, tuple[str, str]] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom) and node.module == "jaxscope.internals":
            for alias in node.names:
                submodules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                homes[alias.asname or alias.name] = (node.module, alias.name)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
        ):
            home = (submodules[node.value.value.id], node.value.attr)
            homes.update({t.id: home for t in node.targets if isinstance(t, ast.Name)})
        else:
            raise ImportError(f"jaxscope.internals.api: line {node.lineno} is not read")
    return {name: home for name, home in homes.items() if not name.startswith("_")}


def __getattr__(name: str) -> Any:
    """The re-exported ``name``, imported from its submodule on first use (then kept in this
    module's namespace)."""
    home = _homes().get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = home
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_homes()})
