"""The transpose exhibit's gradient check of a model under one ``jit`` call (the jitted GPT
stack, ``f = jax.jit(f)``): its whole ``gradient_checked`` is 2.4 MB (four copies of 16,384
values: each leaf's row and each argument's values). Through the real sandbox, in an
``on_demand`` run, no line (the events, every detail answer, every list range) is over 1 MiB,
and the ranges put back as the page does give the eager stream's event (design 0045, list
ranges; ``GradientChecked.ranged_lists``)."""

from __future__ import annotations

import json
from typing import Any

from jaxscope.protocol import DetailRequest, EventModel, ItemsSent, RunRequest
from jaxscope.summaries import MAX_STREAMED_LINE_BYTES

from tests.harness import SandboxHarness
from tests.test_eqn_ranges import _line, _real_code, real_harness

__all__ = ["real_harness"]  # the module fixture, used below


def _runs(
    harness: SandboxHarness, code: str
) -> tuple[list[EventModel], list[EventModel], list[EventModel]]:
    """The eager stream, the ``on_demand`` stream, and the answers to every detail id and every
    range id the ``on_demand`` stream's events carry (what a Download asks for)."""
    session = harness.session()
    out: dict[str, list[EventModel]] = {"eager": [], "page": [], "answers": []}

    async def go() -> None:
        for details in ("eager", "on_demand"):
            got = out["eager" if details == "eager" else "page"]

            async def emit(event: EventModel, got: list[EventModel] = got) -> None:
                got.append(event)

            request = RunRequest(
                run_id=f"r-{details}", exhibit="transpose", code=code, details=details
            )
            await session.run(request, emit)

        async def answer(event: EventModel) -> None:
            out["answers"].append(event)

        for event in out["page"]:
            ids = [r.detail_id for r in event.list_ranges]
            if event.detail_id is not None:
                ids.append(event.detail_id)
            for detail_id in ids:
                await session.detail(
                    DetailRequest(run_id="r-on_demand", detail_id=detail_id), answer
                )

    try:
        harness.call(go(), timeout=1200)
    finally:
        harness.call(session.close())
    return out["eager"], out["page"], out["answers"]


def _put_back(event: EventModel, answers: list[ItemsSent]) -> dict[str, Any]:
    """``event`` (JSON) with its list ranges' answers put back in order, as the page's store does
    (``frontend/src/store/list-ranges.ts``: a range held by the event, ``field`` its path)."""
    out: dict[str, Any] = json.loads(event.model_dump_json())
    ranges = list(out.pop("list_ranges", []))
    for sent in answers:
        first = next(r for r in ranges if r["field"] == sent.path)
        assert (first["detail_id"], first["start"]) == (sent.detail_of, sent.start)
        ranges.remove(first)
        *parts, last = sent.path.split(".")
        holder: Any = out
        for part in parts:
            holder = holder[int(part)] if isinstance(holder, list) else holder[part]
        key: Any = int(last) if isinstance(holder, list) else last
        assert len(holder[key]) == sent.start
        holder[key] = [*holder[key], *json.loads(sent.model_dump_json())["items"]]
    assert not ranges, ranges
    return out


def test_the_jitted_gpt_stacks_gradient_check_is_under_1_mib_a_line_and_whole_put_back(
    real_harness: SandboxHarness, record_property: Any
) -> None:
    eager, page, answers = _runs(real_harness, _real_code("gpt_stack_jit"))
    assert eager[-1].type == page[-1].type == "run_finished", (eager[-1], page[-1])
    [whole] = [e for e in eager if e.type == "gradient_checked"]
    [streamed] = [e for e in page if e.type == "gradient_checked"]
    mine = [a for a in answers if isinstance(a, ItemsSent) and a.seq == streamed.seq]
    record_property(
        "bytes",
        json.dumps(
            {
                "eager_gradient_checked": _line(whole),
                "streamed_gradient_checked": _line(streamed),
                "its_ranges": len(mine),
                "largest_range": max((_line(a) for a in mine), default=0),
                "largest_line": max(_line(e) for e in [*page, *answers]),
            }
        ),
    )
    # the case this is about: the whole event is over the bound
    assert _line(whole) > 2 * MAX_STREAMED_LINE_BYTES
    for event in [*page, *answers]:
        assert _line(event) <= MAX_STREAMED_LINE_BYTES, (event.type, _line(event))
    # sent whole, in ranges: no summary whose detail would be the 2.4 MB event
    assert streamed.detail_id is None and streamed.list_ranges
    assert {r.field for r in streamed.list_ranges} >= {"leaves", "gradient.0"}
    assert len(mine) == len(streamed.list_ranges)
    back, eager_whole = _put_back(streamed, mine), json.loads(whole.model_dump_json())
    for key in ("run_id", "seq"):  # the two runs' own
        back.pop(key), eager_whole.pop(key)
    assert back == eager_whole
