"""A sharding annotation inside ``f`` that the compiled program does not keep is a finding
(issue 15, "Silent changes are findings"): the ``cases/SH*`` snippets (public reports cited in
their docstrings) run through the real sandbox with ``jaxscope run sharding FILE --print
annotations``.

The truth, apart from the exhibit: each snippet run as plain Python in a fresh process (8 CPU
devices by its own XLA flag) calls ``f`` and reads the output's ``sharding``: whether it is
equivalent (JAX's ``is_equivalent_to``) to ``NamedSharding(mesh, spec)`` of the spec the snippet
asked for, and whether it is fully replicated. The snippet's text gives the line. A fixed case
must show the annotation kept and exit 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from exhibits.conftest import CASES, jaxscope_run

# Runs a snippet as plain Python: f(*args)'s sharding against the spec the snippet asked for.
PLAIN = """
import json, runpy, sys
import jax
from jax.sharding import NamedSharding, PartitionSpec as P
ns = runpy.run_path(sys.argv[1])
out = jax.tree.leaves(ns["f"](*ns["args"]))[int(sys.argv[3])]
asked = NamedSharding(ns["mesh"], P(*json.loads(sys.argv[2])))
print(json.dumps({
    "kept": bool(out.sharding.is_equivalent_to(asked, out.ndim)),
    "replicated": bool(out.sharding.is_fully_replicated),
    "shape": list(out.shape),
    "devices": len(jax.devices()),
}))
"""


def printed(name: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = jaxscope_run("sharding", CASES / f"{name}.py", "--print", "annotations")
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def plain(name: str, spec: list[str | None], leaf: int = 0) -> dict[str, Any]:
    """``f(*args)``'s output ``leaf`` against ``spec``, in plain Python."""
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN, str(CASES / f"{name}.py"), json.dumps(spec), str(leaf)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def line_of(name: str, piece: str) -> int:
    text = (CASES / f"{name}.py").read_text().splitlines()
    (line,) = [i for i, t in enumerate(text, 1) if piece in t]
    return line


CASES_ASKED = [
    # jax#26946: 17 rows over 8 devices, with_sharding_constraint in jit
    (
        "SH01_indivisible_constraint",
        ["data", None],
        "with_sharding_constraint(",
        "sharding_constraint",
    ),
    # jax#6221: device_put inside jit
    ("SH02_device_put_in_jit", ["batch", None], "return jax.", None),
]


@pytest.mark.parametrize(("case", "spec", "piece", "primitive"), CASES_ASKED)
def test_an_annotation_the_program_does_not_keep_is_a_finding(
    case: str, spec: list[str | None], piece: str, primitive: str | None
) -> None:
    name = f"{case}_broken"
    truth = plain(name, spec)
    assert truth["devices"] == 8 and not truth["kept"] and truth["replicated"]
    code, found, stderr = printed(name)
    assert code == 3 and "ShardingNotKept" in stderr
    (a,) = found
    assert a["primitive"] == (primitive or "device_put")
    assert a["line"] == line_of(name, piece) and f"line {a['line']}" in stderr
    assert a["kept"] is False and a["got"] == "replicated" and a["where"] == "output[0]"
    assert a["shape"] == truth["shape"]
    assert a["spec"] == str(tuple(spec)).replace("(", "P(", 1).replace("None)", "None)")


def test_the_reasons_name_the_cause() -> None:
    _, (a,), _ = printed("SH01_indivisible_constraint_broken")
    assert (
        "axis 0 of size 17 does not divide among the 8 devices of mesh axis 'data'" in a["reason"]
    )
    _, (b,), _ = printed("SH02_device_put_in_jit_broken")
    assert "device_put to a sharding lowers to nothing" in b["reason"]


@pytest.mark.parametrize(("case", "spec", "piece", "primitive"), CASES_ASKED)
def test_the_fixed_annotation_is_kept(
    case: str, spec: list[str | None], piece: str, primitive: str | None
) -> None:
    name = f"{case}_fixed"
    truth = plain(name, spec)
    assert truth["kept"] and not truth["replicated"]
    code, found, _ = printed(name)
    assert code == 0
    (a,) = found
    assert a["kept"] is True and a["line"] == line_of(name, "with_sharding_constraint(")
    assert a["shape"] == truth["shape"]


SPECS: list[list[str | None]] = [[], ["x"], ["y"]]  # C16's first three specs


def test_an_eager_device_put_is_not_a_finding() -> None:
    """C16: f, called as the user calls it (not jitted), places each copy as asked; only the
    exhibit's jax.jit(f) drops the device_puts, which is said but not a finding."""
    truth = [plain("C16_spec_table", spec, i) for i, spec in enumerate(SPECS)]
    assert all(t["kept"] for t in truth)  # eagerly, each copy is placed as asked
    code, found, stderr = printed("C16_spec_table")
    assert code == 0 and "ShardingNotKept" not in stderr
    assert [a["user_jit"] for a in found] == [False] * 6
    assert [a["kept"] for a in found][:3] == [True, False, False]  # under jax.jit(f)


UNEVEN_INSIDE = """\
import os
FLAG = " --xla_force_host_platform_device_count=8"
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + FLAG
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


@jax.jit
def f(x):
    y = jax.lax.with_sharding_constraint(jnp.sin(x), NamedSharding(mesh, P("data", None)))
    return jnp.cos(y) * 2


args = (jnp.ones((17, 256)),)
"""

# The compiled program's per-device shapes of f, in plain Python: the sine runs on 3 rows per
# device (17 rows split over 8 devices, padded to 24): XLA kept the uneven split.
PLAIN_HLO = """
import runpy, sys
ns = runpy.run_path(sys.argv[1])
print(ns["f"].lower(*ns["args"]).compile().as_text())
"""


def test_an_uneven_split_inside_f_is_not_measured_and_not_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "uneven_inside.py"
    path.write_text(UNEVEN_INSIDE)
    hlo = subprocess.run(
        [sys.executable, "-c", PLAIN_HLO, str(path)], capture_output=True, text=True, timeout=300
    )
    assert hlo.returncode == 0, hlo.stderr
    assert any("sine(" in line and "f32[3,256]" in line for line in hlo.stdout.splitlines())
    proc = jaxscope_run("sharding", path, "--print", "annotations")
    assert proc.returncode == 0, proc.stderr  # no finding: the program keeps it
    (a,) = json.loads(proc.stdout)
    assert (a["kept"], a["got"], a["where"]) == (None, "not measured", "inside f")
    assert "ShardingNotKept" not in proc.stderr
