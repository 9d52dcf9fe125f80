"""flax_params runs the real Flax programs its picker offers (issue 31, item 3): the linen CNN
train step and the nnx MLP train step of ``examples/real``, whose ``args`` are their ``f``'s,
give the model's own inputs as ``model_args``. Truth: the same file run as plain Python, its
model initialised (linen ``init`` on the same key) or built (nnx ``model(rngs=Rngs(0))``) by
Flax itself; and a train step's ``args`` without ``model_args`` is still blamed on its line."""

from __future__ import annotations

import sys
import types
from typing import Any

import jax
import numpy as np
import pytest
from flax import nnx
from jaxscope.sandbox.probe_api import BLAME_ATTR

from exhibits.registry import FLAX_REAL_PROGRAMS, REAL_PROGRAMS_DIR

from .events import ParamCreated, ParamsApplied, ParamsInitialized
from .test_flax_params import run


def _program(name: str) -> tuple[str, dict[str, Any]]:
    source = (REAL_PROGRAMS_DIR / f"{name}.py").read_text()
    module = types.ModuleType(f"flax_params_real_{name}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return source, module.__dict__


def test_the_picker_offers_the_flax_programs() -> None:
    assert FLAX_REAL_PROGRAMS == ("linen_adam_step", "nnx_adam_step")


def test_the_linen_train_step_shows_its_models_parameters() -> None:
    source, ns = _program("linen_adam_step")
    ctx = run(source)
    truth = ns["model"].init(jax.random.key(0), *ns["model_args"])
    flat = jax.tree_util.tree_flatten_with_path(truth["params"])[0]
    want = {tuple(str(k.key) for k in path): np.asarray(v) for path, v in flat}
    created = ctx.of_type(ParamCreated)
    assert sorted(tuple(e.path) for e in created) == sorted(want)
    for e in created:
        assert e.aval.shape == list(want[tuple(e.path)].shape)
        assert e.reproduced is not False
    assert ctx.one(ParamsInitialized).api == "linen"
    applied = ctx.one(ParamsApplied)
    assert applied.call == "model.apply(variables, *model_args)"
    out = ns["model"].apply(truth, *ns["model_args"])
    assert applied.output_aval is not None
    assert applied.output_aval.shape == list(out.shape)


def test_the_nnx_train_step_shows_its_models_parameters() -> None:
    source, ns = _program("nnx_adam_step")
    ctx = run(source)
    model = ns["model"](rngs=nnx.Rngs(0))
    state = nnx.state(model, nnx.Param)
    want = {tuple(str(k) for k in p): np.asarray(v[...]) for p, v in nnx.to_flat_state(state)}
    created = ctx.of_type(ParamCreated)
    assert sorted(tuple(e.path) for e in created) == sorted(want)
    for e in created:
        assert e.aval.shape == list(want[tuple(e.path)].shape)
        assert e.reproduced is not False
    # the step's params are the model's: the same tree f trains
    assert sorted(want) == sorted(
        tuple(str(k) for k in p) for p, _ in nnx.to_flat_state(ns["params"])
    )
    assert ctx.one(ParamsInitialized).api == "nnx"


def test_without_model_args_a_train_steps_args_are_blamed_on_their_line() -> None:
    source, _ = _program("linen_adam_step")
    cut = "\n".join(line for line in source.splitlines() if not line.startswith("model_args ="))
    with pytest.raises(TypeError) as info:
        run(cut)
    line, _, explanation = getattr(info.value, BLAME_ATTR)
    assert cut.splitlines()[line - 1].startswith("args = (params, batch_stats")
    assert "`args` must be the model's own inputs (here it has 5)" in explanation
    assert "`model_args = (x,)`" in explanation
