"""``jit_called.printed`` (what ``f`` printed during a jit call) is cut to what one event may
carry (``jaxscope.user_text.cut_printed``), as ``stdout_printed`` is capped: a print loop in
``f`` made a 4.9 MB event line (over the 1 MiB bound of an ``on_demand`` run)."""

from __future__ import annotations

from jaxscope.summaries import MAX_STREAMED_LINE_BYTES
from jaxscope.user_text import EVENT_PRINT_NOTE

from exhibits.conftest import run_probe
from exhibits.tracing.events import JitCalled

SOURCE = """
import jax.numpy as jnp

def f(x):
    for i in range(50_000):
        print("step", i, "." * 60)
    print('"\\x01' * 20_000)
    return x * 2

args = (jnp.ones(3),)
"""


def test_a_print_loop_in_f_is_cut_in_jit_called() -> None:
    called = run_probe("tracing", SOURCE).of_type(JitCalled)[0]
    assert called.traced
    line = len(called.model_dump_json().encode())
    assert line <= MAX_STREAMED_LINE_BYTES // 2, line
    assert called.printed.startswith("step 0 " + "." * 60 + "\nstep 1 ")
    assert called.printed.endswith("\n" + EVENT_PRINT_NOTE)
