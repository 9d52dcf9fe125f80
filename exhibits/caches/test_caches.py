"""The caches exhibit against JAX itself.

* Per call, the layer that answered, whether it traced/compiled, and whether JAX explained a
  miss equal a plain-JAX replay of the same calls read from public signals only
  (``golden/regen.py``: ``jax.monitoring`` events, the jit object's C++ cache size, the explain
  log), for every example and every preset.
* Our diff entries agree with JAX's explain-cache-miss text where JAX has one (aval, static
  argument, tracing context, function re-created on the same line), and mark what it does not
  say (a committed input: a new lowering, no message).
* C05 (``cases/``) reproduces: traces and compiles per function, the messages, the
  cause.
* Running twice (with other runs in between) gives the same timeline.
* ``jaxscope run caches FILE --print timeline`` prints the artefact of the in-process run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.protocol import RunOptions

from exhibits.cache_key.events import CacheKeyComputed
from exhibits.caches import probe as caches_probe
from exhibits.caches.artefacts import ARTEFACTS
from exhibits.caches.events import CachesReset, JitCallObserved
from exhibits.caches.golden import regen
from exhibits.conftest import example_sources, run_probe
from testkit import run_cli

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CASES = Path(__file__).resolve().parents[2] / "cases"
EXAMPLES = example_sources("caches")


def observed(source: str, options: RunOptions | None = None) -> list[JitCallObserved]:
    ctx = run_probe("caches", source, options)
    return [e for e in ctx.events if isinstance(e, JitCallObserved)]


def by_function(calls: list[JitCallObserved], what: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in calls:
        if getattr(c, what):
            out[c.function] = out.get(c.function, 0) + 1
    return out


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden_is_current(name: str) -> None:
    stored = json.loads((HERE / "golden" / f"{name}.json").read_text())
    assert regen.golden(EXAMPLES[name]) == stored


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_layers_match_plain_jax(name: str) -> None:
    truth = json.loads((HERE / "golden" / f"{name}.json").read_text())
    calls = observed(EXAMPLES[name])
    if truth["mode"] == "calls":
        assert len(calls) == len(truth["calls"])
        for c, t in zip(calls, truth["calls"], strict=True):
            assert (c.layer, c.traced, c.compiled) == (t["layer"], t["traced"], t["compiled"])
            assert c.explanation.startswith("TRACING CACHE MISS") == t["explained"]
            assert c.cells["cpp"] == ("hit" if t["layer"] == "cpp" else "miss")
            assert c.cells["jaxpr"] == (
                "skipped" if t["layer"] == "cpp" else ("miss" if t["traced"] else "hit")
            )
    else:
        assert by_function(calls, "traced") == truth["traces_by_function"]
        assert by_function(calls, "compiled") == truth["compiles_by_function"]


# ``persistent`` clears the caches mid-run and turns the disk cache on: its own test below.
@pytest.mark.parametrize("preset", sorted(set(caches_probe.PRESETS) - {"persistent"}))
def test_presets_match_plain_jax(preset: str) -> None:
    source = (
        "import jax.numpy as jnp\n\n"
        "def f(x, n):\n"
        "    return jnp.sum(jnp.sin(x) * x) * n\n\n"
        "args = (jnp.ones((2, 3)), 2)\n"
        "static_argnums = (1,)\n"
    )
    calls = observed(source, RunOptions(preset=preset))
    # The same planned calls, replayed in plain JAX from jax.clear_caches().
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(source)
    jitted = jax.jit(snippet.f, static_argnums=snippet.static_argnums)
    planned = caches_probe._preset_calls(preset, jitted, snippet.args, {})
    assert len(calls) == len(planned)
    # Replay the whole sequence (one clear at the start; each jit object has its own C++ cache).
    jax.clear_caches()  # type: ignore[no-untyped-call]
    truths = []
    for p in planned:
        events = regen.Events()
        jax.monitoring.register_event_duration_secs_listener(events)
        size = p.jitted._cache_size()
        with caches_probe._context(p.context):
            jax.block_until_ready(p.jitted(*p.args))  # type: ignore[no-untyped-call]
        jax.monitoring.unregister_event_duration_listener(events)
        truths.append((events.seen, p.jitted._cache_size() > size))
    for c, (seen, grew) in zip(calls, truths, strict=True):
        kinds = {e for e, n in seen if n in (c.function, f"jit({c.function})")}
        if regen.COMPILE in kinds:
            layer = "compile"
        elif regen.LOWER in kinds:
            layer = "executable"
        else:
            layer = "lowering" if regen.TRACE in kinds or grew else "cpp"
        assert c.layer == layer, (preset, c.index)
    assert calls[0].layer == "compile"
    second = calls[1]
    differing = {d.name for d in second.entries if d.differs}
    expected_entry = {
        "same": set(),
        "new_shape": set(),
        "new_dtype": {"x aval"},
        "weak_type": {"x aval", "x placement"},
        "static_changed": {"static n"},
        "redefined": {"function"},
        "new_closure": {"function"},
        "numpy": {"x placement"},
        "committed": {"x placement"},
        "matmul_precision": {"tracing context"},
    }[preset]
    assert differing == expected_entry
    if preset == "new_shape":
        assert {d.name for d in calls[2].entries if d.differs} == {"x aval"}


# A model's step: params (a container) and a batch whose leading sizes must agree with them.
MODEL_STEP = (
    "import jax.numpy as jnp\n"
    "import numpy as np\n\n"
    "def f(params, x, y):\n"
    "    h = jnp.tanh(x @ params['w1']) @ params['w2']\n"
    "    return jnp.mean((h - y) ** 2)\n\n"
    "params = {'w1': np.ones((3, 4), np.float32), 'w2': np.ones((4, 2), np.float32)}\n"
    "args = (params, np.ones((5, 3), np.float32), np.ones((5, 2), np.float32))\n"
)


@pytest.mark.parametrize("in_axes", [None, "(None, 0, 0)"])
def test_new_shape_grows_the_batch_not_the_params(in_axes: str | None) -> None:
    """A real program's params must keep their shapes: new_shape grows the batch axis the
    snippet's in_axes names, or else axis 0 of the arguments that are arrays (issue 14's
    new-user review: growing every array broke every model). The grown call retraces on the
    batch's avals only, and it compiles, as in plain JAX."""
    source = MODEL_STEP + (f"in_axes = {in_axes}\n" if in_axes else "")
    calls = observed(source, RunOptions(preset="new_shape"))
    assert [c.layer for c in calls] == ["compile", "cpp", "compile"]
    grown = {d.name: d for d in calls[2].entries if d.differs}
    # only the batch's avals: the grown numpy arrays stay numpy (their placement unchanged)
    assert set(grown) == {"x aval", "y aval"}
    assert "f32[6,3]" in grown["x aval"].now and "f32[5,3]" in (grown["x aval"].before or "")
    # the same arguments in plain JAX
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(source)
    jitted = jax.jit(snippet.f)
    planned = caches_probe._preset_calls(
        "new_shape", jitted, snippet.args, {}, snippet.namespace.get("in_axes")
    )
    x, y = planned[2].args[1:]
    assert (x.shape, y.shape) == ((6, 3), (6, 2))
    assert jax.tree.map(lambda a: a.shape, planned[2].args[0]) == {"w1": (3, 4), "w2": (4, 2)}
    assert planned[2].changed == "new_shape" and planned[1].changed is None
    jitted(*planned[2].args)  # JAX accepts them


def test_a_preset_call_that_f_rejects_says_the_preset_made_it() -> None:
    """Two plain arrays that must agree (w, x): new_shape grows both and f rejects them. The
    run fails with JAX's error at the user's line, and says the call was the preset's."""
    from jaxscope.sandbox.probe_api import DURING_ATTR, EXPLAIN_ATTR

    source = (
        "import jax.numpy as jnp\n\n"
        "def f(w, x):\n"
        "    return jnp.sum(x @ w)\n\n"
        "args = (jnp.ones((3, 3)), jnp.ones((2, 3)))\n"
    )
    with pytest.raises(TypeError, match="dot_general requires contracting") as info:
        run_probe("caches", source, RunOptions(preset="new_shape"))
    during = getattr(info.value, DURING_ATTR)
    assert during == "in call 3, made by the new_shape preset from your args, not by your snippet"
    assert getattr(info.value, EXPLAIN_ATTR).startswith("This call is the new_shape preset's")


def test_a_listed_call_that_f_rejects_keeps_fs_line() -> None:
    """A call of the snippet's `calls` that raises inside f: the run fails at f's line (a frame
    of the snippet wins over the `calls` line, which is blamed only when JAX refused the
    arguments before f ran, cases/DN03), and says which call it was."""
    import traceback

    from jaxscope.sandbox.probe_api import DURING_ATTR, SNIPPET_FILENAME

    source = (
        "import jax.numpy as jnp\n\n"
        "def f(x):\n"
        "    return jnp.sum(x @ jnp.ones(3))\n\n"
        "args = (jnp.ones(3),)\n"
        "calls = [args, (jnp.ones(2),)]\n"
    )
    with pytest.raises(TypeError, match="dot_general requires contracting") as info:
        run_probe("caches", source)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [fr.lineno for fr in frames if fr.filename == SNIPPET_FILENAME][-1] == 4
    assert getattr(info.value, DURING_ATTR) == "in call 2 of your `calls`"


def test_a_donated_buffer_passed_again_is_blamed_on_its_own_calls_line(tmp_path: Path) -> None:
    """`calls` written one call a line: the call JAX refuses (a buffer an earlier call donated,
    cases/DN03) is blamed at its own line, not at `calls = [` (issue 33 audit). Plain JAX in a
    fresh process refuses the same call of the same sequence."""
    from jaxscope.sandbox.probe_api import BLAME_ATTR, DURING_ATTR

    source = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "f = jax.jit(lambda x: x + 1, donate_argnums=(0,))\n"
        "buf = jnp.array([1.0, 2.0, 3.0])\n"
        "other = jnp.array([4.0, 5.0, 6.0])\n"
        "args = (other,)\n"
        "calls = [\n"
        "    (other,),\n"
        "    (buf,),\n"
        "    (buf,),\n"
        "]\n"
    )
    plain = (
        "import runpy, sys\n"
        "ns = runpy.run_path(sys.argv[1])\n"
        "for n, c in enumerate(ns['calls'], 1):\n"
        "    try:\n"
        "        ns['f'](*c)\n"
        "    except ValueError as e:\n"
        "        print(n, 'deleted or donated' in str(e)); break\n"
    )
    path = tmp_path / "snippet.py"
    path.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-c", plain, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["3", "True"]  # the third call fails, as a script's does
    with pytest.raises(ValueError, match="deleted or donated") as info:
        run_probe("caches", source)
    assert getattr(info.value, DURING_ATTR) == "in call 3 of your `calls`"
    third = source.splitlines().index("    (buf,),", 10) + 1
    assert getattr(info.value, BLAME_ATTR)[0] == third == 11


def _jax_input_type_lines(explanation: str) -> list[tuple[str, str, str]]:
    """``* at NAME, now A and before B`` lines of JAX's explanation, weak types as ours."""
    out = []
    for m in re.finditer(
        r"\* at (\S+), now (\S+) and before (\S+?)(?:https://\S*)?$", explanation, re.M
    ):

        def norm(t: str) -> str:
            return t.replace("{weak_type=True}", " weak").replace("{weak_type=False}", "")

        out.append((m.group(1), norm(m.group(2)), norm(m.group(3))))
    return out


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_diff_agrees_with_explain_text(name: str) -> None:
    calls = observed(EXAMPLES[name])
    for c in calls:
        differing = {d.name: d for d in c.entries if d.differs}
        text = c.explanation
        for leaf, now, before in _jax_input_type_lines(text):
            entry = differing[f"{leaf} aval"]
            assert (entry.now, entry.before) == (now, before)
        for m in re.finditer(r"Static\(val=(.+?)\) and before .*?Static\(val=(.+?)\)", text):
            statics = [d for n, d in differing.items() if n.startswith("static ")]
            assert [(d.now, d.before) for d in statics] == [(m.group(1), m.group(2))]
        for m in re.finditer(r"\* (\w+) differs: now (\S+) and before (\S+)", text):
            ctx_entry = differing["tracing context"]
            assert f"{m.group(1)}='{m.group(2)}'" in ctx_entry.now
        if "seen another function defined on the same line" in text:
            assert "function" in differing and c.cause is not None
            assert c.cause.startswith("new function object at the same call site")
        if c.traced and c.closest is not None and "never seen function" not in text:
            assert differing, "JAX explained a miss our diff does not show"


def test_committed_input_new_lowering_that_jax_does_not_explain() -> None:
    calls = observed(EXAMPLES["committed"])
    assert calls[1].cells == {
        "cpp": "miss",
        "jaxpr": "hit",
        "lowering": "miss",
        "executable": "miss",
        "persistent": "off",
    }
    assert calls[1].explanation == ""
    (entry,) = [d for d in calls[1].entries if d.differs]
    assert entry.name == "x placement"
    assert "committed" in entry.now and "uncommitted" in (entry.before or "")
    assert calls[1].counters and calls[1].timers_ms["trace"] == 0.0
    assert calls[1].timers_ms["compile"] > 0.0


def test_counters_are_before_and_after() -> None:
    calls = observed(EXAMPLES["new_shape"])
    first, hit = calls[0], calls[1]
    lower = {c.name: c for c in first.counters}["pjit_lower"]
    assert (lower.misses_after - lower.misses_before, lower.hits_after - lower.hits_before) == (
        1,
        0,
    )
    for c in hit.counters:  # the C++ fast path runs no Python: nothing moves
        assert (c.hits_before, c.misses_before) == (c.hits_after, c.misses_after)
    assert (hit.cpp_size_before, hit.cpp_size_after) == (1, 1)


COUNTING_SOURCE = (
    "import jax.numpy as jnp\n\n"
    "def f(x):\n"
    "    return jnp.sum(jnp.where(x > 0, jnp.sin(x), x) * 2.0)\n\n"
    "calls = [(jnp.ones(3),), (jnp.ones(3),), (jnp.ones(4),), (5.0,), (jnp.asarray(6.0),)]\n"
    "args = calls[0]\n"
)


def test_counters_filter_out_internal_jits() -> None:
    """The counters are f's own lookups: per call, trace_to_jaxpr misses equal the
    jaxpr_trace_duration events JAX reports for f (jax.monitoring, a plain replay), and
    _infer_params_cached moves once per call that left the C++ fast path, although the
    jnp helpers' inner jits move both caches (the raw counters of the replay)."""
    from jaxscope.internals.cache_layers import counter_snapshot
    from jaxscope.sandbox.snippet import load_snippet

    calls = observed(COUNTING_SOURCE)
    snippet = load_snippet(COUNTING_SOURCE)
    jitted: Any = jax.jit(snippet.f)
    jax.clear_caches()  # type: ignore[no-untyped-call]
    raw_traces = 0
    for c, args in zip(calls, snippet.namespace["calls"], strict=True):
        events = regen.Events()
        jax.monitoring.register_event_duration_secs_listener(events)
        before = counter_snapshot()
        size = jitted._cache_size()
        jax.block_until_ready(jitted(*args))  # type: ignore[no-untyped-call]
        after = counter_snapshot()
        jax.monitoring.unregister_event_duration_listener(events)
        f_traces = sum(1 for e, n in events.seen if e == regen.TRACE and n == "f")
        python_entered = jitted._cache_size() > size or f_traces > 0
        raw_traces += after["trace_to_jaxpr"][1] - before["trace_to_jaxpr"][1]
        counters = {k.name: k for k in c.counters}
        t = counters["trace_to_jaxpr"]
        ip = counters["infer_params"]
        assert t.misses_after - t.misses_before == f_traces, c.index
        assert t.hits_after - t.hits_before == 0, c.index
        assert (ip.hits_after - ip.hits_before) + (ip.misses_after - ip.misses_before) == (
            1 if python_entered else 0
        ), c.index
    # the filter removed something real: the helpers' inner jits were traced too
    assert raw_traces > sum(c.traced for c in calls)


def test_int_then_array_is_answered_by_the_lowering_cache() -> None:
    """A Python float then a 0-d Array: no trace, lower or compile event, the C++ cache grows:
    the jaxpr cache hit and then the lowering cache (the deepest cache that hit)."""
    last = observed(COUNTING_SOURCE)[-1]
    assert (last.traced, last.compiled) == (False, False)
    assert last.cpp_size_after == last.cpp_size_before + 1
    assert (last.cells["jaxpr"], last.cells["lowering"]) == ("hit", "hit")
    assert last.layer == "lowering"


def _normalise(message: str, filename: str) -> str:
    return re.sub(r"id=\d+", "id=<N>", message).replace("<snippet>", filename)


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_c05_reproduces(variant: str) -> None:
    snippet = CASES / f"C05_jit_in_loop_{variant}.py"
    expect: dict[str, Any] = json.loads(snippet.with_suffix(".expect.json").read_text())
    calls = observed(snippet.read_text())
    assert sum(c.traced for c in calls) == expect["trace_count"]
    assert by_function(calls, "traced") == expect["traces_by_function"]
    assert by_function(calls, "compiled") == expect["compiles_by_function"]
    messages = [_normalise(c.explanation, snippet.name) for c in calls if c.explanation]
    assert messages == expect["cache_misses"]
    causes = {c.cause for c in calls if c.cause}
    if expect["recompile_cause"] is None:
        assert causes == set()
    else:
        assert {_normalise(c, snippet.name) for c in causes} == {expect["recompile_cause"]}


def test_run_twice_same_timeline() -> None:
    source = EXAMPLES["static_changed"]
    first = run_probe("caches", source)
    run_probe("caches", EXAMPLES["new_shape"])  # something else in between, same worker
    second = run_probe("caches", source)
    assert ARTEFACTS["timeline"](first.events) == ARTEFACTS["timeline"](second.events)

    def cells(ctx: Any) -> list[dict[str, str]]:
        return [dict(e.cells) for e in ctx.events if isinstance(e, JitCallObserved)]

    assert cells(first) == cells(second)
    resets = [e for e in second.events if isinstance(e, CachesReset)]
    assert len(resets) == 1 and resets[0].mode == "calls" and resets[0].cleared


def test_driver_call_sites_are_user_lines() -> None:
    calls = observed(EXAMPLES["matmul_precision"])
    source_lines = EXAMPLES["matmul_precision"].splitlines()
    call_lines = [i + 1 for i, t in enumerate(source_lines) if t.strip().startswith("step(a, a)")]
    assert [c.source.line if c.source else None for c in calls] == call_lines
    assert [c.layer for c in calls] == ["compile", "compile", "cpp"]


def test_cli_prints_timeline(tmp_path: Path) -> None:
    snippet_file = tmp_path / "snippet.py"
    snippet_file.write_text(EXAMPLES["numpy_input"])
    done = run_cli("run", "caches", str(snippet_file), "--print", "timeline", cwd=REPO)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = json.loads(
        ARTEFACTS["timeline"](run_probe("caches", EXAMPLES["numpy_input"]).events) or ""
    )
    assert printed == expected
    assert [c["layer"] for c in printed] == ["compile", "lowering", "cpp"]
    assert printed[1]["differs"] == ["x placement"]


def test_traced_calls_carry_the_jaxpr_jax_traced() -> None:
    from jaxscope.sandbox.snippet import load_snippet

    calls = observed(EXAMPLES["new_shape"])
    snippet = load_snippet(EXAMPLES["new_shape"])
    for c in calls:
        if c.traced:
            args = snippet.namespace["calls"][c.index]
            assert c.jaxpr is not None
            # JAX's own printout, broken over lines (str() puts this short one on one line)
            truth = str(jax.make_jaxpr(snippet.f)(*args))
            assert c.jaxpr.text.replace(";", "").split() == truth.replace(";", "").split()
            assert len(c.jaxpr.text.splitlines()) == len(c.jaxpr.eqns) + 2
        else:
            assert c.jaxpr is None


PERSISTENT_SOURCE = (
    "import jax.numpy as jnp\n\n"
    "def f(x, n):\n"
    "    return jnp.sum(jnp.sin(x) * x) * n\n\n"
    "args = (jnp.ones((2, 3)), 2)\n"
    "static_argnums = (1,)\n"
)


def _persistent_replay(
    source: str = PERSISTENT_SOURCE, static_argnums: tuple[int, ...] = (1,)
) -> list[dict[str, Any]]:
    """The persistent preset in plain JAX: the cache on in a new directory (the same relative
    path as the probe's: JAX hashes the cache directory's path into the key), the call, then
    ``jax.clear_caches()`` and the call again; per call JAX's monitoring events and the files
    JAX wrote."""
    import os
    import tempfile

    from jax._src import compilation_cache
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(source)
    jitted = jax.jit(snippet.f, static_argnums=static_argnums)
    names = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    )
    saved = {n: jax.config.values[n] for n in names}
    seen: list[list[str]] = []

    def listen(event: str, **kw: str | int) -> None:
        seen[-1].append(event)

    out = []
    previous = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        directory = Path("jaxscope-persistent-cache")
        compilation_cache.reset_cache()
        for n, v in zip(names, (str(directory), 0.0, 0), strict=True):
            jax.config.update(n, v)  # type: ignore[no-untyped-call]
        jax.monitoring.register_event_listener(listen)
        try:
            jax.clear_caches()  # type: ignore[no-untyped-call]
            for i in range(2):
                if i:
                    jax.clear_caches()  # type: ignore[no-untyped-call]
                seen.append([])
                jax.block_until_ready(jitted(*snippet.args))  # type: ignore[no-untyped-call]
                files = sorted(p.name for p in directory.iterdir())
                out.append({"events": seen[-1], "files": files})
        finally:
            jax.monitoring.unregister_event_listener(listen)
            for n, v in saved.items():
                jax.config.update(n, v)  # type: ignore[no-untyped-call]
            compilation_cache.reset_cache()
            os.chdir(previous)
    return out


def test_persistent_preset_reads_the_second_call_from_disk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="jax._src.compilation_cache"):
        ctx = run_probe("caches", PERSISTENT_SOURCE, RunOptions(preset="persistent"))
    # What JAX's compilation_cache itself says it wrote, during the probe's run.
    wrote = re.findall(
        r"Writing jit_f to persistent compilation cache with key '([^']+)'", caplog.text
    )
    (reset,) = [e for e in ctx.events if isinstance(e, CachesReset)]
    assert reset.persistent_enabled and reset.persistent_dir
    assert not Path(reset.persistent_dir).exists()  # removed after the run
    assert not jax.config.values["jax_compilation_cache_dir"]  # and the setting is back
    first, second = [e for e in ctx.events if isinstance(e, JitCallObserved)]
    truth = _persistent_replay()
    # Plain JAX: the first call misses the disk cache and writes jit_f-<key>-cache; after
    # jax.clear_caches() the same call hits it.
    assert "/jax/compilation_cache/cache_misses" in truth[0]["events"]
    assert "/jax/compilation_cache/cache_hits" in truth[1]["events"]
    written = [n for n in truth[0]["files"] if n.startswith("jit_f-")]
    assert len(written) == 1 and truth[1]["files"] == truth[0]["files"]
    assert first.cells == {
        "cpp": "miss",
        "jaxpr": "miss",
        "lowering": "miss",
        "executable": "miss",
        "persistent": "miss",
    }
    assert first.layer == "compile" and first.compiled
    assert second.cells == {
        "cpp": "miss",
        "jaxpr": "miss",
        "lowering": "miss",
        "executable": "miss",
        "persistent": "hit",
    }
    assert second.layer == "persistent" and second.traced and not second.compiled
    # The key looked up is the one JAX wrote, then read back; the file plain JAX writes for the
    # same program with the cache in the same (relative) directory; and the key the cache_key
    # exhibit computes for this snippet.
    assert (first.persistent_lookup, second.persistent_lookup) == ("miss", "hit")
    assert wrote == [first.persistent_key] and second.persistent_key == first.persistent_key
    assert written == [f"{first.persistent_key}-cache"]
    (computed, *_) = run_probe("cache_key", PERSISTENT_SOURCE).of_type(CacheKeyComputed)
    assert computed.jax_key == first.persistent_key
    (entry,) = [d for d in second.entries if d.differs]
    assert entry.name == caches_probe.MEMORY_ENTRY
    assert second.cause is not None and "read from the persistent cache on disk" in second.cause


def test_frontend_presets_are_the_probes() -> None:
    text = (HERE / "view-model.ts").read_text()
    block = text[
        text.index("export const PRESETS") : text.index("];", text.index("export const PRESETS"))
    ]
    assert re.findall(r"id: '(\w+)'", block) == list(caches_probe.PRESETS)


def test_option_and_setting_errors_are_invalid_snippet_not_blamed_on_jax() -> None:
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

    plain = "import jax.numpy as jnp\n\ndef f(x):\n    return x\n\nargs = (jnp.ones(2),)\n"
    for source, options, line, words in [
        (plain, RunOptions(preset="nope"), None, "unknown preset 'nope'; presets: same"),
        (plain, RunOptions(preset="static_changed"), None, "needs a static argument"),
        (plain + "calls = 5\n", None, 7, "`calls` must be a list"),
    ]:
        with pytest.raises(InvalidSnippet) as info:
            run_probe("caches", source, options)
        failed = classify(info.value, "trace", load_snippet(source).f)
        assert failed.kind == "invalid_snippet" and words in failed.message
        assert (failed.source.line if failed.source else None) == line
        assert "JAX raised this" not in (failed.explanation or "")


def test_cli_preset_runs_the_named_sequence(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(PERSISTENT_SOURCE)
    out = run_cli("run", "caches", str(snippet), "--preset", "persistent", "--print", "timeline")
    assert out.returncode == 0, out.stderr
    timeline = json.loads(out.stdout)
    assert [c["layer"] for c in timeline] == ["compile", "persistent"]
    assert timeline[1]["differs"] == [caches_probe.MEMORY_ENTRY]
    bad = run_cli("run", "caches", str(snippet), "--preset", "nope", "--print", "timeline")
    assert bad.returncode == 1 and "unknown preset 'nope'; presets: same" in bad.stderr


def test_a_persistent_run_killed_mid_way_leaves_no_cache_directory(tmp_path: Path) -> None:
    import tempfile
    import time

    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import jax.numpy as jnp\n\n"
        "n = [0]\n\n"
        "def f(x):\n"
        "    n[0] += 1\n"
        "    while n[0] == 2:\n"
        "        pass\n"
        "    return jnp.sin(x) * 2\n\n"
        "args = (jnp.ones(3),)\n"
    )
    started = time.time()
    # the CLI's main in this process (its worker forked from the process's template, as
    # `jaxscope run`'s is from its own), under 3 s x the exhibit's budget 2: the first call (a
    # sine's compile, written to the cache) well inside it, the second call's loop past it
    out = run_cli("run", "caches", str(snippet), "--preset", "persistent", "--timeout", "3")
    assert out.returncode == 1 and "timeout" in out.stderr
    # The cache directory lived in the worker's own temporary directory, removed with it.
    left = [
        p
        for p in Path(tempfile.gettempdir()).glob("jaxscope-cache-*")
        if p.stat().st_mtime >= started - 1
    ]
    assert left == []


@pytest.mark.parametrize(
    ("definition", "name"),
    [
        ("f = jax.jit(lambda x: jnp.sin(x) * 2)", "<lambda>"),
        ("def g(x, k):\n    return jnp.sin(x) * k\n\n\nf = functools.partial(g, k=2.0)", "g"),
    ],
)
def test_persistent_preset_for_a_lambda_and_a_partial(definition: str, name: str) -> None:
    # JAX names them jit__lambda / jit_g (util.fun_name through the partial, sanitize_name).
    source = (
        "import functools\n\nimport jax\nimport jax.numpy as jnp\n\n"
        f"{definition}\n\nargs = (jnp.ones(3),)\n"
    )
    first, second = observed(source, RunOptions(preset="persistent"))
    assert (first.function, second.function) == (name, name)
    assert first.traced and first.compiled and first.layer == "compile"
    assert second.layer == "persistent" and second.traced and not second.compiled
    assert (first.persistent_lookup, second.persistent_lookup) == ("miss", "hit")
    assert first.persistent_key == second.persistent_key
    module = "jit__lambda" if name == "<lambda>" else "jit_g"
    assert first.persistent_key is not None and first.persistent_key.startswith(f"{module}-")


def test_persistent_preset_says_why_a_host_callback_is_never_on_disk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def f(x):\n"
        '    jax.debug.print("x={x}", x=x)\n'
        "    return jnp.sin(x) * 2\n\n\n"
        "args = (jnp.ones(3),)\n"
    )
    first, second = observed(source, RunOptions(preset="persistent"))
    # Plain JAX, same sequence: no file written, and JAX's own reason (compiler._cache_write).
    with caplog.at_level("DEBUG", logger="jax._src.compiler"):
        truth = _persistent_replay(source, ())
    assert [t["files"] for t in truth] == [[], []]
    assert "Not writing persistent cache entry for 'jit_f' because it uses host callbacks" in (
        caplog.text
    )
    assert (first.layer, second.layer) == ("compile", "compile")
    assert (first.persistent_lookup, second.persistent_lookup) == ("miss", "miss")
    assert second.cause is not None and "because it uses host callbacks" in second.cause
    # The disk was asked (compile_requests_use_cache) and missed, though JAX records no
    # cache_misses event for an entry it does not write.
    assert first.cells["persistent"] == second.cells["persistent"] == "miss"
    assert first.persistent_not_written is not None
    assert "because it uses host callbacks" in first.persistent_not_written


def test_a_donating_jit_gets_fresh_inputs_for_each_preset_call() -> None:
    # Found by a break-it review: the second call reused the array the first one donated.
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def g(x):\n    return jnp.sin(x) * 2\n\n\n"
        "f = jax.jit(g, donate_argnums=0)\n"
        "args = (jnp.ones(3),)\n"
    )
    calls = observed(source, RunOptions(preset="same"))
    from jaxscope.sandbox.snippet import load_snippet

    snippet = load_snippet(source)
    x = snippet.args[0]
    truth = regen.replay_calls(snippet.f, [(x.copy(),), (x.copy(),)])
    assert [c.layer for c in calls] == [t["layer"] for t in truth] == ["compile", "cpp"]


def test_persistent_preset_says_when_the_snippet_changes_the_cache_settings() -> None:
    from jaxscope.internals.cache_key import persistent_settings

    # A break-it review: f setting its own cache directory (or turning the cache off) made both
    # calls miss the disk, with a cause that named only the in-memory caches.
    source = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "def f(x):\n"
        '    jax.config.update("jax_enable_compilation_cache", False)\n'
        "    return jnp.sin(x) * 2.0\n\n"
        "args = (jnp.ones(3),)\n"
    )
    try:
        ctx = run_probe("caches", source, RunOptions(preset="persistent"))
    finally:
        jax.config.update("jax_enable_compilation_cache", True)  # type: ignore[no-untyped-call]
    first, second = ctx.of_type(JitCallObserved)
    for call in (first, second):
        assert call.cause is not None
        assert "jax_enable_compilation_cache = False (was True)" in call.cause
    # Plain JAX: with the cache disabled nothing is read from disk, so the second call compiles.
    assert second.compiled and second.layer != "persistent"
    # The preset's settings came back after the run (the snippet's change did not leak).
    assert persistent_settings()["jax_compilation_cache_dir"] is None
