"""Contract tests: the private JAX names ``jaxscope.internals.export_dims`` relies on.

They fail loudly when a JAX upgrade renames or reshapes ``shape_poly.solve_dim_vars`` (its
arguments and its 3-tuple: solution, ``ShapeConstraints``, synthetic dimensions),
``ShapeConstraint`` (``comp``, ``left``, ``right``, ``error_message_and_inputs``),
``Comparator``, ``ShapeEvaluator`` or ``all_dim_vars``, or stops asserting the constraints in
the exported module's ``shape_assertion`` custom calls in the same order with the same messages.
"""

from __future__ import annotations

import inspect
import re

import jax
import numpy as np
import pytest
from jax._src.export import shape_poly
from jaxscope.internals.export_dims import concrete_shape, dim_values, solved_dims


def exported(*shapes: str) -> jax.export.Exported:
    args = (np.ones((4, 8), np.float32), np.ones((2,), np.float32))
    specs = jax.export.symbolic_args_specs(args, shapes)
    return jax.export.export(jax.jit(lambda x, y: x.sum() + y.sum()))(*specs)


def test_private_names_and_signatures() -> None:
    assert list(inspect.signature(shape_poly.solve_dim_vars).parameters) == [
        "args_avals",
        "args_kwargs_tree",
    ]
    assert {f.name for f in shape_poly.ShapeConstraint.__dataclass_fields__.values()} == {
        "comp",
        "left",
        "right",
        "error_message_pieces",
    }
    assert list(
        inspect.signature(shape_poly.ShapeConstraint.error_message_and_inputs).parameters
    ) == [
        "self",
        "eval",
    ]
    assert {c.name for c in shape_poly.Comparator} == {"EQ", "GEQ"}
    assert callable(shape_poly.ShapeEvaluator({}).evaluate)
    # the module's wrapper computes the dimension variables through solve_dim_vars and asserts
    # its constraints in order (compute_dim_vars_from_arg_shapes)
    src = inspect.getsource(shape_poly.compute_dim_vars_from_arg_shapes)
    assert "solve_dim_vars(" in src and "shape_constraints.shape_assertions(" in src


def test_constraints_are_the_modules_assertions() -> None:
    exp = exported("(2*b, 8)", "(b,)")
    solved = solved_dims(exp.in_avals, exp.in_tree)
    assert solved.solution == {"b": "floordiv(args[0].shape[0], 2)"}
    assert [c.text for c in solved.constraints] == [
        "mod(args[0].shape[0], 2) == 0",
        "floordiv(args[0].shape[0], 2) >= 1",
        "args[1].shape[0] == floordiv(args[0].shape[0], 2)",
    ]
    messages = re.findall(r'error_message = "((?:[^"\\]|\\.)*)"', exp.mlir_module())
    assert [c.message for c in solved.constraints] == messages
    assert solved.synthetic == (("args[0].shape[0]", 0, 0), ("args[1].shape[0]", 1, 0))


def test_dim_values_and_concrete_shapes() -> None:
    exp = exported("(2*b, 8)", "(b,)")
    assert dim_values(exp.in_avals, exp.in_tree, [(10, 8), (5,)]) == {"b": 5}
    assert concrete_shape(exp.in_avals[0].shape, {"b": 5}) == (10, 8)
    # the shapes break a constraint: JAX's own error, as the module's assertion words it
    with pytest.raises(
        ValueError, match="Division had remainder 1 when computing the value of 'b'"
    ):
        dim_values(exp.in_avals, exp.in_tree, [(9, 8), (5,)])
    with pytest.raises(ValueError, match=r"Found inconsistency between dimension size args\[1\]"):
        dim_values(exp.in_avals, exp.in_tree, [(10, 8), (4,)])


def test_no_symbolic_dimension() -> None:
    exp = exported("(4, 8)", "(2,)")
    solved = solved_dims(exp.in_avals, exp.in_tree)
    assert solved.solution == {} and solved.constraints == ()
