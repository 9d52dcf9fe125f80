"""Previews printed on demand (docs/design/0013-ad-capture-speed.md, "Previews on demand"): a
page's capture holds the values and prints their previews when the page asks for the step; what
it then gets is the eager capture's event, byte for byte.

In-process through the runner's own ``RunContext.emit`` (the event pipe replaced), so the
summarising rule and the detail answer (``runner._send_whole``) are the worker's."""

from __future__ import annotations

import importlib
import itertools
import json
from typing import Any, Literal

import jax
import ml_dtypes
import numpy as np
import pytest
from jaxscope.internals.previews import (
    MIN_DEFERRED_CHARS,
    Previews,
    min_preview_chars,
    shown_elements,
)
from jaxscope.internals.views import aval_view, preview_value
from jaxscope.protocol import PendingPreview, RunRequest, ValueView, without_previews
from jaxscope.sandbox import guard, runner
from jaxscope.sandbox.snippet import load_snippet

from tests.harness import REPO

# examples/real/gpt_stack.py cut to 1 layer (its own code, one constant changed): a real program
# whose steps hold (2, 32, 256) activations, attention scores and 256x1024 weights.
GPT_1_LAYER = (
    (REPO / "examples/real/gpt_stack.py").read_text().replace("N_LAYERS = 12", "N_LAYERS = 1")
)


@pytest.mark.parametrize(
    "shape",
    [
        (7,),
        (8,),
        (50,),
        (51,),
        (1, 51),
        (51, 1),
        (4, 4, 4),
        (8, 16),
        (3, 7, 2),
        (1000,),
        (2, 3, 4, 5),
    ],
)
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8, np.bool_, np.complex64]
)
def test_min_preview_chars_bounds_numpys_printout(shape: tuple[int, ...], dtype: Any) -> None:
    rng = np.random.default_rng(0)
    for arr in (np.zeros(shape, dtype), (rng.standard_normal(shape) * 1e3).astype(dtype)):
        for max_chars in (400, 600, 40):
            text = preview_value(arr, max_chars)
            bound = min_preview_chars(shape, np.dtype(dtype).kind, max_chars)
            assert len(text) >= bound, (shape, dtype, text)
    # numpy's own count of printed elements (``...`` aside) is what shown_elements says
    printed = preview_value(np.arange(np.prod(shape)).reshape(shape) + 10, 10**6)
    digits = [t for t in printed.replace("[", " ").replace("]", " ").replace(",", " ").split()]
    assert len([t for t in digits if t != "..."]) == shown_elements(shape)


def test_eager_previews_are_text_and_on_demand_ones_print_the_same_when_asked() -> None:
    arr = np.linspace(-1.0, 1.0, 8 * 16, dtype=np.float32).reshape(8, 16)
    eager, page = Previews(), Previews(on_demand=True)
    text = eager.preview(arr, 400)
    pending = page.preview(arr, 400)
    assert text == preview_value(arr, 400)
    assert isinstance(pending, PendingPreview) and pending.min_chars <= len(text)
    assert page.deferred == 1 and page.held_bytes == arr.nbytes
    assert pending.text() == text and pending.text() is pending.text()
    # Too few printed elements, a scalar, float0, an ml_dtypes float: printed at once.
    small = np.arange(6, dtype=np.float32)
    assert min_preview_chars(small.shape, "f", 400) < MIN_DEFERRED_CHARS
    for value in (small, np.float32(2.5), np.zeros((3, 4), jax.dtypes.float0)):
        assert page.preview(np.asarray(value), 400) == preview_value(value, 400)
    bf16 = np.ones(64, ml_dtypes.bfloat16)
    assert page.preview(bf16, 400) == preview_value(bf16, 400)


def test_past_the_byte_budget_previews_are_printed_at_once() -> None:
    arr = np.ones((64, 64), np.float32)  # 16 KiB
    page = Previews(on_demand=True, budget_bytes=3 * arr.nbytes)
    got = [page.preview(arr + k, 400) for k in range(5)]
    assert [isinstance(g, PendingPreview) for g in got] == [True, True, True, False, False]
    assert page.held_bytes == 3 * arr.nbytes and page.past_budget == 2
    assert [g.text() if isinstance(g, PendingPreview) else g for g in got] == [
        preview_value(arr + k, 400) for k in range(5)
    ]


def test_a_summary_drops_a_pending_preview_and_a_copy_shares_it() -> None:
    arr = np.ones((8, 16), np.float32)
    pending = Previews(on_demand=True).preview(arr, 400)
    assert isinstance(pending, PendingPreview)
    view = ValueView(role="primal", aval=aval_view(jax.typeof(arr)))
    view.with_pending(pending)
    summary = without_previews(view)
    assert summary.preview is None and summary.deferred and summary.pending is None
    assert json.loads(view.model_dump_json())["preview"] == preview_value(arr, 400)
    assert view.model_copy(deep=True).pending is pending


def _run(
    exhibit: str, code: str, details: Literal["eager", "on_demand"], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[bytes], runner.RunContext]:
    sent: list[bytes] = []
    monkeypatch.setattr(runner, "_write_event_line", sent.append)
    monkeypatch.setattr(guard, "set_cpu_budget", lambda seconds: None)  # the worker's, not ours
    ctx = runner.RunContext(RunRequest(run_id="r", exhibit=exhibit, code="", details=details))
    ctx.snippet = load_snippet(code)
    importlib.import_module(f"exhibits.{exhibit}.probe").run(ctx)
    return sent, ctx


def _pending(event: Any) -> list[PendingPreview]:
    out: list[PendingPreview] = []
    stack: list[Any] = [event]
    while stack:
        value = stack.pop()
        if isinstance(value, ValueView):
            if value.pending is not None:
                out.append(value.pending)
        elif hasattr(type(value), "model_fields"):
            stack.extend(getattr(value, name) for name in type(value).model_fields)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return out


@pytest.mark.parametrize("exhibit", ["jvp", "transpose"])
def test_a_deferred_preview_fetched_on_demand_equals_the_eager_one_on_a_real_program(
    exhibit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager, _ = _run(exhibit, GPT_1_LAYER, "eager", monkeypatch)
    # The CLI's run alone sends the gradient's leaves the check summarised (bbacfc8).
    eager = [line for line in eager if b'"type":"gradient_values_sent"' not in line]
    page, ctx = _run(exhibit, GPT_1_LAYER, "on_demand", monkeypatch)
    assert len(page) == len(eager)
    # The page's capture printed no preview of the steps it summarised: they are still pending.
    pending = list(itertools.chain.from_iterable(_pending(e) for e in ctx.capture.values()))
    assert len(pending) > 50
    assert not any(p._text is not None for p in pending)
    answers: list[bytes] = []
    monkeypatch.setattr(runner, "_write_event_line", answers.append)
    for detail_id, event in ctx.capture.items():
        runner._send_whole(event, detail_id, "r")
    wholes = {json.loads(a)["detail_of"]: json.loads(a) for a in answers}
    checked = 0
    for line_eager, line_page in zip(eager, page, strict=True):
        want, got = json.loads(line_eager), json.loads(line_page)
        detail_id = got.get("detail_id")
        if detail_id is None:
            if want["type"] != "stage_timed":
                assert got == want
            continue
        assert '"preview":"' not in line_page.decode()
        whole = wholes[detail_id]
        del whole["detail_of"]
        assert whole == want, want["type"]
        checked += 1
    assert checked == len(ctx.capture) > 20
