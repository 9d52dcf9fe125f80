"""The exhibit table (backend side): static metadata of every exhibit, and how to read each
artefact that ``jaxscope run --print ARTEFACT`` can print out of a run's events.

The server and the CLI read this table without importing JAX or any probe; the sandbox worker
imports ``exhibits.<id>.probe`` by id. ``jaxscope.events`` assembles the event union from the
``events.py`` of every exhibit listed here (``Exhibit.events_module``), and
``jaxscope.explainers`` the chain of error explainers from the ``explain.py`` of those that
explain errors (``Exhibit.explain_module``).
Each entry's navigation group and tab label are here too: ``npm run gen`` writes them to
``frontend/src/gen/exhibits.ts`` (:func:`frontend_table`), from which the frontend's table
(``frontend/src/exhibits.ts``) takes them, with each folder's ``View.svelte`` and
``narrative.md``. So an exhibit is its folder and its entry here (design 0059).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

# Only for annotations: importing this table imports nothing of jaxscope (``jaxscope.protocol``
# imports it to compose ``RunOptions`` from the entries' options models, design 0059), and no
# exhibit module but, on first use, the ones an entry's accessors name.
if TYPE_CHECKING:
    from jaxscope.protocol import EventBase, ExhibitInfo, WorkerKind

    from exhibits.shown import ShownError, ShownErrors

EXHIBITS_DIR = Path(__file__).resolve().parent

# Events are annotated with their base class here: ``jaxscope.events`` assembles the event union
# from this table, so nothing it imports may ask for the union (``EventModel``) while it loads.
Extractor: TypeAlias = "Callable[[Sequence[EventBase]], str | None]"


@dataclass(frozen=True)
class Exhibit:
    """One exhibit: its folder is ``exhibits/<id>/`` (events.py, probe.py, View.svelte,
    narrative.md, examples/*.py, golden/, tests; ``docs/adding-an-exhibit.md``). Its ``--print``
    artefacts are the ``ARTEFACTS`` of ``exhibits/<id>/artefacts.py`` (:attr:`artefacts`)."""

    id: str
    title: str
    summary: str
    default_example: str
    # The page's navigation: the group the tab sits in (one of ``GROUPS``) and the tab's short
    # label (the full title comes from the catalogue). ``npm run gen`` writes both into
    # ``frontend/src/gen/exhibits.ts`` (:func:`frontend_table`); ``table_problems`` checks them.
    group: str = ""
    label: str = ""
    # The name of this exhibit's run options model in ``exhibits/<id>/options.py`` (its
    # controls), when it has one: ``RunOptions`` is composed of these (``jaxscope.run_options``).
    options: str | None = None
    # Other exhibits whose examples this one offers too (the same real models serve several
    # exhibits; the files live once, in the first exhibit that uses them).
    examples_from: tuple[str, ...] = ()
    # When set, only these names are borrowed from ``examples_from`` (own examples all count).
    borrow_only: tuple[str, ...] = ()
    # Multiplies the sandbox's per-run wall-clock and CPU limits for this exhibit: the autodiff
    # exhibits trace, compile and run the user's function several times in one run.
    budget: float = 1.0
    # False for an exhibit that runs without user code (config): the snippet may then be empty
    # or lack ``f``/``args`` (``Snippet.defines_f``), and ``jaxscope run ID -`` needs no file.
    needs_snippet: bool = True
    # True when ``exhibits/<id>/explain.py`` defines ``explain_error``, the handler that explains
    # the JAX errors this exhibit knows (``jaxscope.explainers``: the chain asks the exhibits'
    # handlers in this table's order).
    explains_errors: bool = False
    # The kind of sandbox worker that runs the probe: "torch" for the PyTorch/XLA track (the
    # torch venv's interpreter, design 0025), "jax" for every other exhibit.
    worker: WorkerKind = "jax"
    # Runs that another kind of worker serves, as (option, value, kind): a run whose option has
    # that value runs in a worker of that kind (stations' ``target`` "tpu-v5e": the
    # "tpu_compile" worker, which has libtpu; design 0067). ``sandbox.kinds.worker_kind``.
    worker_options: tuple[tuple[str, str, WorkerKind], ...] = ()
    # This exhibit's RLIMIT_AS in bytes, when it needs another than the sandbox's default
    # (``Limits.address_space_bytes``); None keeps the default, and a default of 0 (no limit:
    # a GPU host, or ``--memory-gib 0``) is kept whatever this says.
    address_space_bytes: int | None = None
    # The real programs of ``examples/real`` the picker offers too, by name (issue 14: the
    # exhibits that run on real models; design 0048): :meth:`picker_paths`.
    real_programs: tuple[str, ...] = ()

    @functools.cached_property
    def artefacts(self) -> dict[str, Extractor]:
        """The ``--print`` table: ``ARTEFACTS`` of ``exhibits/<id>/artefacts.py`` ({} where the
        folder has none), imported on first use (it imports the exhibit's events, and so the
        protocol, which this table must not import while it loads)."""
        if not (self.folder / "artefacts.py").exists():
            return {}
        module = importlib.import_module(f"exhibits.{self.id}.artefacts")
        table: dict[str, Extractor] = module.ARTEFACTS
        return table

    @property
    def folder(self) -> Path:
        return EXHIBITS_DIR / self.id

    @property
    def options_module(self) -> str:
        """The module that defines this exhibit's options model (named by ``options``)."""
        return f"exhibits.{self.id}.options"

    @property
    def events_module(self) -> str:
        """The module that defines this exhibit's events and lists them in ``EVENTS``."""
        return f"exhibits.{self.id}.events"

    @property
    def explain_module(self) -> str:
        """The module whose ``explain_error`` explains this exhibit's errors (when
        ``explains_errors``; imported only in the worker, it may import JAX)."""
        return f"exhibits.{self.id}.explain"

    def example_paths(self) -> dict[str, Path]:
        """Example name (file stem) -> snippet file: this exhibit's own ``examples/*.py`` first,
        then those of ``examples_from`` under names not taken yet."""
        paths: dict[str, Path] = {}
        for folder in (self.id, *self.examples_from):
            for p in sorted((EXHIBITS_DIR / folder / "examples").glob("*.py")):
                if folder != self.id and self.borrow_only and p.stem not in self.borrow_only:
                    continue
                paths.setdefault(p.stem, p)
        return paths

    def examples(self) -> list[str]:
        """Example names, sorted."""
        return sorted(self.example_paths())

    def picker_paths(self) -> dict[str, Path]:
        """The one list of what this exhibit's example picker offers, each entry under the name
        the page and ``jaxscope run ID NAME`` give it, with its file: the examples
        (:meth:`example_paths`: its own, then those it borrows, which live in another exhibit's
        folder) under their names, then the real programs it offers under ``real/<name>``
        (those present: :func:`real_program_paths`). The catalogue, the
        picker and the CLI read it; a test runs every entry's file."""
        paths = dict(self.example_paths())
        real = real_program_paths()
        for name in self.real_programs:
            if name in real:
                paths[f"real/{name}"] = real[name]
        return paths

    def shown_errors(self, events: Sequence[EventBase]) -> list[ShownError]:
        """The errors JAX raised on the user's code that this run shows as an artefact although
        it finished (``SHOWN_ERRORS`` of ``exhibits/<id>/artefacts.py``; ``exhibits/shown.py``):
        ``jaxscope run`` then exits 3."""
        if not (self.folder / "artefacts.py").exists():
            return []
        module = importlib.import_module(f"exhibits.{self.id}.artefacts")
        shown: ShownErrors | None = getattr(module, "SHOWN_ERRORS", None)
        return shown(events) if shown is not None else []

    def unavailable(self, artefact: str, options: object) -> str | None:
        """Why a run with ``options`` cannot make ``artefact``, known before it runs
        (``UNAVAILABLE(artefact, options)`` of ``exhibits/<id>/artefacts.py``: e.g. stations'
        TPU v5e target compiles only, so it has no ``output``), or None: ``jaxscope run``
        refuses the flags as a usage error instead of running for nothing."""
        if not (self.folder / "artefacts.py").exists():
            return None
        module = importlib.import_module(f"exhibits.{self.id}.artefacts")
        why: Callable[[str, object], str | None] | None = getattr(module, "UNAVAILABLE", None)
        return why(artefact, options) if why is not None else None

    def notes(self, events: Sequence[EventBase]) -> list[str]:
        """Plain-words notes a finished run gives beside its artefacts (``NOTES(events)`` of
        ``exhibits/<id>/artefacts.py``: e.g. caches, "no jitted call of your code was
        observed"): ``jaxscope run`` prints each on stderr; the exit status is unchanged."""
        if not (self.folder / "artefacts.py").exists():
            return []
        module = importlib.import_module(f"exhibits.{self.id}.artefacts")
        notes: Callable[[Sequence[EventBase]], list[str]] | None = getattr(module, "NOTES", None)
        return notes(events) if notes is not None else []

    def info(self) -> ExhibitInfo:
        from jaxscope.protocol import ExhibitInfo

        return ExhibitInfo(
            id=self.id,
            title=self.title,
            summary=self.summary,
            artefacts=list(self.artefacts),
            default_example=self.default_example,
            examples=self.examples(),
            real_programs=sorted(
                k.removeprefix("real/") for k in self.picker_paths() if k.startswith("real/")
            ),
            worker=self.worker,
        )


# The real programs (a 12-layer GPT stack, Flax train steps, a CNN, a scan RNN, a 20,000-eqn
# loop; examples/real/README.md). They live in the checkout beside the exhibits; the wheel
# carries a copy inside the package as ``exhibits/_real`` (``scripts/build_wheel.py``, design
# 0057). Where neither folder is there the pickers offer none.
REAL_PROGRAMS_DIR = EXHIBITS_DIR.parent / "examples" / "real"
PACKAGED_REAL_PROGRAMS_DIR = EXHIBITS_DIR / "_real"


def real_programs_dir() -> Path | None:
    """The folder the real programs are read from: the checkout's ``examples/real``, else the
    installed package's ``exhibits/_real``; None where neither exists."""
    for folder in (REAL_PROGRAMS_DIR, PACKAGED_REAL_PROGRAMS_DIR):
        if folder.is_dir():
            return folder
    return None


def real_program_paths() -> dict[str, Path]:
    """Real program name (file stem) -> file, in :func:`real_programs_dir` ({} where there is
    none)."""
    folder = real_programs_dir()
    if folder is None:
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.py"))}


# Every program of ``examples/real`` (a test holds this to the folder), offered by the exhibits
# that run real models; the Flax ones define ``model`` and ``model_args`` for flax_params too.
EVERY_REAL_PROGRAM = (
    "cnn32",
    "gpt_stack",
    "linen_adam_step",
    "loop_20k",
    "nnx_adam_step",
    "scan_rnn_step",
)
FLAX_REAL_PROGRAMS = ("linen_adam_step", "nnx_adam_step")


# The autodiff exhibits share these examples (the scalar-loss models of ``tracing`` and ``jvp``).
_AD_EXAMPLES = ("mlp_loss", "attention", "rnn_loss")

EXHIBITS: dict[str, Exhibit] = {
    e.id: e
    for e in [
        Exhibit(
            id="tracing",
            group="Trace & compile",
            label="Tracing → jaxpr",
            options="TracingOptions",
            title="Tracing → jaxpr",
            summary="Watch JAX run your function once with tracers and record each equation.",
            default_example="mlp_loss",
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="stations",
            group="Trace & compile",
            label="Four stations",
            title="The four stations of a jitted call",
            summary="Traced, Lowered, Compiled, Run: jaxpr, StableHLO, optimized HLO, the device.",
            default_example="mlp_loss",
            examples_from=("tracing",),
            options="StationsOptions",
            worker_options=(("target", "tpu-v5e", "tpu_compile"),),
            # It lowers, compiles and runs the program: the GPT stack took 10.3 s of worker
            # time against a 13.7 s limit at budget 1 on this 2-core machine, loaded.
            budget=2.0,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="jvp",
            group="Autodiff",
            label="JVP",
            title="JVP, one primal equation at a time",
            summary="JAX's JVP rule for each equation: primals and tangents in, tangent eqns out.",
            default_example="mlp_loss",
            examples_from=("tracing",),
            borrow_only=_AD_EXAMPLES,
            budget=3.0,
            explains_errors=True,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="partial_eval",
            group="Autodiff",
            label="Partial eval",
            options="PartialEvalOptions",
            title="Partial evaluation and residuals",
            summary="JAX's partial evaluator splits the JVP into a forward and a linear jaxpr.",
            default_example="mlp_loss",
            examples_from=("jvp", "tracing"),
            borrow_only=_AD_EXAMPLES,
            budget=3.0,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="transpose",
            group="Autodiff",
            label="Transpose walk",
            title="The transpose walk: how jax.grad runs backwards",
            summary="The linear jaxpr run backwards through JAX's transpose rules to the gradient.",
            default_example="mlp_loss",
            examples_from=("jvp", "tracing"),
            borrow_only=_AD_EXAMPLES,
            budget=3.0,
            explains_errors=True,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="custom_vjp",
            group="Autodiff",
            label="custom_vjp lab",
            title="Own the derivative: custom_vjp / custom_jvp",
            summary="Check your rule against autodiff and finite differences; see what fwd saves.",
            default_example="clip_gradient",
            budget=3.0,
            explains_errors=True,
        ),
        Exhibit(
            id="nan_finder",
            group="Debugging",
            label="NaN finder",
            title="NaN and Inf gradients",
            summary="Walk the backward pass on values and stop where a cotangent turns NaN or Inf.",
            default_example="where_sqrt",
            budget=3.0,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="pytree",
            group="Pytrees & control flow",
            label="Pytrees",
            title="How every transform unpacks your data",
            summary="Watch JAX flatten a container: visit order, key paths, leaves, the treedef.",
            default_example="nested_params",
            # It compiles jax.jit(f) and runs f eagerly too (pytree_called): the GPT stack took
            # 6.9 s of worker time on a quiet machine against a 13.7 s limit at budget 1, and
            # hit the limit while benchmarks ran beside it (bench/page_vs_cli.py).
            budget=2.0,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="control_flow",
            group="Pytrees & control flow",
            label="Control flow",
            title="Control flow as primitives",
            summary="cond, scan, while_loop, fori_loop: bodies traced once, carry types checked.",
            default_example="scan_carry",
            budget=3.0,
        ),
        Exhibit(
            id="vmap",
            group="Batching",
            label="vmap axes",
            options="VmapOptions",
            title="Where vmap puts the axis",
            summary="JAX's batching rule for each equation: batch dims in, batch dims out.",
            default_example="per_example_loss",
            budget=2.0,
            explains_errors=True,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="transform_order",
            group="Batching",
            label="Transform order",
            options="TransformOrderOptions",
            title="Transform order: a stack of chips",
            summary="Stack jit, grad, vmap, jacfwd, jacrev...: what type-checks, what it computes.",
            default_example="per_example_grads",
            budget=3.0,
            real_programs=EVERY_REAL_PROGRAM,
        ),
        Exhibit(
            id="caches",
            group="Caches",
            label="Cache layers",
            options="CachesOptions",
            title="The cache layers under a jit call",
            summary="Which cache answered each call, and what JAX keyed on: a diff per call.",
            default_example="new_shape",
            budget=2.0,
        ),
        Exhibit(
            id="cache_key",
            group="Caches",
            label="Cache key",
            options="CacheKeyOptions",
            title="The persistent cache key",
            summary="What JAX hashes before it decides not to compile, ingredient by ingredient.",
            default_example="matmul",
            budget=2.0,
        ),
        Exhibit(
            id="recompile_hunt",
            group="Debugging",
            label="Recompile hunt",
            options="RecompileHuntOptions",
            title="The recompile hunt",
            summary="Run a training loop under monitoring: which steps compiled, and why.",
            default_example="fresh_closure",
            budget=3.0,
        ),
        Exhibit(
            id="config",
            group="Caches",
            label="Config",
            title="Configuration",
            summary="Every jax.config option: value, scoping, and whether it forces a retrace.",
            default_example="options",
            needs_snippet=False,
        ),
        Exhibit(
            id="sharding",
            group="Devices",
            label="Sharding",
            options="ShardingOptions",
            title="Sharding: meshes, PartitionSpecs, collectives",
            summary="Name your devices, annotate an array, read what the partitioner inserted.",
            default_example="sum_sharded_axis",
            budget=2.0,
        ),
        Exhibit(
            id="shard_map",
            group="Devices",
            label="shard_map",
            title="shard_map: the per-device body and the checks around it",
            summary="Per-device shapes, varying axes, collectives, and JAX's checks around them.",
            default_example="psum_rows",
            budget=2.0,
        ),
        Exhibit(
            id="rules",
            group="Devices",
            label="Rule matrix",
            title="One rule per primitive: the coverage matrix",
            summary="Every primitive's JVP, transpose, batching and lowering rules, with sources.",
            default_example="tables",
            needs_snippet=False,
            # Importing flax in the run costs about 2 s on a loaded 2-core machine.
            budget=2.0,
        ),
        Exhibit(
            id="dtypes",
            group="Trace & compile",
            label="Type promotion",
            title="Type promotion: result_type and the lattice",
            summary="jnp.promote_types over JAX's dtypes and weak types, x64 off and on.",
            default_example="mixed_ints",
        ),
        Exhibit(
            id="prng",
            group="Trace & compile",
            label="PRNG keys",
            title="Keys are values: the key tree and key reuse",
            summary="Every jax.random split, fold_in and draw of f, its key data, and reused keys.",
            default_example="reuse_bug",
            # f runs twice, op by op (eagerly: once recording, once under the reuse checker).
            budget=3.0,
        ),
        Exhibit(
            id="flax_params",
            group="Pytrees & control flow",
            label="Flax params",
            title="Params are data: a Flax model's parameters",
            summary="Each self.param with its key, the params dict init returns and apply reads.",
            default_example="mlp",
            # The snippet defines `model` (and `args`), not `f`.
            needs_snippet=False,
            real_programs=FLAX_REAL_PROGRAMS,
            # Importing flax and the first eager init (one XLA compile per primitive) take
            # seconds on a loaded machine.
            budget=3.0,
        ),
        Exhibit(
            id="lazy_tensor",
            group="PyTorch/XLA",
            label="Lazy tensors",
            options="LazyTensorOptions",
            title="Lazy tensors: the pending graph and its cuts (PyTorch/XLA)",
            summary=(
                "torch_xla's pending IR line by line, what cuts it, the graph hash, and the "
                "same f through torchax."
            ),
            default_example="mlp_item",
            worker="torch",
            # `import torch` maps 5 GB of address space, 5.9-6.3 GB after work (design 0025).
            address_space_bytes=8 * 2**30,
            # f runs three times (line by line, plainly, the hash experiments) and each sync
            # compiles; the first compile of a fresh process is the slow one.
            budget=3.0,
        ),
        Exhibit(
            id="pjrt_registry",
            group="PyTorch/XLA",
            label="PJRT_DEVICE branch",
            options="PjrtRegistryOptions",
            title="PJRT_DEVICE: which branch of pjrt_registry.cpp creates the client (PyTorch/XLA)",
            summary="A PJRT_DEVICE string and the dynamic-plugin switch: the branch of torch_xla "
            "2.9.0's pjrt_registry.cpp that takes them, its environment variables, the exact "
            "error.",
            default_example="foo_unknown",
            worker="torch",
            # `import torch` maps 5 GB of address space (design 0025).
            address_space_bytes=8 * 2**30,
            # The snippet needs no f: the run is one client creation.
            needs_snippet=False,
        ),
        Exhibit(
            id="seam",
            group="PyTorch/XLA",
            label="ComputationClient seam",
            title="One training step across the ComputationClient seam (PyTorch/XLA)",
            summary="Each call a training step makes across torch_xla's ComputationClient: "
            "inputs down, the program down on the first step, the run, the loss up; counted "
            "with torch_xla's metrics, timed with a profiler trace, each named with the PJRT "
            "call behind it.",
            default_example="mlp_sgd",
            worker="torch",
            # `import torch` maps 5 GB of address space, 5.9-6.3 GB after work (design 0025).
            address_space_bytes=8 * 2**30,
            # The first step compiles (0.2-0.9 s under load); every line of f reads the metrics.
            budget=3.0,
        ),
        Exhibit(
            id="xla_cache",
            group="PyTorch/XLA",
            label="Compile cache",
            title="A training loop's compiles, step by step (PyTorch/XLA)",
            summary="torch_xla's metric counters after each step's sync: the first step compiles, "
            "the next reuse it; a loop that compiles every step, found and fixed.",
            default_example="mlp_sgd",
            worker="torch",
            # `import torch` maps 5 GB of address space, 5.9-6.3 GB after work (design 0025).
            address_space_bytes=8 * 2**30,
            # The loop compiles once per new graph: a recompiling example compiles every step.
            budget=3.0,
        ),
        Exhibit(
            id="torch_spmd",
            group="PyTorch/XLA",
            label="SPMD mesh",
            title="SPMD on a device mesh: partition specs, tile assignments, collectives "
            "(PyTorch/XLA)",
            summary="xs.Mesh over 1-8 virtual CPU devices, each argument's partition spec and the "
            "tile assignment it becomes, the HLO's sharding annotations, the collectives the "
            "SPMD partitioner inserted, and every device's shard.",
            default_example="matmul_2x4",
            worker="torch",
            # `import torch` maps 5 GB of address space, 6.2-6.3 GB after SPMD work (design 0025).
            address_space_bytes=8 * 2**30,
            # Two programs compile (f's sync and .cpu()'s gather), each partitioned for n devices.
            budget=2.0,
        ),
        Exhibit(
            id="dynamo_bridge",
            group="PyTorch/XLA",
            label="torch.compile bridge",
            title='torch.compile(backend="openxla"): FX graphs, graph hashes, replays '
            "(PyTorch/XLA)",
            summary="The FX graphs dynamo hands torch_xla's bridge, the graph hash each XLA "
            "program compiles under, replay by hash on later calls, and graph breaks and CPU "
            "fallbacks that split f into several programs with host code between.",
            default_example="sin_cos",
            worker="torch",
            # `import torch` maps 5 GB of address space, 5.9-6.3 GB after work (design 0025).
            address_space_bytes=8 * 2**30,
            # dynamo traces and the bridge compiles on the first call (0.3-1 s under load).
            budget=3.0,
        ),
        Exhibit(
            id="pallas",
            group="XLA & export",
            label="Pallas blocks",
            title="A Pallas kernel, block by block (interpret mode)",
            summary="The grid, the blocks each program instance reads and writes, the kernel's "
            "jaxpr, and the output against the jnp reference.",
            default_example="matmul",
            # target "tpu-v5e" (stations' option): the kernels lowered through Mosaic for a TPU,
            # offline, in a "tpu_compile" worker (design 0073)
            worker_options=(("target", "tpu-v5e", "tpu_compile"),),
        ),
        Exhibit(
            id="export",
            group="XLA & export",
            label="jax.export",
            title="jax.export: a function serialized as StableHLO",
            summary="The exported module, its calling convention and platforms, the symbolic "
            "dimensions and the constraints JAX derived, and a serialize-deserialize-call round "
            "trip.",
            default_example="mlp_batch",
            explains_errors=True,
            # jit(f) and the deserialized module compile twice each (at args, at another size).
            budget=2.0,
        ),
        Exhibit(
            id="xla_passes",
            group="XLA & export",
            label="XLA passes",
            title="XLA's optimizer, pass by pass",
            summary="The HLO module after every XLA pass, what each pass changed, the pass that "
            "created each fusion, and the CPU kernels' LLVM IR.",
            default_example="mlp_softmax",
            # target "tpu-v5e" (stations' option, which lists xla_passes among its readers): the
            # TPU compiler's own pipeline, offline (design 0073)
            worker_options=(("target", "tpu-v5e", "tpu_compile"),),
        ),
        Exhibit(
            id="wrapped_fun",
            group="Trace & compile",
            label="WrappedFun stack",
            options="WrappedFunOptions",
            title="WrappedFun: linear_util's stack of transformations",
            summary="The generators vmap and custom rules stack around f, in the order they "
            "run, and their write-once stores; jit and grad build none.",
            default_example="vmap_sin",
        ),
        Exhibit(
            id="review",
            group="Debugging",
            label="Code review",
            title="Code review: a training step's questions, answered from the run",
            summary="Static and dynamic arguments, baked constants, hidden randomness, "
            "executables per step, host-device transfers, tracer errors and jits made in the "
            "loop, each at its line with the fix.",
            default_example="mlp_step",
            # The step runs twice, then again under the transfer guard once per line found and
            # once more to finish, and each jitted function is traced once more; the default
            # example's jit made per step compiles at each of those 4 runs (7-15 s in all on the
            # loaded 2-core machine).
            budget=3.0,
        ),
        Exhibit(
            id="pmap",
            group="Devices",
            label="pmap",
            title="pmap: a jit around a shard_map",
            summary="The leading axis split over the devices, what each device receives and "
            "returns, collectives by axis_name as data movement, and the same step with jit + "
            "NamedSharding and with shard_map.",
            default_example="collectives",
            explains_errors=True,
            # pmap compiles once, each collective's cut of the body once more, and each version
            # once (jit + NamedSharding, shard_map).
            budget=2.0,
        ),
        Exhibit(
            id="tf_bridge",
            group="XLA & export",
            label="TF bridge",
            title="jax2tf and tf2jax: JAX to TensorFlow and back",
            summary="The TensorFlow graph jax2tf makes (an XlaCallModule carrying jax.export's "
            "StableHLO), its gradient and a SavedModel; a TensorFlow function's jaxpr through "
            "tf2jax, eqn by eqn beside its ops; outputs and gradients against the other side.",
            default_example="dense",
            worker="tf",
            # TensorFlow + JAX reach a VmPeak of 2.78 GB on the default example (design 0066):
            # a JAX worker's 3 GiB leaves no margin.
            address_space_bytes=6 * 2**30,
            # TensorFlow traces f three times (forward, gradient, SavedModel) and runs it in
            # TensorFlow and JAX; tf2jax traces tf_f once more.
            budget=3.0,
        ),
    ]
}

# The page's navigation groups, in display order; each tab sits in the group its entry names,
# in this table's order within the group.
GROUPS = (
    "Trace & compile",
    "Autodiff",
    "Batching",
    "Pytrees & control flow",
    "Caches",
    "Devices",
    "XLA & export",
    "Debugging",
    "PyTorch/XLA",
)


def table_problems(exhibits: dict[str, Exhibit] | None = None) -> list[str]:
    """What is wrong with the navigation entries of ``exhibits`` (default: this table): an
    entry without a label or with a group not in :data:`GROUPS`, two entries with one label
    (empty: nothing). Checked at server start, by ``npm run gen`` and in tests."""
    table = EXHIBITS if exhibits is None else exhibits
    problems = [
        f"{e.id}: group {e.group!r} is not one of exhibits.registry.GROUPS {GROUPS}"
        for e in table.values()
        if e.group not in GROUPS
    ]
    problems += [f"{e.id}: no label (the tab's short name)" for e in table.values() if not e.label]
    labels: dict[str, str] = {}
    for e in table.values():
        if e.label and labels.setdefault(e.label, e.id) != e.id:
            problems.append(f"{labels[e.label]} and {e.id} share the label {e.label!r}")
    return problems


def frontend_table(exhibits: dict[str, Exhibit] | None = None) -> dict[str, object]:
    """What the frontend's exhibit table (``frontend/src/exhibits.ts``) needs of this one, as
    ``npm run gen`` writes it to ``frontend/src/gen/exhibits.ts``: the groups in display order
    and each exhibit's group, label and worker kind (what runs its snippet: the page's "Press
    Run" line names it), in this table's order. Raises ``ValueError`` on
    :func:`table_problems`."""
    table = EXHIBITS if exhibits is None else exhibits
    problems = table_problems(table)
    if problems:
        raise ValueError("exhibits/registry.py: " + "; ".join(problems))
    return {
        "groups": list(GROUPS),
        "exhibits": {
            e.id: {"group": e.group, "label": e.label, "worker": e.worker} for e in table.values()
        },
    }


# Each exhibit folder must hold these parts (checked at server start and in tests).
REQUIRED_PARTS = ("probe.py", "View.svelte", "narrative.md", "examples", "golden", "events.py")


def run_budget(exhibit_id: str) -> float:
    """The limit multiplier of ``exhibit_id`` (1.0 for an unknown id: the run then fails as
    unknown exhibit inside the worker, under the normal limits)."""
    exhibit = EXHIBITS.get(exhibit_id)
    return exhibit.budget if exhibit else 1.0


def missing_parts(exhibit: Exhibit) -> list[str]:
    """The required parts that ``exhibits/<id>/`` lacks (empty when complete)."""
    return [p for p in REQUIRED_PARTS if not (exhibit.folder / p).exists()]
