"""What ``jax.export`` derives for the dimension variables of a shape-polymorphic export.

``jax.export.export`` wraps the lowered module in a ``main`` that computes each dimension
variable (``b`` of ``"(b, 8)"``) from the actual arguments' shapes and checks the shapes against
the specification with ``shape_assertion`` custom calls. jax 0.10.2 keeps that derivation in
``jax._src.export.shape_poly.solve_dim_vars(in_avals, in_tree)``: the solution (``b`` =
``args[1].shape[0]``, ``b`` = ``floordiv(args[0].shape[0], 2)`` for ``2*b``) and a list of
``ShapeConstraint`` (``args[1].shape[0] >= 1``, ``mod(args[0].shape[0], 2) == 0``, the equalities
between two dimensions given the same variable), each with the pieces of the error message that
the module's ``shape_assertion`` raises. Nothing public exposes either, so this module reads them
and returns plain data; ``backend/tests/test_internals_contract_export.py`` pins what it relies on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jax._src.export import shape_poly


@dataclass(frozen=True)
class DimConstraint:
    """One constraint JAX derived (``ShapeConstraint``): ``left comparator right`` in terms of the
    actual arguments' dimensions (``args[1].shape[0]``), ``comparator`` ``"=="`` or ``">="``.
    ``message`` is the error message template the module's ``shape_assertion`` carries
    (``{0}``, ``{1}``... stand for the values of ``message_inputs``, JAX's expressions)."""

    left: str
    comparator: str
    right: str
    message: str
    message_inputs: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.left} {self.comparator} {self.right}"


@dataclass(frozen=True)
class SolvedDims:
    """``solution``: each dimension variable as JAX computes it from the arguments' dimensions
    (JAX's text, ``{"b": "args[1].shape[0]"}``), in JAX's order (``all_dim_vars``);
    ``constraints``: what JAX checks at call time, in the order of the module's assertions;
    ``synthetic``: the argument dimensions used (``("args[1].shape[0]", flat_index, axis)``)."""

    solution: dict[str, str]
    constraints: tuple[DimConstraint, ...]
    synthetic: tuple[tuple[str, int, int], ...]


def _solve(in_avals: Sequence[Any], in_tree: Any) -> tuple[Any, Any, Any]:
    return shape_poly.solve_dim_vars(tuple(in_avals), in_tree)  # type: ignore[no-any-return]


def solved_dims(in_avals: Sequence[Any], in_tree: Any) -> SolvedDims:
    """The dimension variables of ``in_avals`` (an ``Exported``'s ``in_avals``, its ``in_tree``)
    solved as ``jax.export`` solves them, with the constraints it derived (empty when no
    dimension is symbolic)."""
    solution, constraints, synthetic = _solve(in_avals, in_tree)
    order = shape_poly.all_dim_vars(list(in_avals))
    out: list[DimConstraint] = []
    for c in constraints.constraints:
        # error_message_and_inputs evaluates each symbolic piece: left unevaluated, the inputs
        # print as JAX's expressions and the template's numbering ({0}, {1}: one per distinct
        # expression) is the module's.
        message, inputs = c.error_message_and_inputs(_TextEvaluator())
        out.append(
            DimConstraint(
                left=str(c.left),
                comparator="==" if c.comp == shape_poly.Comparator.EQ else ">=",
                right=str(c.right),
                message=message,
                message_inputs=tuple(str(i) for i in inputs),
            )
        )
    return SolvedDims(
        solution={v: str(solution[v]) for v in order},
        constraints=tuple(out),
        synthetic=tuple((str(n), int(i), int(d)) for n, i, d in synthetic),
    )


class _TextEvaluator(shape_poly.ShapeEvaluator):
    """A ``ShapeEvaluator`` that returns an expression unevaluated (its text is the input)."""

    def __init__(self) -> None:
        super().__init__({})

    def evaluate(self, e: Any) -> Any:
        return e


def dim_values(
    in_avals: Sequence[Any], in_tree: Any, flat_shapes: Sequence[Sequence[int]]
) -> dict[str, int]:
    """The value of each dimension variable for arguments of ``flat_shapes`` (one shape per
    flat argument, in ``in_avals``' order), as the exported ``main`` computes it; raises JAX's
    ``ValueError`` (the shape assertion's message) when the shapes break a constraint."""
    solution, constraints, synthetic = _solve(in_avals, in_tree)
    env: dict[str, Any] = {name: int(flat_shapes[i][d]) for name, i, d in synthetic}
    evaluator = shape_poly.ShapeEvaluator(env)
    constraints.check_statically(evaluator)
    return {v: int(evaluator.evaluate(e)) for v, e in solution.items()}


def concrete_shape(shape: Sequence[Any], values: Mapping[str, int]) -> tuple[int, ...]:
    """``shape`` (an aval's, with dimension expressions) at the dimension variables' ``values``."""
    env: dict[str, Any] = dict(values)
    evaluator = shape_poly.ShapeEvaluator(env)
    return tuple(int(evaluator.evaluate(d)) for d in shape)
