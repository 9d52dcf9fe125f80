"""The exhibit template (``exhibits/_template/``) kept working, by doing what
``docs/adding-an-exhibit.md`` says, step by step, in a temporary tree.

The page's "Steps" section is parsed: each ``sh`` block runs as written, and the registry block
(a fenced block whose info string names ``exhibits/registry.py``) is inserted at the end of that
table. The steps run in a private mount namespace (bubblewrap, as the sandbox itself:
``--dev-bind / /``) in which the checkout is bound read-only, and copies of ``exhibits/`` and
``frontend/src/gen/`` are bound writable over the checkout's. That way the page's commands run
verbatim at the repository root, the sandbox's workers import the copy (they import
``exhibits`` from its path in the checkout), and the checkout itself is never written. The copy
is registered, its types are generated, its golden is recorded through the real sandbox
(``jaxscope run``), and its pytest, vitest and type check run there. The golden recorded there
must hold the same exhibit events as the template's own golden.

And the count of issue 36 ("files touched to add a trivial exhibit: its folder + 1 registry
line"): a step that needed any other file of the checkout would fail on the read-only bind, and
of the copies only the new folder, the registry (by the one entry) and generated files change.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "adding-an-exhibit.md"
TEMPLATE = REPO / "exhibits" / "_template"
NEW_ID = "my_exhibit"

# Where each registry block goes: the file, the line that opens its table, the line that closes
# it (the entry is inserted just before), and the indent of an entry.
TABLES: dict[str, tuple[str, str, str]] = {
    "exhibits/registry.py": ("EXHIBITS: dict[str, Exhibit] = {", "    ]\n}\n", " " * 8),
}
# What ``npm run gen`` writes (frontend/src/gen/): a registered exhibit may change any of them.
GENERATED = {"protocol.ts", "protocol.schema.json", "run-options.schema.json", "exhibits.ts"}
# Written by the tools the steps run, not part of a change (git ignores them).
NOT_SOURCE = ("__pycache__", ".pytest_cache", ".mypy_cache")

_FENCE = re.compile(r"^( *)```(\S+)(?: +(\S+))?\n(.*?)^\1```$", re.M | re.S)


@dataclass(frozen=True)
class Step:
    """One fenced block of the page's "Steps": ``lang`` ``sh`` (run), or a registry block
    (``target`` names the table's file)."""

    lang: str
    target: str | None
    body: str


def doc_steps(text: str) -> list[Step]:
    """The fenced blocks of the "## Steps" section of ``text``, in order, dedented."""
    match = re.search(r"^## Steps\n(.*?)(?=^## )", text, re.M | re.S)
    assert match, f"{DOC} has no '## Steps' section"
    steps = []
    for fence in _FENCE.finditer(match.group(1)):
        indent, lang, target, body = fence.groups()
        lines = [line.removeprefix(indent) for line in body.splitlines()]
        steps.append(Step(lang=lang, target=target, body="\n".join(lines) + "\n"))
    return steps


def insert_entry(path: Path, target: str, body: str) -> None:
    """Insert ``body`` as the last entry of the table in ``path`` (a copy of ``target``)."""
    opening, closing, indent = TABLES[target]
    text = path.read_text()
    start = text.index(opening)
    end = text.index(closing, start)
    entry = "".join(indent + line + "\n" if line else "\n" for line in body.splitlines())
    path.write_text(text[:end] + entry + text[end:])


def test_the_page_parses_into_the_steps_the_test_runs() -> None:
    steps = doc_steps(DOC.read_text())
    assert [s.lang for s in steps] == ["sh", "python", "sh", "sh", "sh", "sh"]
    assert {s.target for s in steps if s.lang != "sh"} == set(TABLES)
    commands = "".join(s.body for s in steps if s.lang == "sh")
    assert f"cp -r exhibits/_template exhibits/{NEW_ID}" in commands
    assert f"jaxscope run {NEW_ID}" in commands
    # every id in the page's steps is the one this test registers
    ids = set(re.findall(r"exhibits/(\w+)", commands)) - {"_template"}
    assert ids == {NEW_ID}


def own_events(path: Path, types: set[str]) -> list[dict[str, object]]:
    """The events of ``path`` (a ``.events.jsonl``) whose type is in ``types``, without the
    fields a run assigns (``seq``, ``run_id``)."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        {k: v for k, v in e.items() if k not in ("seq", "run_id")}
        for e in events
        if e["type"] in types
    ]


def digests(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root`` but the tools' caches."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not any(part in NOT_SOURCE for part in p.relative_to(root).parts)
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """The paths added, removed or changed between two :func:`digests`."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def test_the_template_works_when_copied_as_the_page_says(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("needs bubblewrap (bwrap), as the sandbox does: apt-get install bubblewrap")
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", ".mypy_cache")
    shutil.copytree(REPO / "exhibits", tree / "exhibits", ignore=ignore)
    shutil.copytree(REPO / "frontend" / "src" / "gen", tree / "gen")
    copies = {"exhibits/registry.py": tree / "exhibits" / "registry.py"}
    registry_before = copies["exhibits/registry.py"].read_text()
    before = {"exhibits": digests(tree / "exhibits"), "gen": digests(tree / "gen")}
    namespace = [
        bwrap,
        "--dev-bind", "/", "/",
        "--ro-bind", str(REPO), str(REPO),
        "--bind", str(tree / "exhibits"), str(REPO / "exhibits"),
        "--bind", str(tree / "gen"), str(REPO / "frontend" / "src" / "gen"),
        # vite and vitest write their bundled config and caches under node_modules (ignored)
        "--bind", str(REPO / "node_modules"), str(REPO / "node_modules"),
        "--chdir", str(REPO),
        "--",
    ]  # fmt: skip
    for step in doc_steps(DOC.read_text()):
        if step.target is not None:
            insert_entry(copies[step.target], step.target, step.body)
            continue
        done = subprocess.run(
            [*namespace, "bash", "-euo", "pipefail", "-c", step.body],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, (
            f"the step\n{step.body}failed ({done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )

    copy = tree / "exhibits" / NEW_ID
    assert (copy / f"test_{NEW_ID}.py").exists()
    # The change is the folder, one registry entry and generated files (the checkout's other
    # files were read-only throughout).
    touched = changed(before["exhibits"], digests(tree / "exhibits"))
    assert {p for p in touched if not p.startswith(f"{NEW_ID}/")} == {"registry.py"}
    lines_before = registry_before.splitlines()
    lines_after = copies["exhibits/registry.py"].read_text().splitlines()
    edits = difflib.SequenceMatcher(a=lines_before, b=lines_after, autojunk=False).get_opcodes()
    [(tag, _, _, start, end)] = [op for op in edits if op[0] != "equal"]
    added = lines_after[start:end]
    assert tag == "insert" and added[0].strip() == "Exhibit(" and f'id="{NEW_ID}",' in added[1]
    assert changed(before["gen"], digests(tree / "gen")) <= GENERATED
    generated_table = (tree / "gen" / "exhibits.ts").read_text()
    assert (
        f'{NEW_ID}: {{ group: "Trace & compile", label: "Avals in/out", worker: "jax" }}'
        in generated_table
    )
    # registered and generated: the template's event is in the copy's types, not in the checkout's
    generated = (tree / "gen" / "protocol.ts").read_text()
    assert "TemplateAvalsRead" in generated
    assert "template_avals_read" in generated
    assert "template_avals_read" not in (REPO / "frontend/src/gen/protocol.ts").read_text()
    # the golden recorded through the sandbox holds the template's own golden events
    types = {"template_avals_read"}
    recorded = own_events(copy / "golden" / "affine.events.jsonl", types)
    assert recorded == own_events(TEMPLATE / "golden" / "affine.events.jsonl", types)
    assert len(recorded) == 2
    # and the checkout is as it was: no copy, no entry
    assert not (REPO / "exhibits" / NEW_ID).exists()
    assert NEW_ID not in (REPO / "exhibits" / "registry.py").read_text()
