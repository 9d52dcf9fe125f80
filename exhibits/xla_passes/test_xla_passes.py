"""The xla_passes exhibit's tests, each against plain JAX and XLA's own dump in the test: the pass
list is the order of the files a plain ``compile(compiler_options=...)`` dumps, every changed
snapshot's text is that file's text, the last is ``Compiled.as_text()``, the structural diffs
agree with ``difflib.ndiff`` of the two texts, each fusion's creating pass is the first dump
file holding it, the LLVM IR is the dump's ``.ll`` files; the golden against the probe; the
``--print`` artefacts' formats.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME

from exhibits.conftest import FakeContext, Runner, run_probe
from exhibits.registry import EXHIBITS

from .dump import structural_diff
from .events import EVENTS, HloPassRan, LlvmIrDumped, XlaDumpRead

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXHIBIT = HERE.name
EXAMPLES = sorted((HERE / "examples").glob("*.py"))
DEFAULT = HERE / "examples" / "mlp_softmax.py"


@cache
def probed(example: Path) -> FakeContext:
    return run_probe(EXHIBIT, example.read_text())


@cache
def plain_dump(example: Path) -> tuple[dict[str, Path], list[tuple[int, str, str]], str, Path]:
    """Plain JAX: the example compiled with the dump options into a fresh directory. Returns the
    files by name, the pass snapshots as (seq, pass name, text) in the order of their sequence
    numbers, ``Compiled.as_text()``, and the directory (kept for the test session)."""
    namespace: dict[str, Any] = {"__name__": "example"}
    # compiled under the snippet's file name, so that the texts' FileNames sections agree
    exec(compile(example.read_text(), SNIPPET_FILENAME, "exec"), namespace)
    directory = Path(tempfile.mkdtemp(prefix="xla-passes-test-"))
    compiled = (
        jax.jit(namespace["f"])
        .lower(*namespace["args"])
        .compile(compiler_options={"xla_dump_to": str(directory), "xla_dump_hlo_pass_re": ".+"})
    )
    files = {p.name: p for p in directory.iterdir()}
    snaps = []
    for name, path in files.items():
        parts = name.split(".")
        # module_0001.jit_f.0042.<pipeline>.after_<pass>[.before_<next>].txt
        if len(parts) > 4 and parts[2].isdigit() and parts[4].startswith("after_"):
            snaps.append((int(parts[2]), parts[4].removeprefix("after_"), path.read_text()))
    snaps.sort()
    return files, snaps, str(compiled.as_text()), directory


def passes(ctx: FakeContext) -> list[HloPassRan]:
    return ctx.of_type(HloPassRan)


def text_at(ran: list[HloPassRan], i: int) -> str:
    return next(e.hlo_text for e in reversed(ran[: i + 1]) if e.hlo_text is not None)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_pass_list_is_the_dump_files_order(example: Path) -> None:
    ran = passes(probed(example))
    _, snaps, _, _ = plain_dump(example)
    assert [e.pass_name for e in ran] == [name for _, name, _ in snaps]
    assert [e.dump_seq for e in ran] == [seq for seq, _, _ in snaps]
    assert [e.index for e in ran] == list(range(len(ran)))
    # every snapshot's text is the file's, and `changed` is "the text differs from the one before"
    texts = [text for _, _, text in snaps]
    for e, text in zip(ran, texts, strict=True):
        assert text_at(ran, e.index) == text
        if e.index:
            assert e.changed == (text != texts[e.index - 1])
    # occurrences count each name's runs
    assert all(
        e.occurrence == sum(x.pass_name == e.pass_name for x in ran[: e.index + 1]) for e in ran
    )


def test_unchanged_passes_are_dumped_too() -> None:
    """With ".*" XLA dumps only the passes that report a change; the probe's ".+" dumps all."""
    _, snaps, _, _ = plain_dump(DEFAULT)
    namespace: dict[str, Any] = {}
    exec(compile(DEFAULT.read_text(), SNIPPET_FILENAME, "exec"), namespace)
    with tempfile.TemporaryDirectory() as directory:
        jax.jit(namespace["f"]).lower(*namespace["args"]).compile(
            compiler_options={"xla_dump_to": directory, "xla_dump_hlo_pass_re": ".*"}
        )
        only_changed = [p for p in Path(directory).iterdir() if ".after_" in p.name]
    assert 0 < len(only_changed) < len(snaps)
    assert probed(DEFAULT).one(XlaDumpRead).pass_count == len(snaps)


def normalise_backend_config(text: str) -> str:
    """``backend_config={...}`` JSON with sorted keys: the dump prints the proto's fields in
    another order than ``as_text()`` does (the one difference between them)."""

    def canonical(m: re.Match[str]) -> str:
        return "backend_config=" + json.dumps(json.loads(m.group(1)), sort_keys=True)

    return re.sub(r"backend_config=(\{.*\})$", canonical, text, flags=re.M)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_last_snapshot_is_compiled_as_text(example: Path) -> None:
    ctx = probed(example)
    ran = passes(ctx)
    namespace: dict[str, Any] = {}
    exec(compile(example.read_text(), SNIPPET_FILENAME, "exec"), namespace)
    # plain JAX, no dump options
    truth = str(jax.jit(namespace["f"]).lower(*namespace["args"]).compile().as_text())
    last = text_at(ran, len(ran) - 1)
    assert normalise_backend_config(last) == normalise_backend_config(truth)
    assert ctx.one(XlaDumpRead).last_is_compiled


def names_on(lines: list[str], mark: str) -> dict[str, str]:
    """The instruction lines of ``difflib.ndiff`` output marked ``mark`` (``-``/``+``), by the
    instruction's name."""
    found = {}
    for line in lines:
        if line.startswith(mark + " "):
            m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = ", line[2:])
            if m and line[2:].startswith("  "):
                found[m.group(1)] = line[2:].strip()
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_diffs_agree_with_difflib(example: Path) -> None:
    ran = passes(probed(example))
    files, _, _, _ = plain_dump(example)
    (baseline,) = [p for n, p in files.items() if n.endswith(".before_optimizations.txt")]
    before = baseline.read_text()
    checked = 0
    for e in ran:
        after = text_at(ran, e.index)
        if not e.changed:
            assert not e.diff and not e.appeared_count and not e.fusions_created
            continue
        ndiff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
        minus, plus = names_on(ndiff, "-"), names_on(ndiff, "+")
        appeared = plus.keys() - minus.keys()
        # the probe's structural diff (dump.structural_diff, by instruction name) gives the counts
        # and the fusions created; the page reads the names from the event's unified diff
        assert e.appeared_count == len(appeared)
        assert e.vanished_count == len(minus.keys() - plus.keys())
        assert e.rewritten_count == len(
            {n for n in plus.keys() & minus.keys() if plus[n] != minus[n]}
        )
        assert set(e.fusions_created) == {n for n in appeared if " fusion(" in plus[n]}
        sd = structural_diff(before, after)
        assert [i.name for i in sd.appeared if i.opcode == "fusion"] == e.fusions_created
        assert {i.name for i in sd.appeared} == appeared
        assert all(f" {i.opcode}(" in plus[i.name] for i in sd.appeared)
        assert (
            e.diff
            == list(
                difflib.unified_diff(before.splitlines(), after.splitlines(), n=2, lineterm="")
            )[2:]
        )
        # the unified diff's +/- lines name the same instructions as ndiff's
        assert names_on([f"{x[0]} {x[1:]}" for x in e.diff if x[:1] in "+-"], "+") == plus
        assert names_on([f"{x[0]} {x[1:]}" for x in e.diff if x[:1] in "+-"], "-") == minus
        assert e.instruction_count == len(re.findall(r"^\s+(?:ROOT )?%[\w.\-]+ = ", after, re.M))
        before = after
        checked += 1
    assert checked == sum(e.changed for e in ran) > 0


def test_fusions_name_the_pass_that_created_them() -> None:
    ctx = probed(DEFAULT)
    _, snaps, truth, _ = plain_dump(DEFAULT)
    final = set(re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = \S+ fusion\(", truth, re.M))
    fusions = ctx.one(XlaDumpRead).fusions
    assert {f.name for f in fusions} == final
    for f in fusions:
        first = next(
            i
            for i, (_, _, text) in enumerate(snaps)
            if re.search(rf"%{re.escape(f.name)} = \S+ fusion\(", text)
        )
        assert (f.pass_index, f.pass_name) == (first, snaps[first][1])
        body = truth.split(f"%{f.calls} ")[1].split("\n}")[0]
        ops = re.findall(r"^\s+(?:ROOT )?%[\w.\-]+ = \S+ ([a-z][\w\-]*)\(", body, re.M)
        assert f.fused_opcodes == [op for op in ops if op != "parameter"]
    # the softmax layer's story: the fusion pass fuses tanh and exp chains
    by_name = {f.name: f for f in fusions}
    assert by_name["add_tanh_fusion"].pass_name == "fusion"
    assert by_name["add_tanh_fusion"].fused_opcodes == ["broadcast", "add", "tanh"]


def test_llvm_ir_is_the_dumps() -> None:
    ctx = probed(DEFAULT)
    files, _, _, _ = plain_dump(DEFAULT)
    ir = ctx.of_type(LlvmIrDumped)
    if jax.default_backend() != "cpu":
        pytest.skip("LLVM IR files are the CPU backend's")
    no_opt = {
        n.split(".", 2)[2].removesuffix(".ir-no-opt.ll"): p
        for n, p in files.items()
        if n.endswith(".ir-no-opt.ll")
    }
    assert {e.kernel for e in ir} == no_opt.keys() and ir
    for e in ir:
        assert e.no_opt == no_opt[e.kernel].read_text()
        assert e.no_opt_bytes == len(no_opt[e.kernel].read_bytes())
        assert e.with_opt is not None and "define" in e.with_opt
    assert {e.fusion for e in ir} - {None} == {f.name for f in ctx.one(XlaDumpRead).fusions} & {
        e.kernel.removesuffix("_kernel_module") for e in ir
    }
    assert ctx.one(XlaDumpRead).llvm_ir_note is None


def test_summaries_leave_the_texts_out() -> None:
    ran = passes(probed(DEFAULT))
    changed = [e for e in ran if e.changed]
    for e in changed:
        s = e.summarised()
        assert s is not None and s.deferred and s.hlo_text is None and s.diff == []
        assert len(s.model_dump_json()) < 1024
        assert (s.appeared_count, s.fusions_created) == (e.appeared_count, e.fusions_created)
    assert all(e.summarised() is None for e in ran[1:] if not e.changed)
    assert ran[0].hlo_text is not None  # the first carries its text, changed or not


def test_print_passes_and_pass() -> None:
    ctx = probed(DEFAULT)
    ran = passes(ctx)
    table = EXHIBITS[EXHIBIT].artefacts
    text = table["passes"](ctx.events)
    assert text is not None and text.startswith('["pipeline-start", ')
    assert json.loads(text) == [e.pass_name for e in ran]
    algsimp = [e for e in ran if e.pass_name == "algsimp"]
    assert len(algsimp) > 2
    assert "pass:algsimp" in table and "pass algsimp#2" in table and "nonsense" not in table
    assert table["pass:algsimp"](ctx.events) == text_at(ran, algsimp[0].index)
    assert table["pass:algsimp#1"](ctx.events) == text_at(ran, algsimp[0].index)
    assert table["pass algsimp#3"](ctx.events) == text_at(ran, algsimp[2].index)
    assert table["pass:#0"](ctx.events) == text_at(ran, 0)
    assert table["pass:fusion"](ctx.events) == text_at(
        ran, next(e.index for e in ran if e.pass_name == "fusion")
    )
    assert table["pass:no-such-pass"](ctx.events) is None
    assert table["pass:algsimp#999"](ctx.events) is None
    assert table["pass:NAME[#k]"](ctx.events) is None


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


# Times, and the dump's size (its debug_options file names the temporary directory); the texts'
# sizes (their stack frames differ, below).
VARYING = {"seq", "run_id", "compile_s", "read_s", "dump_bytes", "text_bytes"}
# A kernel's LLVM IR numbers its arguments by the buffer assignment, which another process may
# order otherwise (seen: arg7 in one run is arg11 in the next); the kernels' names are compared.
LLVM_TEXTS = {"no_opt", "with_opt", "no_opt_bytes", "with_opt_bytes"}
# An HLO text's stack frames hold the Python frames that called jit, the runner's in the worker
# (``<frozen runpy>``) and pytest's here: their table, their ids, and the diff lines and hunk
# positions they shift are set aside; every other character is compared.
FRAMES = re.compile(r"\nFileNames\n.*?\nStackFrames\n(?:\d+ \{.*?\}\n)*", re.S)
FRAME_LINE = re.compile(
    r"^[ +-]?(?:\d+ \{file_.*\}|\d+ \".*\""
    r"|FileNames|FunctionNames|FileLocations|StackFrames)$"
)


def without_frames(value: Any) -> Any:
    """``value`` (a ``model_dump``) with the stack frames of its HLO texts set aside."""
    if isinstance(value, dict):
        return {k: without_frames(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            # a diff: its changed lines, sorted (its hunks' context, bounds and the way difflib
            # aligns blank lines move with the frames)
            value = sorted(
                v for v in value if v[:1] in "+-" and v[1:].strip() and not FRAME_LINE.match(v)
            )
        return [without_frames(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"stack_frame_id=\d+", "stack_frame_id=N", FRAMES.sub("\n", value))
    return value


def own_events(events: list[EventBase]) -> list[dict[str, Any]]:
    """This exhibit's events of a stream as JSON values, without what varies run to run."""
    kept = [
        without_frames(
            e.model_dump(exclude=VARYING | (LLVM_TEXTS if isinstance(e, LlvmIrDumped) else set()))
        )
        for e in events
        if isinstance(e, EVENTS)
    ]
    return list(json.loads(json.dumps(kept)))


# The probe in a fresh interpreter, as ``jaxscope run`` made the golden: in a pytest process that
# had run other exhibits' tests first (pytest-xdist's order), one pass (simplify-while-loops)
# once gave XLA's while loop another clone, a process-wide state the golden cannot hold.
FRESH_PROBE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from exhibits.xla_passes.test_xla_passes import own_events, probed\n"
    "print(json.dumps(own_events(probed(Path(sys.argv[1])).events)))\n"
)


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path) -> None:
    """The golden (``jaxscope run ID examples/NAME.py --json``, the real sandbox) parses with the
    event union and holds what the probe emits now (in a fresh interpreter)."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = HERE / "examples" / (golden.name.removesuffix(".events.jsonl") + ".py")
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROBE, str(example)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert own_events(stream) == json.loads(done.stdout.splitlines()[-1])
    assert own_events(stream), "the golden holds none of this exhibit's events"


def test_a_failing_f_is_reported_at_its_line(probe_runner: Runner) -> None:
    source = "import jax.numpy as jnp\ndef f(x):\n    return x @ jnp.ones((3, 3))\n"
    source += "args = (jnp.ones(2),)\n"
    with pytest.raises(TypeError) as raised:
        probe_runner(EXHIBIT, source)
    frames = [
        f
        for f in __import__("traceback").extract_tb(raised.value.__traceback__)
        if f.filename == SNIPPET_FILENAME
    ]
    assert frames and frames[-1].lineno == 3


def test_the_narratives_try_items_hold() -> None:
    """narrative.md: with relu the cheap add and maximum are duplicated into two fusions and
    add_tanh_fusion is gone; in loop_invariant, LICM moves the sine and the reduce from the loop
    body region_0.3 into main."""
    relu = DEFAULT.read_text().replace("jnp.tanh(", "jax.nn.relu(")
    fusions = {f.name: f for f in run_probe(EXHIBIT, relu).one(XlaDumpRead).fusions}
    assert "add_tanh_fusion" not in fusions
    for name in ("maximum_reduce_fusion", "subtract_exponential_fusion"):
        assert {"add", "maximum"} <= set(fusions[name].fused_opcodes), name
    ran = passes(probed(HERE / "examples" / "loop_invariant.py"))
    (licm,) = [e for e in ran if e.pass_name == "while-loop-invariant-code-motion" and e.changed]
    sd = structural_diff(text_at(ran, licm.index - 1), text_at(ran, licm.index))
    for opcode in ("sine", "reduce"):
        assert [i.computation for i in sd.vanished if i.opcode == opcode] == ["region_0.3"]
        assert [i.computation for i in sd.appeared if i.opcode == opcode] == ["main.5"]


@pytest.mark.skipif(
    __import__("jaxscope.sandbox.kinds", fromlist=["kind_problem"]).kind_problem("tpu_compile")
    is not None,
    reason="libtpu not installed (make tpu)",
)
def test_the_tpu_compilers_own_pipeline() -> None:
    """``--target tpu-v5e`` (design 0073): the passes are libtpu's, compiled offline in a
    "tpu_compile" worker: TPU-only passes (layout assignment with tiling propagation, the TPU's
    fusion, memory-space precoloring) and tiled layouts in the last snapshot. libtpu changes the
    module after its last dumped pass (``last_is_compiled`` is False there, as the event says)."""
    import json

    from testkit import run_cli

    example = EXHIBITS["xla_passes"].picker_paths()["mlp_softmax"]
    result = run_cli("run", "xla_passes", str(example), "--target", "tpu-v5e", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(x) for x in result.stdout.splitlines() if x.strip()]
    passes = [e for e in events if e["type"] == "hlo_pass_ran"]
    (read,) = [e for e in events if e["type"] == "xla_dump_read"]
    names = {p["pass_name"] for p in passes}
    assert {"tiling_propagation", "layout-assignment", "tpu_fusion", "tpu-memory-precolor"} <= names
    assert read["backend"].startswith("tpu") and read["last_is_compiled"] is False
    last_text = next(p["hlo_text"] for p in reversed(passes) if p.get("hlo_text"))
    assert "T(8,128)" in last_text
    assert read["fusions"] and all(f["pass_name"] for f in read["fusions"])
