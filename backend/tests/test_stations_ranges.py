"""The stations exhibit on a program of thousands of eqns (a loop of 1,000 iterations unrolled
to 4,001 eqns): its ``module_lowered`` is 1.6 MB (StableHLO 556 KB, op links 854 KB) and its
``executable_compiled`` 1.0 MB (optimized HLO 416 KB, HLO links 632 KB). Through the real
sandbox, in an ``on_demand`` run, no line (the events, every range's answer) is over 1 MiB, and
the ranges put back as the page does (texts extended by their next characters, lists by their
next items) give the eager stream's events (design 0045, "The stations' texts")."""

from __future__ import annotations

import json
from typing import Any

from jaxscope.protocol import ItemsSent
from jaxscope.summaries import MAX_STREAMED_LINE_BYTES

from tests.harness import SandboxHarness
from tests.ranges_kit import eager_json, put_back, run_eager_and_on_demand
from tests.test_eqn_ranges import _line, real_harness

__all__ = ["real_harness"]  # the module fixture, used below

# loop_20k's body, 1,000 times: one measured run takes about 10 s here (loop_20k about 50 s).
CODE = """
import jax.numpy as jnp
import numpy as np


def f(x):
    for _ in range(1_000):
        x = jnp.sin(x) * 0.5 + x * 0.999
    return jnp.sum(x)


x = np.linspace(0.1, 2.0, 32, dtype=np.float32).reshape(4, 8)
args = (x,)
"""


def test_a_4001_eqn_loops_stations_stream_no_line_over_1_mib_and_put_back_equal_the_eager_ones(
    real_harness: SandboxHarness, record_property: Any
) -> None:
    eager, page, answers = run_eager_and_on_demand(real_harness, CODE, "stations")
    assert eager[-1].type == page[-1].type == "run_finished", (eager[-1], page[-1])
    for event in [*page, *answers]:
        assert _line(event) <= MAX_STREAMED_LINE_BYTES, (event.type, _line(event))
    sizes: dict[str, Any] = {}
    expected = {
        "module_lowered": {"stablehlo", "op_links"},
        "executable_compiled": {"compiled_text", "hlo_links"},
    }
    for kind, fields in expected.items():
        [whole] = [e for e in eager if e.type == kind]
        [streamed] = [e for e in page if e.type == kind]
        mine = [a for a in answers if isinstance(a, ItemsSent) and a.seq == streamed.seq]
        sizes[kind] = {
            "eager": _line(whole),
            "streamed": _line(streamed),
            "ranges": len(mine),
            "largest_range": max((_line(a) for a in mine), default=0),
        }
        # the case this is about: the whole event is over the runner's threshold (512 KiB)
        assert _line(whole) > MAX_STREAMED_LINE_BYTES // 2
        assert {r.field for r in streamed.list_ranges} == fields
        assert len(mine) == len(streamed.list_ranges)
        # the text streamed is the start of the eager one, cut after a line
        text = "stablehlo" if kind == "module_lowered" else "compiled_text"
        head, full = getattr(streamed, text), getattr(whole, text)
        assert full.startswith(head) and head.endswith("\n") and len(head) < len(full)
        assert put_back(streamed, mine) == eager_json(whole)
    assert _line(next(e for e in eager if e.type == "module_lowered")) > MAX_STREAMED_LINE_BYTES
    record_property("bytes", json.dumps(sizes))
    print(json.dumps(sizes))
