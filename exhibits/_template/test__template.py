"""The template exhibit's tests: every aval against JAX itself (``jax.typeof`` of each argument
leaf, ``jax.eval_shape`` of ``f``), the golden event stream against the probe, the ``--print``
artefact.

They run only where the exhibit is registered: the template itself is not (``exhibits/conftest.py``
leaves ``_template`` out of the collection), and ``exhibits/test_template.py`` runs this file in a
copy that follows ``docs/adding-an-exhibit.md``. The exhibit's id is its folder's name, so a copy
under another name needs no edit here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished

from exhibits.conftest import Runner
from exhibits.registry import EXHIBITS

from .events import EVENTS, TemplateAvalsRead

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLE = HERE / "examples" / "affine.py"


def example_namespace() -> dict[str, Any]:
    """The example run as plain Python (not through the probe)."""
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), namespace)
    return namespace


def avals(ctx_events: list[EventBase], side: str) -> list[tuple[str, list[int], str, bool]]:
    (read,) = [e for e in ctx_events if isinstance(e, TemplateAvalsRead) and e.side == side]
    return [(x.path, x.aval.shape, x.aval.dtype, x.aval.weak_type) for x in read.leaves]


def test_avals_are_jaxs(probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, EXAMPLE.read_text())
    ns = example_namespace()
    # JAX's own answers: the aval of each argument leaf, and eval_shape of f.
    leaves = jax.tree_util.tree_leaves(ns["args"])
    ins = [(list(a.shape), a.dtype.name, a.weak_type) for a in map(jax.typeof, leaves)]
    out = jax.eval_shape(ns["f"], *ns["args"])
    outs = [(list(s.shape), s.dtype.name, s.weak_type) for s in jax.tree_util.tree_leaves(out)]
    # The key paths, written out: the dict's keys sorted, as JAX flattens a dict.
    in_paths = ["args[0]['b']", "args[0]['w']", "args[1]", "args[2]"]
    assert avals(ctx.events, "in") == [(p, *a) for p, a in zip(in_paths, ins, strict=True)]
    assert avals(ctx.events, "out") == [
        (p, *a) for p, a in zip(["out['norm']", "out['y']"], outs, strict=True)
    ]
    # the Python float 2.0 is weakly typed; the numpy arrays are not
    assert [w for *_, w in avals(ctx.events, "in")] == [False, False, False, True]


def test_static_arguments_are_left_out(probe_runner: Runner) -> None:
    source = (
        "import jax.numpy as jnp\n"
        "def f(n, x):\n"
        "    return jnp.ones(n) * x\n"
        "args = (3, jnp.float32(2.0))\n"
        "static_argnums = (0,)\n"
    )
    ctx = probe_runner(EXHIBIT, source)
    assert avals(ctx.events, "in") == [("args[1]", [], "float32", False)]
    assert avals(ctx.events, "out") == [("out", [3], "float32", False)]


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    """The golden (``jaxscope run ID examples/NAME.py --json``, the real sandbox) parses with the
    event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = HERE / "examples" / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example.read_text())

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, EVENTS)]

    assert own(stream) == own(ctx.events)
    assert own(stream), "the golden holds none of this exhibit's events"


def test_print_avals(probe_runner: Runner) -> None:
    ctx = probe_runner(EXHIBIT, EXAMPLE.read_text())
    text = EXHIBITS[EXHIBIT].artefacts["avals"](ctx.events)
    assert text is not None
    assert text.splitlines() == [
        "args[0]['b']: f32[2]",
        "args[0]['w']: f32[3,2]",
        "args[1]: f32[3]",
        "args[2]: ~f32[]",
        "out['norm']: f32[]",
        "out['y']: f32[2]",
    ]
