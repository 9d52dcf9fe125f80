"""A jaxpr view too large to stream whole is summarised (``jaxscope.summaries``): its first eqns,
JAX's own text of them, one line saying how many more, and ``total_eqns``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jaxscope import summaries
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged


def loop(x: jax.Array) -> jax.Array:
    for _ in range(300):
        x = jnp.sin(x) * 0.5 + x
    return x


def test_a_summary_keeps_jaxs_text_of_the_first_eqns() -> None:
    closed = jax.make_jaxpr(loop)(jnp.ones(3))
    view = jaxpr_view(closed)
    total = len(view.eqns)
    summary = summaries.summarise_view(view, 10)
    assert summary.total_eqns == total and len(summary.eqns) == 10
    assert summary.eqns == view.eqns[:10]
    lines = summary.text.split("\n")
    full = view.text.split("\n")
    # JAX's header and first ten eqns, byte for byte; then the note; then JAX's closing line.
    assert lines[:11] == full[:11]
    assert lines[11] == summaries.more_eqns_line(10, total)
    assert f"{total - 10:,} more eqns" in lines[11]
    assert lines[12:] == full[full.index(next(ln for ln in full if ln.startswith("  in "))) :]
    assert view.total_eqns is None  # the view itself is untouched
    assert summaries.summarise_view(view, total) is view


def test_only_views_over_the_limit_are_summarised(monkeypatch: pytest.MonkeyPatch) -> None:
    view = jaxpr_view(jax.make_jaxpr(loop)(jnp.ones(3)))
    small = jaxpr_view(jax.make_jaxpr(jnp.sin)(1.0))
    size = len(view.model_dump_json())
    monkeypatch.setattr(summaries, "SUMMARY_BYTES", size // 4)
    event = JaxprStaged(fun_name="loop", jaxpr=view)
    assert summaries.summarise_event(event)
    assert event.jaxpr.total_eqns == len(view.eqns)
    assert len(event.jaxpr.model_dump_json()) <= size // 4 + 2_000
    tiny = JaxprStaged(fun_name="sin", jaxpr=small)
    assert not summaries.summarise_event(tiny) and tiny.jaxpr is small


def test_the_runner_streams_a_summary_and_scales_for_the_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the runner's emit (in-process, the event pipe replaced): an event over the stream
    limit goes out with its jaxpr summarised; the run's size (its limits) is the whole jaxpr's."""
    from jaxscope.protocol import RunRequest
    from jaxscope.sandbox import guard, runner

    sent: list[bytes] = []
    budgets: list[float] = []
    # Not this test process's own CPU limit: the worker's.
    monkeypatch.setattr(guard, "set_cpu_budget", budgets.append)
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    monkeypatch.setattr(runner, "STREAM_LIMIT_BYTES", 50_000)
    monkeypatch.setattr(summaries, "SUMMARY_BYTES", 20_000)
    jvp = jax.make_jaxpr(lambda x, t: jax.jvp(loop, (x,), (t,)))(jnp.ones(3), jnp.ones(3))
    view = jaxpr_view(jvp)
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit="jvp", code=""))
    ctx.cpu_at_start = 0.0
    ctx.emit(JaxprStaged(fun_name="jvp", jaxpr=view))
    staged = [line for line in sent if b'"jaxpr_staged"' in line]
    assert len(staged) == 1 and len(staged[0]) < 50_000
    assert b"more eqns not streamed" in staged[0]
    assert ctx.size >= len(view.eqns)
    assert budgets  # the CPU limit was raised for the whole program


def test_views_beside_a_large_rest_share_what_the_limit_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``jaxpr_split`` is three views and a residual per known value: on a 50,000-eqn program
    each view summarised to SUMMARY_BYTES left the line over the supervisor's limit (the CLI
    ended ``invalid_event``; a break-it review). The views over SUMMARY_BYTES now share what
    the rest of the event leaves of STREAM_LIMIT_BYTES (here scaled down)."""
    from jaxscope.internals.calling import plan_call
    from jaxscope.internals.split import default_known, jvp_program, split_program
    from jaxscope.sandbox.snippet import load_snippet

    from exhibits.partial_eval.events import JaxprSplit

    source = "import jax.numpy as jnp\n\ndef f(x):\n"
    source += "    for _ in range(150):\n        x = jnp.sin(x) * x\n    return x\n\n"
    source += "args = (jnp.ones(3),)\n"
    program = jvp_program(plan_call(load_snippet(source)))
    record, _ = split_program(program, default_known(len(program.labels), program.n_primals))
    event = JaxprSplit.model_validate(record, from_attributes=True)
    views = {
        name: len(getattr(event, name).model_dump_json()) for name in ("jvp", "known", "unknown")
    }
    rest = len(event.model_dump_json()) - sum(views.values())
    assert len(event.residuals) >= 150 and rest > 10_000
    each = min(views.values()) - 1
    limit = rest + 3 * (each // 3)
    monkeypatch.setattr(summaries, "SUMMARY_BYTES", each)
    monkeypatch.setattr(summaries, "MIN_SUMMARY_BYTES", 1)
    monkeypatch.setattr(summaries, "STREAM_LIMIT_BYTES", limit)
    assert summaries.summarise_event(event)
    for name in views:
        view = getattr(event, name)
        assert view.total_eqns is not None and len(view.eqns) < view.total_eqns
    # within the limit, but for each view's note line and rounding of its kept eqns
    assert len(event.model_dump_json()) <= limit + 3 * 2_000
    # each shown eqn is JAX's, as streamed whole (the views keep their first eqns)
    assert event.jvp.eqns[0].text == jaxpr_view(program.jaxpr).eqns[0].text
