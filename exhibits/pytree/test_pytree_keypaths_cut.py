"""``--print keypaths`` on a container with more leaves than the exhibit lists (break-it review
s11: it printed the first 2,000 of 10,000 key paths as if complete): the artefact is then an
object that says how many are left out; a complete list stays a plain JSON list.

Truth: ``jax.tree_util.tree_flatten_with_path`` here, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import jax

from exhibits.pytree import probe
from testkit import run_cli


def keypaths_printed(tmp_path: Path, n: int) -> object:
    path = tmp_path / "leaves.py"
    path.write_text(f"def f(x):\n    return x\n\n\nargs = ([float(i) for i in range({n})],)\n")
    out = run_cli("run", "pytree", str(path), "--print", "keypaths")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def truth(n: int) -> list[str]:
    args = ([float(i) for i in range(n)],)
    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(args)[0]]


def test_a_cut_keypaths_list_says_how_many_are_left_out(tmp_path: Path) -> None:
    n = probe.MAX_LEAVES + 500
    got = keypaths_printed(tmp_path, n)
    assert isinstance(got, dict)
    assert got == {
        "keypaths": truth(n)[: probe.MAX_LEAVES],
        "leaves_omitted": 500,
        "num_leaves": n,
    }


def test_a_complete_keypaths_list_is_a_plain_list(tmp_path: Path) -> None:
    n = probe.MAX_LEAVES
    assert keypaths_printed(tmp_path, n) == truth(n)
