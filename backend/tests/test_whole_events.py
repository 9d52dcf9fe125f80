"""``jaxscope.whole_events``: an eager run's event too large for one line is streamed in ranges
(its answers right after it, design 0051) and put back together for the CLI: the event the CLI
prints equals the one JAX gave, text, eqns and lists."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jaxscope import summaries
from jaxscope.internals.calling import plan_call
from jaxscope.internals.split import default_known, jvp_program, split_program
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import EVENT_ADAPTER, EventModel, ItemsSent, JaxprEqnsSent, JaxprStaged
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.whole_events import WholeEvents, ranges_left

from exhibits.partial_eval.events import JaxprSplit
from tests.harness import REPO

LOOP = """
import jax.numpy as jnp

def f(x):
    for _ in range(400):
        x = jnp.sin(x) * 0.5 + x
    return jnp.sum(x)

args = (jnp.ones(3),)
"""


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges as for a program a hundred times larger: a few KiB each."""
    monkeypatch.setattr(summaries, "RANGES_FROM_BYTES", 20_000)
    monkeypatch.setattr(summaries, "RANGE_VIEW_BYTES", 4_000)
    monkeypatch.setattr(summaries, "HEAD_BYTES", 3_000)
    monkeypatch.setattr(summaries, "RANGE_BYTES", 6_000)


def split_of_loop() -> EventModel:
    plan = plan_call(load_snippet(LOOP))
    program = jvp_program(plan)
    record, _ = split_program(program, default_known(len(program.labels), program.n_primals))
    event = JaxprSplit.model_validate(record, from_attributes=True)
    return event


def streamed(event: EventModel) -> list[EventModel]:
    """``event`` as an eager run streams it once it is over the line limit: the event with its
    views and lists in ranges, then every range's answer (the supervisor gives them its seq)."""
    cut = event.model_copy(deep=True)
    ids = itertools.count()
    answers = summaries.split_event(cut, lambda: f"r{next(ids)}")
    for answer in answers:
        answer.seq = cut.seq
    wire = [cut, *answers]
    # as the CLI gets them: validated from their JSON
    return [EVENT_ADAPTER.validate_json(e.model_dump_json()) for e in wire]


def test_a_split_event_streamed_in_ranges_is_whole_again(small_ranges: None) -> None:
    whole = split_of_loop()
    whole.seq = 3
    wire = streamed(whole)
    answers = wire[1:]
    assert any(isinstance(a, JaxprEqnsSent) for a in answers)
    assert any(isinstance(a, ItemsSent) and a.path == "residuals" for a in answers)
    assert ranges_left(wire[0].model_dump(mode="json")) == len(answers)
    merger = WholeEvents()
    out: list[EventModel] = []
    for event in wire:
        out += merger.feed(event)
    out += merger.finish()
    assert len(out) == 1
    assert out[0].model_dump(mode="json") == whole.model_dump(mode="json")
    # JAX's own text of each jaxpr, every eqn
    for name in ("jvp", "known", "unknown"):
        assert getattr(out[0], name).text == getattr(whole, name).text
        assert getattr(out[0], name).total_eqns is None


def test_events_keep_their_order_and_a_wrong_answer_is_dropped(small_ranges: None) -> None:
    whole = split_of_loop()
    whole.seq = 1
    wire = streamed(whole)
    answers = wire[1:]
    # the second eqn range of the JVP view: not the next one until the first is in
    second = [i for i, a in enumerate(answers) if isinstance(a, JaxprEqnsSent) and a.field == "jvp"]
    early = answers[second[1]]
    before = JaxprStaged(fun_name="g", jaxpr=jaxpr_view(jax.make_jaxpr(jnp.sin)(1.0)), seq=0)
    after = JaxprStaged(fun_name="h", jaxpr=jaxpr_view(jax.make_jaxpr(jnp.cos)(1.0)), seq=2)
    merger = WholeEvents()
    assert [e.seq for e in merger.feed(before)] == [0]
    assert merger.feed(wire[0]) == []  # held: its ranges are to come
    assert merger.feed(early) == []  # out of order: dropped, nothing changed
    assert merger.feed(after) == []  # held behind it, in order
    out: list[EventModel] = []
    for answer in answers:
        out += merger.feed(answer)
    assert [e.seq for e in out] == [1, 2]
    assert out[0].model_dump(mode="json") == whole.model_dump(mode="json")
    assert merger.finish() == []

    # A run that ends before its last answer: the event is handed on as it is, partial.
    merger = WholeEvents()
    assert merger.feed(wire[0]) == []
    for answer in answers[:-1]:
        assert merger.feed(answer) == []
    [partial] = merger.finish()
    assert ranges_left(partial.model_dump(mode="json")) == 1


@pytest.mark.full  # the full-size 20,000-eqn loop (~2 CPU-min); make test-all
def test_the_cli_prints_the_whole_unknown_jaxpr_of_the_20000_eqn_loop(tmp_path: Path) -> None:
    """``jaxscope run partial_eval examples/real/loop_20k.py --print unknown_jaxpr``: its
    ``jaxpr_split`` (three views of ~20,000 eqns) is over the line limit; the CLI used to print
    a summary ("… 13,758 more eqns not streamed") and now prints JAX's whole text."""
    from exhibits.partial_eval.golden import regen

    program = REPO / "examples" / "real" / "loop_20k.py"
    done = subprocess.run(
        [sys.executable, "-m", "jaxscope.cli", "run", "partial_eval", str(program), "--json"],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    # the answers were merged, not printed
    assert not [e for e in events if e["type"] in ("jaxpr_eqns_sent", "items_sent")]
    [split] = [e for e in events if e["type"] == "jaxpr_split"]
    known, unknown, _, res = regen.split(regen.load(program))
    assert split["unknown"]["text"] == str(unknown)
    assert split["known"]["text"] == str(known)
    assert len(split["unknown"]["eqns"]) == len(unknown.jaxpr.eqns)
    assert split["unknown"].get("total_eqns") is None
    assert len(split["residuals"]) == len(res)


def test_the_runner_sends_an_eager_event_over_the_limit_in_ranges(
    small_ranges: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the runner's emit (in-process, the event pipe replaced): an eager run's event
    over the stream limit goes out as its head, then every range's answer, and comes back
    whole; one still over the limit once split is summarised as before, with no answers."""
    from jaxscope.protocol import RunRequest
    from jaxscope.sandbox import guard, runner

    sent: list[bytes] = []
    monkeypatch.setattr(guard, "set_cpu_budget", lambda _: None)
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    monkeypatch.setattr(runner, "STREAM_LIMIT_BYTES", 50_000)
    closed = jax.make_jaxpr(lambda x: jnp.sum(load_snippet(LOOP).f(x)))(jnp.ones(3))
    staged = JaxprStaged(fun_name="f", jaxpr=jaxpr_view(closed))
    assert len(staged.model_dump_json()) > 50_000
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit="tracing", code=""))
    ctx.cpu_at_start = 0.0
    ctx.emit(staged)
    wire = [EVENT_ADAPTER.validate_json(line) for line in sent]
    assert all(len(line) <= 50_000 for line in sent)
    assert [type(e) for e in wire[:2]] == [JaxprStaged, JaxprEqnsSent]
    merger = WholeEvents()
    out: list[EventModel] = []
    for event in wire:
        out += merger.feed(event)
    out += merger.finish()
    [whole] = [e for e in out if isinstance(e, JaxprStaged)]
    assert whole.jaxpr.text == str(closed) and len(whole.jaxpr.eqns) == len(closed.jaxpr.eqns)

    sent.clear()
    monkeypatch.setattr(summaries, "HEAD_BYTES", 60_000)  # a head alone over the limit
    monkeypatch.setattr(summaries, "SUMMARY_BYTES", 20_000)
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit="tracing", code=""))
    ctx.cpu_at_start = 0.0
    ctx.emit(staged)
    assert not [line for line in sent if b'"jaxpr_eqns_sent"' in line]
    [line] = [line for line in sent if b'"jaxpr_staged"' in line]
    assert b"more eqns not streamed" in line and len(line) <= 50_000


def _emit_lines(monkeypatch: pytest.MonkeyPatch, event: EventModel) -> list[bytes]:
    """The lines an eager run's emit writes for ``event`` (in-process, the pipe replaced)."""
    from jaxscope.protocol import RunRequest
    from jaxscope.sandbox import guard, runner

    sent: list[bytes] = []
    monkeypatch.setattr(guard, "set_cpu_budget", lambda _: None)
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit="tracing", code=""))
    ctx.cpu_at_start = 0.0
    ctx.emit(event)
    return sent


def test_an_eager_run_keeps_within_the_supervisors_stream_limit(
    small_ranges: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers that would take the run's stream past what the supervisor accepts
    (``MAX_RUN_BYTES``, less room for the rest of the run) are not sent: the event is summarised
    as before, and the run ends as a run, not as ``invalid_event``."""
    from jaxscope.sandbox import runner, worker

    assert runner.EAGER_STREAM_BYTES <= worker.MAX_RUN_BYTES - 4 * 2**20
    monkeypatch.setattr(runner, "STREAM_LIMIT_BYTES", 50_000)
    monkeypatch.setattr(summaries, "SUMMARY_BYTES", 20_000)
    closed = jax.make_jaxpr(lambda x: jnp.sum(load_snippet(LOOP).f(x)))(jnp.ones(3))
    staged = JaxprStaged(fun_name="f", jaxpr=jaxpr_view(closed))
    monkeypatch.setattr(runner, "EAGER_STREAM_BYTES", len(staged.model_dump_json()) // 2)
    sent = _emit_lines(monkeypatch, staged)
    assert not [line for line in sent if b'"jaxpr_eqns_sent"' in line]
    [line] = [line for line in sent if b'"jaxpr_staged"' in line]
    assert b"more eqns not streamed" in line and b'"eqn_ranges"' not in line


def test_a_summarised_fallback_names_no_range_it_will_not_answer(
    small_ranges: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A jitted program is one eqn: its inner jaxpr's text and eqns are split inside it, ranges
    the event holds in its own ``list_ranges``. When the event is still over the limit once
    split (the inner jaxpr's printout in ``params`` cannot be split), it goes out summarised,
    and must not name the ranges of the split it did not send: no answer would come, and the
    CLI would hold it, and every event after it, to the end."""
    from jaxscope.sandbox import runner

    code = LOOP.replace("range(400)", "range(1500)")
    closed = jax.make_jaxpr(jax.jit(lambda x: load_snippet(code).f(x)))(jnp.ones(3))
    assert len(closed.jaxpr.eqns) == 1
    staged = JaxprStaged(fun_name="f", jaxpr=jaxpr_view(closed))
    monkeypatch.setattr(runner, "STREAM_LIMIT_BYTES", 50_000)
    sent = _emit_lines(monkeypatch, staged)
    assert not [line for line in sent if b'"items_sent"' in line or b'"jaxpr_eqns_sent"' in line]
    [line] = [line for line in sent if b'"jaxpr_staged"' in line]
    assert b'"list_ranges"' not in line and b'"eqn_ranges"' not in line
    assert staged.list_ranges == []  # the event itself was not changed by the split


def test_answers_of_the_wrong_size_or_kind_leave_the_event_as_streamed(small_ranges: None) -> None:
    whole = split_of_loop()
    wire = streamed(whole)
    first = next(a for a in wire[1:] if isinstance(a, JaxprEqnsSent))
    short = first.model_copy(update={"eqns": first.eqns[:-1]})
    held = wire[0].model_dump(mode="json")
    from jaxscope.whole_events import apply_eqns_sent, apply_items_sent

    assert not apply_eqns_sent(held, short)
    items = next(a for a in wire[1:] if isinstance(a, ItemsSent) and a.path == "residuals")
    forged = items.model_copy(update={"items": [{"not": "a residual"}] * len(items.items)})
    merger = WholeEvents()
    outs = merger.feed(wire[0])
    for answer in wire[1:]:
        outs += merger.feed(forged if answer is items else answer)
    [out] = outs + merger.finish()  # a residual that is not one: the event as streamed
    assert out.model_dump(mode="json") == wire[0].model_dump(mode="json")
    assert not apply_items_sent(held, items.model_copy(update={"path": "residuals.²"}))
