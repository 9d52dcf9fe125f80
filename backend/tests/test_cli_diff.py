"""``jaxscope diff EXHIBIT A.py B.py --print ARTEFACT`` (issue 18): one artefact of two snippets.
A jaxpr is compared structurally by default (issue 31: the eqns that differ, checked against
JAX's own jaxprs computed here); ``--text`` is the unified diff, checked against ``difflib`` over
JAX's own texts."""

from __future__ import annotations

import difflib
import subprocess
from collections.abc import Callable
from pathlib import Path

import jax
import jax.extend.core
import jax.numpy as jnp

from testkit import run_cli

A = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2.0\n\nargs = (jnp.ones(3),)\n"
B = (
    "import jax.numpy as jnp\n\ndef f(x):\n    y = jnp.cos(jnp.sin(x))\n    return y * 2.0\n\n"
    "args = (jnp.ones(3),)\n"
)


def diff(
    tmp_path: Path, a: str, b: str, *extra: str, exhibit: str = "tracing"
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "a.py").write_text(a)
    (tmp_path / "b.py").write_text(b)
    return run_cli("diff", exhibit, str(tmp_path / "a.py"), str(tmp_path / "b.py"), *extra)


def test_two_versions_print_the_unified_diff_of_jaxs_texts(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, B, "--print", "jaxpr", "--text")
    assert proc.returncode == 1, proc.stderr  # different, as diff(1) says
    x = jnp.ones(3)
    a = str(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(x))
    b = str(jax.make_jaxpr(lambda x: jnp.cos(jnp.sin(x)) * 2.0)(x))
    want = difflib.unified_diff(
        a.splitlines(keepends=True),
        b.splitlines(keepends=True),
        fromfile=str(tmp_path / "a.py"),
        tofile=str(tmp_path / "b.py"),
    )
    assert proc.stdout == "".join(line if line.endswith("\n") else line + "\n" for line in want)
    assert "+    c:f32[3] = cos b" in proc.stdout


def test_the_same_artefact_is_no_diff(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, A, "--print", "jaxpr")
    assert (proc.returncode, proc.stdout) == (0, "")


def test_a_failing_run_or_an_unknown_artefact_is_trouble(tmp_path: Path) -> None:
    proc = diff(tmp_path, A, A, "--print", "nope")
    assert proc.returncode == 2 and "has no artefact 'nope'" in proc.stderr
    broken = A.replace("jnp.sin(x)", "jnp.sin(x) + undefined_name")
    proc = diff(tmp_path, A, broken, "--print", "jaxpr")
    assert proc.returncode == 2
    assert "b.py failed" in proc.stderr and "NameError" in proc.stderr


def test_a_flag_of_another_exhibit_or_an_overlong_file_is_refused_as_run_refuses_it(
    tmp_path: Path,
) -> None:
    """``diff`` checks its flags and files as ``run`` does: ``--in-axes`` is not the tracing
    exhibit's (``run`` refuses it; ``diff`` ran both files and dropped it), and a file past
    the code limit is refused by name before anything runs."""
    from jaxscope.protocol import MAX_CODE_CHARS

    (tmp_path / "a.py").write_text(A)
    run = run_cli("run", "tracing", str(tmp_path / "a.py"), "--in-axes", "1")
    assert run.returncode == 2 and "not of tracing" in run.stderr
    proc = diff(tmp_path, A, B, "--print", "jaxpr", "--in-axes", "1")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "jaxscope diff: --in-axes is an option of" in proc.stderr
    assert "not of tracing" in proc.stderr
    long = A + "#" * MAX_CODE_CHARS + "\n"
    proc = diff(tmp_path, A, long, "--print", "jaxpr")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert f"the code on {tmp_path / 'b.py'} is longer than {MAX_CODE_CHARS:,}" in proc.stderr


MLP = """import jax
import jax.numpy as jnp


def f(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


args = (
    [(jnp.ones((4, 8)), jnp.zeros(8)), (jnp.ones((8, 8)), jnp.zeros(8)),
     (jnp.ones((8, 2)), jnp.zeros(2))],
    jnp.ones((3, 4)),
)
"""
MLP_TANH = MLP.replace("jax.nn.relu", "jnp.tanh")


def _make_jaxpr(code: str) -> jax.extend.core.ClosedJaxpr:
    """JAX's own jaxpr of the snippet's ``f`` on its ``args``, as the tracing exhibit stages it."""
    scope: dict[str, object] = {}
    exec(code, scope)
    f, args = scope["f"], scope["args"]
    assert callable(f) and isinstance(args, tuple)
    return jax.make_jaxpr(f)(*args)


def test_relu_to_tanh_is_the_changed_eqns_only_while_the_text_diff_marks_most_lines(
    tmp_path: Path,
) -> None:
    """The structural diff (the default) names exactly the eqns whose primitive changed in JAX's
    own jaxprs (``custom_jvp_call`` of ``relu`` -> ``tanh``, once per hidden layer), with their
    source lines, a count, and the rest as the same; the line diff (``--text``) marks nearly every
    line, because every later variable is renamed."""
    ja, jb = _make_jaxpr(MLP), _make_jaxpr(MLP_TANH)
    assert len(ja.eqns) == len(jb.eqns) == 11
    changed = [
        i
        for i, (x, y) in enumerate(zip(ja.eqns, jb.eqns, strict=True))
        if x.primitive != y.primitive
    ]
    assert changed == [3, 7]
    for i in changed:
        assert (ja.eqns[i].primitive.name, jb.eqns[i].primitive.name) == ("custom_jvp_call", "tanh")
    for i in set(range(11)) - set(changed):  # the same up to variable names
        x, y = ja.eqns[i], jb.eqns[i]
        assert (x.primitive, x.params) == (y.primitive, y.params)
        assert [v.aval for v in x.outvars] == [v.aval for v in y.outvars]

    proc = diff(tmp_path, MLP, MLP_TANH, "--print", "jaxpr")
    assert proc.returncode == 1, proc.stderr
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    lines = proc.stdout.splitlines()
    assert lines[:3] == [
        f"--- {a}",
        f"+++ {b}",
        "jaxpr: 2 eqns differ (11 eqns -> 11; 9 the same up to variable names)",
    ]
    marked = [line for line in lines if line[:2] in ("~ ", "- ", "+ ")]
    assert marked == [f"~ eqn {i} -> eqn {i}: primitive custom_jvp_call -> tanh" for i in changed]
    assert lines.count(f"      {a}:7: x = jax.nn.relu(x @ w + b)") == 2
    assert lines.count(f"      {b}:7: x = jnp.tanh(x @ w + b)") == 2
    assert lines.count("  + tanh[accuracy=None] f32[3,8] -> f32[3,8]") == 2
    assert lines[-3:] == [
        f"= eqns {i}-{i + 2} -> {i}-{i + 2} the same: dot_general, broadcast_in_dim, add"
        for i in (0, 4, 8)
    ]

    text = diff(tmp_path, MLP, MLP_TANH, "--print", "jaxpr", "--text")
    assert text.returncode == 1, text.stderr
    want = difflib.unified_diff(
        str(ja).splitlines(keepends=True),
        str(jb).splitlines(keepends=True),
        fromfile=str(a),
        tofile=str(b),
    )
    assert text.stdout == "".join(line if line.endswith("\n") else line + "\n" for line in want)
    differing = [
        line
        for line in text.stdout.splitlines()[2:]
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]
    assert len(differing) > 40  # every renamed line, against the structural diff's 2 eqns


def test_an_inserted_eqn_is_one_eqn_more_and_its_reader_reads_another_value(
    tmp_path: Path,
) -> None:
    """``cos`` put between ``sin`` and ``mul``: JAX's jaxprs have one eqn more, and the ``mul``
    now reads the ``cos``; the ``sin`` is the same. The text diff would mark every line."""
    ja = jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3))
    jb = jax.make_jaxpr(lambda x: jnp.cos(jnp.sin(x)) * 2.0)(jnp.ones(3))
    assert [e.primitive.name for e in ja.eqns] == ["sin", "mul"]
    assert [e.primitive.name for e in jb.eqns] == ["sin", "cos", "mul"]
    proc = diff(tmp_path, A, B, "--print", "jaxpr")
    assert proc.returncode == 1, proc.stderr
    b = tmp_path / "b.py"
    assert proc.stdout.splitlines()[2:] == [
        "jaxpr: 2 eqns differ (2 eqns -> 3; 1 the same up to variable names)",
        f"+ eqn 1 only in {b}: cos[accuracy=None] f32[3] -> f32[3]",
        f"      {b}:4: y = jnp.cos(jnp.sin(x))",
        "~ eqn 1 -> eqn 2: reads another value (operand 0)",
        "  - mul[out_dtype=None] f32[3], 2.0:f32[] -> f32[3]",
        f"      {tmp_path / 'a.py'}:4: return jnp.sin(x) * 2.0",
        "  + mul[out_dtype=None] f32[3], 2.0:f32[] -> f32[3]",
        f"      {b}:5: return y * 2.0",
        "= eqn 0 -> 0 the same: sin",
    ]


def test_a_derived_jaxpr_is_compared_structurally_and_stablehlo_as_text(tmp_path: Path) -> None:
    """The jvp exhibit's ``jvp_jaxpr`` is found as its own event's structured view and compared
    structurally: the eqns only in the second run are JAX's own jvp jaxpr's ``cos``/``sin``/
    ``mul``/``neg`` of the inserted ``cos`` (``jax.make_jaxpr`` of ``jax.jvp``), and both ``mul``
    by 2.0 now read other values. StableHLO has no jaxpr view: a unified diff, as before."""

    def jvp_of(f: Callable[[jax.Array], jax.Array]) -> jax.extend.core.ClosedJaxpr:
        x = jnp.ones(3)
        return jax.make_jaxpr(lambda x, t: jax.jvp(f, (x,), (t,)))(x, x)

    ja = jvp_of(lambda x: jnp.sin(x) * 2.0)
    jb = jvp_of(lambda x: jnp.cos(jnp.sin(x)) * 2.0)
    proc = diff(tmp_path, A, B, "--print", "jvp_jaxpr", exhibit="jvp")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    n_a, n_b = len(ja.eqns), len(jb.eqns)
    assert (
        lines[2]
        == f"jvp_jaxpr: 6 eqns differ ({n_a} eqns -> {n_b}; 3 the same up to variable names)"
    )
    added = [line.split(": ")[1].split("[")[0].split(" ")[0] for line in lines if line[:2] == "+ "]
    assert added == [e.primitive.name for e in jb.eqns[3:7]] == ["cos", "sin", "mul", "neg"]
    assert [line for line in lines if line[:2] == "~ "] == [
        "~ eqn 3 -> eqn 7: reads another value (operand 0)",
        "~ eqn 4 -> eqn 8: reads another value (operand 0)",
    ]
    same = ", ".join(e.primitive.name for e in ja.eqns[:3])
    assert lines[-1] == f"= eqns 0-2 -> 0-2 the same: {same}"

    hlo = diff(tmp_path, A, B, "--print", "stablehlo", exhibit="stations")
    assert hlo.returncode == 1, hlo.stderr
    assert hlo.stdout.splitlines()[2].startswith("@@ ")
    assert "+    %1 = stablehlo.cosine %0 : tensor<3xf32>" in hlo.stdout
