"""The transpose exhibit's gradient check of a model under one ``jit`` call (the jitted GPT
stack, ``f = jax.jit(f)``): its whole ``gradient_checked`` is 2.4 MB (four copies of 16,384
values: each leaf's row and each argument's values). Through the real sandbox, in an
``on_demand`` run, no line (the events, every detail answer, every list range) is over 1 MiB,
and the ranges put back as the page does give the eager stream's event (design 0045, list
ranges; ``GradientChecked.ranged_lists``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jaxscope.protocol import ItemsSent
from jaxscope.summaries import MAX_STREAMED_LINE_BYTES

from tests.harness import SandboxHarness
from tests.ranges_kit import eager_json, put_back, run_eager_and_on_demand
from tests.test_eqn_ranges import _line, _real_code, real_harness

__all__ = ["real_harness"]  # the module fixture, used below


@pytest.mark.full  # the full-size GPT stack (~2.5 CPU-min); make test-all
def test_the_jitted_gpt_stacks_gradient_check_is_under_1_mib_a_line_and_whole_put_back(
    real_harness: SandboxHarness, record_property: Any
) -> None:
    eager, page, answers = run_eager_and_on_demand(
        real_harness, _real_code("gpt_stack_jit"), "transpose", summaries_too=True, timeout=1200
    )
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
    assert put_back(streamed, mine) == eager_json(whole)
