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
printed at once, as in an eager capture (``past_budget`` counts them). Small values are printed
at once too: the runner must be able to tell, without printing, that a summary is shorter than
its event (the summary writes ``"preview":null,"deferred":true`` and a ``detail_id`` instead),
from a lower bound of each preview's length (``PendingPreview.min_chars``,
:func:`min_preview_chars`): values whose bound is under :data:`MIN_DEFERRED_CHARS` are printed at
once. See docs/design/0013-ad-capture-speed.md.
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
# A value is held for later only when its preview is at least this long (min_preview_chars):
# then a summary that leaves it out is shorter than the whole event even with its detail_id.
MIN_DEFERRED_CHARS = 48
# ``preview_value``'s print options: numpy summarises an array of more than SUMMARY_THRESHOLD
# elements, keeping EDGE_ITEMS at each end of every axis longer than 2 * EDGE_ITEMS.
SUMMARY_THRESHOLD = 50
EDGE_ITEMS = 3
# The shortest element numpy prints, by dtype kind: ``0.`` for a float (``nan``, ``inf``,
# ``-0.``, ``1.e-05`` are longer), ``True`` for a bool (``False`` and the padding longer), a
# digit for an integer, ``0.+0.j`` for a complex number.
MIN_ELEMENT_CHARS = {"f": 2, "b": 4, "i": 1, "u": 1, "c": 6}


def shown_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """How many entries of each axis numpy prints under ``preview_value``'s options: all of
    them up to :data:`SUMMARY_THRESHOLD` elements, else ``2 * EDGE_ITEMS`` of each axis longer
    than that (``arrayprint._leading_trailing``)."""
    if math.prod(shape) <= SUMMARY_THRESHOLD:
        return tuple(shape)
    return tuple(min(d, 2 * EDGE_ITEMS) for d in shape)


def shown_elements(shape: Sequence[int]) -> int:
    """How many elements numpy prints of an array of ``shape`` (:func:`shown_shape`)."""
    return math.prod(shown_shape(shape))


def min_preview_chars(shape: Sequence[int], kind: str, max_chars: int) -> int:
    """A lower bound of ``len(preview_value(x, max_chars))`` for an array ``x`` of ``shape``
    (ndim >= 1) and dtype kind ``kind`` (``"biufc"``): each printed element at least
    :data:`MIN_ELEMENT_CHARS` long, two brackets around each printed row and sub-array, at
    least two characters (``", "``, or ``","`` and a line break) between two printed neighbours;
    the text cut at ``max_chars``. Tested against ``preview_value``."""
    shown = shown_shape(shape)
    outer, brackets, separators = 1, 0, 0
    for d in shown:  # ``outer`` arrays of this axis, each of ``d`` entries
        brackets += 2 * outer
        separators += 2 * outer * max(d - 1, 0)
        outer *= d
    return min(outer * MIN_ELEMENT_CHARS[kind] + brackets + separators, max_chars)


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
        page and ``arr`` is worth holding (numeric, not a scalar, a preview of at least
        :data:`MIN_DEFERRED_CHARS`, within the byte budget). ``arr`` must not change after."""
        if not self.on_demand or arr.dtype.kind not in "biufc" or arr.ndim == 0:
            return self.text(arr, max_chars)
        min_chars = min_preview_chars(arr.shape, arr.dtype.kind, max_chars)
        if min_chars < MIN_DEFERRED_CHARS:
            return self.text(arr, max_chars)
        if self.held_bytes + arr.nbytes > self.budget_bytes:
            self.past_budget += 1
            return self.text(arr, max_chars)
        self.held_bytes += arr.nbytes
        self.deferred += 1
        return PendingPreview(functools.partial(self.text, arr, max_chars), min_chars)
