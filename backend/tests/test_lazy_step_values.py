"""A page's autodiff capture computes each step's values when the page asks for the step, and
sends the verdict after the steps (docs/design/0068-lazy-step-values.md).

In-process through the runner's own ``RunContext.emit`` (the event pipe replaced), so the
summarising rule and the detail answers (``runner._send_whole``) are the worker's. The whole
events a page gets are the CLI's (eager) events, byte for byte, non-finiteness included; the
non-finite flags are checked against numpy on the snippet's own arrays."""

from __future__ import annotations

import importlib
import json
from typing import Any, Literal

import numpy as np
import pytest
from jaxscope.internals.calling import plan_call
from jaxscope.internals.jvp_steps import capture_jvp
from jaxscope.protocol import RunRequest
from jaxscope.sandbox import guard, runner
from jaxscope.sandbox.snippet import load_snippet

from exhibits.jvp.probe import staged_event, step_event

# log and sqrt of a vector holding a negative number and a zero: NaN and -Inf in the steps.
NONFINITE = """
import jax.numpy as jnp
import numpy as np

def f(x):
    return jnp.sum(jnp.log(x) * jnp.sqrt(x + 1.0))

x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
args = (x,)
"""

# A scalar program: each step's whole event is short, yet its values are not computed for it.
SCALAR = """
import jax.numpy as jnp

def f(x):
    return jnp.sin(x) * x

args = (1.0,)
"""


def _run(
    exhibit: str, code: str, details: Literal["eager", "on_demand"], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], runner.RunContext]:
    sent: list[bytes] = []
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    monkeypatch.setattr(guard, "set_cpu_budget", lambda seconds: None)  # the worker's, not ours
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit=exhibit, code="", details=details))
    ctx.snippet = load_snippet(code)
    importlib.import_module(f"exhibits.{exhibit}.probe").run(ctx)
    return [json.loads(line) for line in sent], ctx


def _wholes(ctx: runner.RunContext, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    answers: list[bytes] = []
    monkeypatch.setattr(runner, "_write_event_line", answers.append)
    for detail_id, event in ctx.capture.items():
        runner._send_whole(event, detail_id, "r")
    out = {}
    for answer in answers:
        whole = json.loads(answer)
        out[whole.pop("detail_of")] = whole
    return out


@pytest.mark.parametrize(
    ("exhibit", "step_type"), [("jvp", "jvp_rule_applied"), ("transpose", "transpose_stepped")]
)
def test_the_page_gets_the_clis_steps_nonfinite_flags_included(
    exhibit: str, step_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager, _ = _run(exhibit, NONFINITE, "eager", monkeypatch)
    page, ctx = _run(exhibit, NONFINITE, "on_demand", monkeypatch)
    wholes = _wholes(ctx, monkeypatch)
    steps = [(want, got) for want, got in zip(eager, page, strict=True) if got["type"] == step_type]
    assert steps
    flags: list[bool] = []
    for want, got in steps:
        # every step streamed as a summary (its values stay in the worker), whatever its size
        assert got["detail_id"] is not None
        assert wholes[got["detail_id"]] == want
        text = json.dumps(want)
        flags.append('"nonfinite": true' in text)
    # numpy's own log/sqrt of x: NaN at -1, -Inf at 0, so some step holds a non-finite value;
    # the input x is finite, and so is the first step's input
    x = load_snippet(NONFINITE).namespace["x"]
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(np.log(x))) and np.all(np.isfinite(x))
    assert any(flags) and not all(flags)


def test_a_pages_jvp_capture_evaluates_nothing_until_a_step_or_the_verdict_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = plan_call(load_snippet(SCALAR))
    primal = plan.make_jaxpr()
    page = capture_jvp(plan, primal, previews_on_demand=True)
    assert page.evaluated is not None and not page.evaluated.computed
    sent: list[bytes] = []
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit="jvp", code="", details="on_demand"))
    for step in page.steps:
        ctx.emit(step_event(step))
    # short steps, all summarised all the same: nothing evaluated for the stream
    assert all(json.loads(line)["detail_id"] for line in sent)
    assert not page.evaluated.computed
    eager = capture_jvp(plan, primal)
    assert eager.evaluated is not None and eager.evaluated.computed
    # the verdict, asked after the steps, evaluates; it is the eager capture's
    assert (
        staged_event(page.staged).model_dump_json() == staged_event(eager.staged).model_dump_json()
    )
    assert page.evaluated.computed and page.staged.matches_jax_jvp
    # d/dx sin(x) x at 1, tangent 1: cos(1) + sin(1), the closed form
    assert float(page.staged.tangents_out[0].preview) == pytest.approx(np.cos(1) + np.sin(1))
    for step, want in zip(page.steps, eager.steps, strict=True):
        assert step_event(step).model_dump_json() == step_event(want).model_dump_json()


def test_a_value_two_steps_read_is_one_view_with_one_summary() -> None:
    """The capture builds one view of a traced value read by several steps (log's output is
    the next step's input), and ``without_previews`` summarises it once for all the events that
    hold it: the same summary object, serialised as a summary of unshared copies is."""
    plan = plan_call(load_snippet(NONFINITE))
    page = capture_jvp(plan, plan.make_jaxpr(), previews_on_demand=True)
    events = [step_event(step) for step in page.steps]
    shared = [
        (a, b, i, j)
        for a in events
        for b in events
        if a.index < b.index
        for i, v in enumerate(a.primals_out)
        for j, w in enumerate(b.primals_in)
        if v is w
    ]
    assert shared
    a, b, i, j = shared[0]
    view = a.primals_out[i]
    assert view.pending is not None and view.preview is None  # held for the page
    sa, sb = a.summarised(), b.summarised()
    summary = sa.primals_out[i]
    assert sb.primals_in[j] is summary
    assert summary.deferred and summary.preview is None and summary.pending is None
    assert a.primals_out[i].pending is view.pending  # the whole event is untouched
    for event, got in ((a, sa), (b, sb)):
        fresh = event.model_copy(deep=True).summarised()  # new views: nothing kept for them
        assert fresh.primals_in[0] is not got.primals_in[0]
        assert fresh.model_dump_json() == got.model_dump_json()
