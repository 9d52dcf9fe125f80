"""Value previews of one autodiff capture (the jvp and transpose steps): each value printed once,
and, for a page that asks for details on demand, printed only when the page asks.

A step event shows every value going into and out of a rule as ``preview_value`` prints it
(numpy's ``array2string``, ~0.1-0.3 ms an array here). An eager capture (the CLI, tests) prints
them as it builds the events, memoised by content (dtype, shape, bytes: the text is a function of
those). A capture for a page (``on_demand``) streams summaries without previews
(``jaxscope.protocol.without_previews``), so it does not print them: it hands out a
``PendingPreview`` that holds the host array and prints it, through the same memo, when the
whole event is serialised (a ``DetailRequest``). The text is then what the eager capture would
have printed, byte for byte.

Held arrays are bounded: past :data:`DEFER_BUDGET_BYTES` of them in one capture, values are
printed at once, as in an eager capture (``past_budget`` counts them). Small values (fewer than
:data:`MIN_DEFERRED_SHOWN` printed elements) are printed at once too: their text may be shorter
than what a summary writes instead (``"preview":null,"deferred":true``), and the runner must be
able to tell, without printing, that a summary is shorter than its event
(``PendingPreview.min_chars``, :func:`min_preview_chars`). See docs/design/0013-ad-capture-speed.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from jaxscope.internals.views import preview_value
from jaxscope.protocol import PendingPreview

# Arrays up to this many elements have their previews memoised by content (dtype, shape, bytes).
MEMO_ELEMENTS = 1 << 14
# Host bytes of values one capture may hold for previews not printed yet (then: printed at once).
DEFER_BUDGET_BYTES = 64 * 2**20
# A value is held for later only when at least this many of its elements are printed.
MIN_DEFERRED_SHOWN = 7
# ``preview_value``'s print options: numpy summarises an array of more than SUMMARY_THRESHOLD
# elements, keeping EDGE_ITEMS at each end of every axis longer than 2 * EDGE_ITEMS.
SUMMARY_THRESHOLD = 50
EDGE_ITEMS = 3


def shown_elements(shape: Sequence[int]) -> int:
    """How many elements numpy prints of an array of ``shape`` under ``preview_value``'s
    options: all of them up to :data:`SUMMARY_THRESHOLD`, else ``2 * EDGE_ITEMS`` per axis
    longer than that (``arrayprint._leading_trailing``)."""
    n = math.prod(shape)
    if n <= SUMMARY_THRESHOLD:
        return n
    return math.prod(min(d, 2 * EDGE_ITEMS) for d in shape)


def min_preview_chars(shape: Sequence[int], max_chars: int) -> int:
    """A lower bound of ``len(preview_value(x, max_chars))`` for a numeric array ``x`` of
    ``shape`` (ndim >= 1): each printed element is at least one character, each separator
    between two of them at least two (``", "``, or ``","`` and a line break), the brackets two;
    the text is cut at ``max_chars``. Tested against ``preview_value``."""
    shown = shown_elements(shape)
    return min(3 * shown, max_chars)


class Previews:
    """The previews of one capture. :meth:`text` prints (memoised by content); :meth:`preview`
    returns the text, or, when ``on_demand``, a ``PendingPreview`` of it (see the module
    docstring). ``held_bytes``: host bytes held by pending previews; ``deferred``: how many
    were handed out; ``past_budget``: values printed at once because the budget was spent."""

    def __init__(self, on_demand: bool = False, budget_bytes: int = DEFER_BUDGET_BYTES) -> None:
        self.on_demand = on_demand
        self.budget_bytes = budget_bytes
        self.held_bytes = 0
        self.deferred = 0
        self.past_budget = 0
        self._memo: dict[tuple[str, tuple[int, ...], bytes, int], str] = {}

    def text(self, arr: np.ndarray, max_chars: int) -> str:
        """``preview_value(arr, max_chars)``, printed once per content within this capture."""
        if arr.dtype.kind not in "biufc" or arr.size > MEMO_ELEMENTS:
            return preview_value(arr, max_chars)
        key = (arr.dtype.str, arr.shape, arr.tobytes(), max_chars)
        text = self._memo.get(key)
        if text is None:
            text = self._memo[key] = preview_value(arr, max_chars)
        return text

    def preview(self, arr: np.ndarray, max_chars: int) -> str | PendingPreview:
        """The text of :meth:`text`, or a ``PendingPreview`` of it when this capture is for a
        page and ``arr`` is worth holding (numeric, at least :data:`MIN_DEFERRED_SHOWN` elements
        printed, within the byte budget). ``arr`` must not be changed afterwards."""
        if (
            not self.on_demand
            or arr.dtype.kind not in "biufc"
            or arr.ndim == 0
            or shown_elements(arr.shape) < MIN_DEFERRED_SHOWN
        ):
            return self.text(arr, max_chars)
        if self.held_bytes + arr.nbytes > self.budget_bytes:
            self.past_budget += 1
            return self.text(arr, max_chars)
        self.held_bytes += arr.nbytes
        self.deferred += 1
        return PendingPreview(
            functools.partial(self.text, arr, max_chars), min_preview_chars(arr.shape, max_chars)
        )
