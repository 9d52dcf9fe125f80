"""The tf_bridge exhibit's tests (design 0066), against a truth computed in a fresh process of
the TensorFlow venv with nothing of jaxscope in it: plain JAX for ``f``, plain TensorFlow for
``tf_f``, and jax2tf / jax.export / tf2jax called as a user would.

One ``jaxscope run tf_bridge dense.py --json`` (the real sandbox, a TensorFlow worker) and one
truth process for the module; one of the error examples per suite (all under ``make
test-all``). Skipped, with the reason, where ``.venv-tf`` is not installed (``make tf``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFailed, RunFinished
from jaxscope.sandbox.kinds import kind_problem, tf_python

from exhibits.registry import EXHIBITS
from testkit import sample, sampled_params

from .events import (
    EVENTS,
    Jax2tfOutputsCompared,
    SavedModelLoaded,
    Tf2jaxConverted,
    TfGraphTraced,
    XlaCallModuleRead,
)

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLE = HERE / "examples" / "dense.py"
JAXSCOPE = Path(sys.executable).parent / "jaxscope"
# TensorFlow's import alone takes 6-20 s on the loaded 2-core machine.
TIMEOUT_S = 300

pytestmark = pytest.mark.skipif(kind_problem("tf") is not None, reason=str(kind_problem("tf")))

# The truth: the example run as a plain script, then each side computed by its own library.
TRUTH = r"""
import functools, hashlib, json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np, jax, jax.numpy as jnp, tensorflow as tf, tf2jax
from jax.experimental import jax2tf

ns = {"__name__": "example"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), ns)
f, args, poly, tf_f = ns["f"], ns["args"], ns.get("polymorphic_shapes"), ns["tf_f"]
sym = jax.export.symbolic_args_specs(args, poly)
specs = [tf.TensorSpec([d if isinstance(d, int) else None for d in s.shape], s.dtype) for s in sym]
tf_fn = tf.function(jax2tf.convert(f, polymorphic_shapes=poly), autograph=False)

traces = (functools.partial(tf_fn.get_concrete_function, *specs),
          functools.partial(jax.export.export(jax.jit(f)), *sym))
concrete, exported = [call() for call in traces]  # one call site for both
(op,) = [o for o in concrete.graph.get_operations() if o.type == "XlaCallModule"]
module = op.get_attr("module")

def total(out):
    return sum(jnp.sum(v) for v in jax.tree_util.tree_leaves(out))

jax_out = np.asarray(f(*args))
jax_grads = [np.asarray(g) for g in jax.grad(lambda *a: total(f(*a)), argnums=(0, 1, 2))(*args)]
tf_args = [tf.constant(a) for a in args]
tf_out = tf_f(*tf_args).numpy()
with tf.GradientTape() as tape:
    tape.watch(tf_args)
    y = tf.reduce_sum(tf_f(*tf_args))
tf_grads = [g.numpy() for g in tape.gradient(y, tf_args)]
bridged = tf_fn(*tf_args).numpy()
jax_fn, params = tf2jax.convert(tf.function(tf_f), *tf_args)
print(json.dumps({
    "ops": [o.type for o in concrete.graph.get_operations()],
    "same_bytes": module == exported.mlir_module_serialized,
    "module_sha256": hashlib.sha256(module).hexdigest(),
    "stablehlo": exported.mlir_module(),
    "platforms": [p.decode() for p in op.get_attr("platforms")],
    "version": op.get_attr("version"),
    "sout": [[-1 if d is None else d for d in tf.TensorShape(s).as_list()]
             for s in op.get_attr("Sout")],
    "in_avals": [str(a) for a in exported.in_avals],
    "out_avals": [str(a) for a in exported.out_avals],
    "jax_out": jax_out.tolist(),
    "jax_grads": [g.tolist() for g in jax_grads],
    "tf_out": tf_out.tolist(),
    "tf_grads": [g.tolist() for g in tf_grads],
    "bridged_diff": float(np.max(np.abs(bridged - jax_out))),
    "tf2jax_jaxpr": str(jax.make_jaxpr(lambda *a: jax_fn(params, *a))(*args)),
    "tf_version": tf.__version__,
}))
"""


def run_cli(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(JAXSCOPE), "run", EXHIBIT, str(path), *extra],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def parse(text: str) -> list[EventBase]:
    return [EVENT_ADAPTER.validate_json(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def events() -> list[EventBase]:
    done = run_cli(EXAMPLE, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return parse(done.stdout)


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [str(tf_python()), "-c", TRUTH, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def one(events: list[EventBase], kind: type[Any]) -> Any:
    (found,) = [e for e in events if isinstance(e, kind)]
    return found


def without_locations(stablehlo: str) -> list[str]:
    """The module's text less its debug locations (the Python call sites that traced it)."""
    lines = [line for line in stablehlo.splitlines() if not line.startswith("#loc")]
    return [re.sub(r" loc\([^()]*(\([^()]*\))?[^()]*\)", "", line) for line in lines]


def test_graph_and_call_module_are_jax2tfs(events: list[EventBase], truth: dict[str, Any]) -> None:
    graph = one(events, TfGraphTraced)
    assert [op.type for op in graph.ops] == truth["ops"]
    assert graph.tf_version == truth["tf_version"]
    assert [s.shape for s in graph.input_signature] == ["(None, 3)", "(3, 2)", "(2,)"]
    assert "XlaCallModule" in graph.graph_def and "bytes of StableHLO bytecode" in graph.graph_def
    module = one(events, XlaCallModuleRead)
    # The fact the card states, established in the truth process: the op's module is the bytes
    # jax.export makes of jax.jit(f) from the same call site.
    assert truth["same_bytes"] is True
    assert module.same_as_export is True
    assert module.module_sha256 == module.export_sha256
    assert (module.platforms, module.version, module.sout) == (
        truth["platforms"],
        truth["version"],
        truth["sout"],
    )
    assert module.sout == [[-1, 2]]  # the batch dimension is symbolic: TensorFlow says -1
    assert (module.in_avals, module.out_avals) == (truth["in_avals"], truth["out_avals"])
    assert module.out_avals == ["float32[b,2]"]
    assert module.uses_global_constants
    assert without_locations(module.stablehlo) == without_locations(truth["stablehlo"])
    assert "stablehlo.custom_call @shape_assertion" in module.stablehlo


def test_outputs_and_gradients_across_the_bridge(
    events: list[EventBase], truth: dict[str, Any]
) -> None:
    import numpy as np

    compared = one(events, Jax2tfOutputsCompared)
    (out,) = compared.outputs
    assert out.shape == [4, 2] and out.max_abs_diff == pytest.approx(
        truth["bridged_diff"], abs=1e-6
    )
    assert out.max_abs_diff < 1e-5
    # the values shown are plain JAX's, printed
    assert np.allclose(
        np.array(truth["jax_out"]),
        np.fromstring(out.jax_value.replace("[", " ").replace("]", " "), sep=" ").reshape(4, 2),
        atol=1e-5,
    )
    assert [g.path for g in compared.gradients] == ["d/dargs[0]", "d/dargs[1]", "d/dargs[2]"]
    assert all(g.max_abs_diff < 1e-5 for g in compared.gradients)
    assert "XlaCallModule" in compared.gradient_ops
    saved = one(events, SavedModelLoaded)
    assert saved.signature == "serving_default"
    assert {f.path for f in saved.files} >= {"saved_model.pb", "fingerprint.pb"}
    assert [i.shape for i in saved.inputs] == ["(None, 3)", "(3, 2)", "(2,)"]
    assert [o.shape for o in saved.outputs] == ["(None, 2)"]
    assert all(c.max_abs_diff < 1e-5 for c in saved.compared)
    text = EXHIBITS[EXHIBIT].artefacts["roundtrip"](events)
    assert text is not None
    table = json.loads(text)
    assert set(table) == {
        "jax2tf_outputs",
        "jax2tf_gradients",
        "saved_model_outputs",
        "tf2jax_outputs",
        "tf2jax_gradients",
    }
    assert table["jax2tf_outputs"] == {"out": out.max_abs_diff}


def test_tf2jax_against_tensorflow(events: list[EventBase], truth: dict[str, Any]) -> None:
    import numpy as np

    converted = one(events, Tf2jaxConverted)
    assert converted.jaxpr.text == truth["tf2jax_jaxpr"]
    # each eqn beside the op whose conversion traced it, and that op's line in tf_f
    rows = [(e.primitive, e.tf_type) for e in converted.eqns]
    assert rows == [
        ("dot_general", "MatMul"),
        ("broadcast_in_dim", "AddV2"),
        ("add", "AddV2"),
        ("tanh", "Tanh"),
    ]
    lines = {op.type: op.source.line if op.source else None for op in converted.tf_ops}
    source = EXAMPLE.read_text().splitlines()
    matmul, tanh = lines["MatMul"], lines["Tanh"]
    assert matmul is not None and tanh is not None
    assert "tf.matmul" in source[matmul - 1] and "tf.tanh" in source[tanh - 1]
    # TensorFlow's own outputs and gradients (the truth) against the ones shown
    (out,) = converted.outputs
    shown = np.fromstring(out.tf_value.replace("[", " ").replace("]", " "), sep=" ")
    assert np.allclose(shown, np.array(truth["tf_out"]).ravel(), atol=1e-5)
    assert out.max_abs_diff < 1e-5
    assert len(converted.gradients) == 3 and all(g.max_abs_diff < 1e-4 for g in converted.gradients)
    for g, t in zip(converted.gradients, truth["tf_grads"], strict=True):
        shown = np.fromstring(g.tf_value.replace("[", " ").replace("]", " "), sep=" ")
        assert np.allclose(shown, np.array(t).ravel(), atol=1e-5)


def test_golden_is_the_probes(events: list[EventBase]) -> None:
    lines = (HERE / "golden" / "dense.events.jsonl").read_text().splitlines()
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines if line.strip()]
    assert isinstance(stream[-1], RunFinished)

    def own(es: list[EventBase]) -> list[dict[str, Any]]:
        dumped = [e.model_dump(exclude={"seq", "run_id"}) for e in es if isinstance(e, EVENTS)]
        for event in dumped:
            for file in event.get("files", []):
                # fingerprint.pb holds hashes as varints: its size moves by a byte between runs
                if file["path"] == "fingerprint.pb":
                    file["bytes"] = None
        return dumped

    assert own(stream) == own(events)


def test_print_artefacts(events: list[EventBase]) -> None:
    artefacts = EXHIBITS[EXHIBIT].artefacts
    assert artefacts["stablehlo"](events) == one(events, XlaCallModuleRead).stablehlo
    graph = artefacts["tf_graph"](events)
    assert graph is not None and graph.startswith("node {")


# Each error example: the line the run must point at, and words of the message.
ERRORS = [
    ("unsupported_op", "tf_f", "tf.linalg.det", "MatrixDeterminant"),
    ("poly_mismatch", "<module>", "polymorphic_shapes =", "XlaCallModule"),
    ("inconclusive", "f", "if x.shape[0] > 2", "inconclusive"),
]


@pytest.mark.parametrize(("name", "function", "code", "words"), sample(ERRORS, 1, key=EXHIBIT))
def test_errors_point_at_the_users_line(name: str, function: str, code: str, words: str) -> None:
    path = HERE / "examples" / f"{name}.py"
    done = run_cli(path, "--json")
    assert done.returncode != 0
    failed = parse(done.stdout)[-1]
    assert isinstance(failed, RunFailed)
    assert words in failed.message
    assert failed.source is not None
    assert failed.source.function == function
    assert code in path.read_text().splitlines()[failed.source.line - 1]


# Inputs a break-it review found blamed on f's def line (each a TensorFlow worker's start, ~15 s:
# one per suite, all under `make test-all`): the snippet as a user writes it, the line the run
# must point at, and words of the message.
HEAD = "import jax.numpy as jnp\nimport numpy as np\nimport tensorflow as tf\n\n\ndef f(x):\n"
HEAD += "    return jnp.sin(x)\n\n\nargs = (np.ones((4, 3), np.float32),)\n"
MISBLAMED = [
    (
        HEAD + 'polymorphic_shapes = ["(b, 3, 2)"]\n',
        "polymorphic_shapes =",
        "polymorphic_shapes[0] = '(b, 3, 2)' names 3 dimensions, but args[0] has shape (4, 3)",
    ),
    (
        HEAD + 'polymorphic_shapes = ["(b,)"]\n',
        "polymorphic_shapes =",
        "polymorphic_shapes[0] = '(b,)' names 1 dimension, but args[0] has shape (4, 3)",
    ),
    (HEAD + "tf_f = 3\n", "tf_f = 3", "tf_f must be a TensorFlow function"),
    (
        HEAD + "\n\ndef tf_f(x, y):\n    return tf.sin(x) * y\n",
        "def tf_f(x, y):",
        "missing a required argument: 'y'",
    ),
]


@pytest.mark.parametrize(
    ("source", "code", "words"),
    sampled_params(
        MISBLAMED, 1, key=f"{EXHIBIT}-misblamed", ids=["rank3", "rank1", "tf_f_int", "tf_f_arity"]
    ),
)
def test_misblamed_inputs_point_at_their_line(
    source: str, code: str, words: str, tmp_path: Path
) -> None:
    from testkit import run_cli as run_cli_in_process

    path = tmp_path / "snippet.py"
    path.write_text(source)
    done = run_cli_in_process("run", EXHIBIT, str(path), "--json")
    assert done.returncode != 0
    failed = parse(done.stdout)[-1]
    assert isinstance(failed, RunFailed)
    assert words in failed.message
    assert failed.source is not None
    assert code in source.splitlines()[failed.source.line - 1]
