"""Summaries of jaxpr views too large to stream whole (issue 14, "real programs at full size").

A derived program of a real model (the JVP, linear or batched jaxpr of a 20,000-eqn loop) makes a
:class:`~jaxscope.protocol.JaxprView` of tens of MB: one event over the supervisor's line cap
(``sandbox/worker.py``'s ``MAX_EVENT_LINE_BYTES``), and a run that fails after all its work.
Instead, the runner streams a summary of such a view: its first eqns (as many as fit in
:data:`SUMMARY_BYTES`), JAX's text of those eqns with one line saying how many more there are,
and ``total_eqns`` set, which the page's jaxpr widgets show ("the first 4,000 of 40,001 eqns").
Everything else in the event is kept. Nothing here imports JAX: it works on the wire models.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from jaxscope.protocol import (
    AvalView,
    EqnRange,
    EqnView,
    ItemsSent,
    JaxprEqnsSent,
    JaxprView,
    ListRange,
    VarView,
)

# Annotations only: the worker imports this module, and the events of the exhibit it runs, not
# the event union (every exhibit's events.py; issue 36).
if TYPE_CHECKING:
    from jaxscope.protocol import EventModel

# An event whose JSON line is longer than this has its largest jaxpr views summarised.
STREAM_LIMIT_BYTES = 12 * 2**20
# What a summarised view may take of the event's line, at most.
SUMMARY_BYTES = 4 * 2**20


def more_eqns_line(shown: int, total: int) -> str:
    """The line a summarised jaxpr text carries where its other eqns would be."""
    return (
        f"    … {total - shown:,} more eqns not streamed (the first {shown:,} of {total:,} are "
        "shown: this program is too large to stream whole; run a part of it to see all) …"
    )


def summarise_view(view: JaxprView, keep: int) -> JaxprView:
    """``view`` with only its first ``keep`` eqns: its text is JAX's text up to the eqn after
    them, then :func:`more_eqns_line`, then JAX's closing ``in (...) }`` line(s); ``total_eqns``
    is the full count. A view with at most ``keep`` eqns is returned as it is."""
    total = len(view.eqns)
    if total <= keep:
        return view
    text = view.text
    cut = _eqn_start(text, view, keep)
    footer = text.rfind("\n  in ")
    if cut is None or footer < 0 or footer < cut:
        head, tail = text, ""
    else:
        head, tail = text[:cut], text[footer + 1 :]
    summary = head.rstrip("\n") + "\n" + more_eqns_line(keep, total) + "\n" + tail
    return view.model_copy(
        update={"eqns": view.eqns[:keep], "text": summary.rstrip("\n"), "total_eqns": total}
    )


def body_start(text: str) -> int:
    """The offset of the `` let`` that ends the header of the top-level jaxpr in JAX's text
    (the first line opening with ``{ lambda``: the jaxprs it shares are printed before it, as
    ``let name = { lambda ... } in``, their eqns at the same indent); -1 when there is none."""
    top = 0 if text.startswith("{ lambda ") else text.find("\n{ lambda ")
    return -1 if top < 0 else text.find(" let\n", top)


def _eqn_start(text: str, view: JaxprView, index: int) -> int | None:
    """The offset in ``text`` of the line where eqn ``index`` starts (eqns are printed in order,
    each from its own line; found by their first lines in order), or None when not found."""
    pos = body_start(text)
    if pos < 0:
        return None
    for eqn in view.eqns[: index + 1]:
        first = eqn.text.split("\n", 1)[0].strip()
        found = text.find("\n    " + first, pos)
        if found < 0:
            return None
        start = found + 1
        pos = start + 1
    return start


# The least a summarised view is given when the rest of its event is large.
MIN_SUMMARY_BYTES = 256 * 2**10


def summarise_event(event: EventModel, line_bytes: int | None = None) -> bool:
    """Summarise, in place, the jaxpr views of ``event`` (its fields that are a
    :class:`JaxprView`) that take more than :data:`SUMMARY_BYTES` of its JSON line, each to
    about that size, or less when the rest of the event is large: the views over it share what
    :data:`STREAM_LIMIT_BYTES` leaves (at least :data:`MIN_SUMMARY_BYTES` each), so that three
    views beside 12,500 residuals (a 50,000-eqn program's ``jaxpr_split``) still fit one line.
    ``line_bytes``: the length of the event's line when the caller has it (the whole event is
    not serialised again for it). Returns whether anything was summarised."""
    views = [
        (name, value)
        for name, value in vars(event).items()
        if isinstance(value, JaxprView) and len(value.eqns) > 1
    ]
    sizes = {name: len(view.model_dump_json()) for name, view in views}
    large = [name for name, size in sizes.items() if size > SUMMARY_BYTES]
    if not large:
        return False
    whole_bytes = len(event.model_dump_json()) if line_bytes is None else line_bytes
    kept = whole_bytes - sum(sizes[name] for name in large)
    budget = max(MIN_SUMMARY_BYTES, (STREAM_LIMIT_BYTES - kept) // len(large))
    budget = min(SUMMARY_BYTES, budget)
    whole = dict(views)
    # A view's eqns are not all of its bytes (its invars, a residual per unknown input): the
    # first cut may leave the line over; the budget then shrinks by what is still over.
    for _ in range(4):
        for name in large:
            keep = max(1, int(len(whole[name].eqns) * budget / sizes[name]))
            setattr(event, name, summarise_view(whole[name], keep))
        line = len(event.model_dump_json())
        if line <= STREAM_LIMIT_BYTES or budget <= MIN_SUMMARY_BYTES:
            break
        shown = line - kept
        budget = max(MIN_SUMMARY_BYTES, int(budget * (STREAM_LIMIT_BYTES - kept) / shown))
    return True


# ---------------------------------------------------------------------------------------------
# Eqn ranges (design 0045): in an ``on_demand`` run no event line is over MAX_STREAMED_LINE_BYTES.
# ---------------------------------------------------------------------------------------------

# The bound: no line an ``on_demand`` run streams is longer (its event and every detail answer).
MAX_STREAMED_LINE_BYTES = 2**20
# An ``on_demand`` event whose line is longer than this has its large jaxpr views split.
RANGES_FROM_BYTES = 512 * 2**10
# A view whose JSON is longer than this is split (when its event is over RANGES_FROM_BYTES).
RANGE_VIEW_BYTES = 128 * 2**10
# What the eqns streamed with the view may take (its first screen: tens of eqns at least).
HEAD_BYTES = 96 * 2**10
# What one range's eqns may take (one range: at least one eqn, whatever its size).
RANGE_BYTES = 192 * 2**10


def ranges_line(start: int, total: int) -> str:
    """The line a view split into ranges carries where its eqns ``start`` .. ``total`` go."""
    return f"    … eqns {start:,} to {total - 1:,} of {total:,}: sent as the page scrolls …"


def eqn_starts(view: JaxprView) -> tuple[list[int], int] | None:
    """The offset in ``view.text`` of the line where each eqn starts, and that of the closing
    ``  in (...)`` line; None when they cannot be found in order. In the top-level body each
    eqn starts a line at indent 4 (its wrapped params are deeper, its closing ``] a b`` opens
    with a bracket, inner jaxprs deeper still); printed alone an eqn has more room, so its
    first line may be longer than the whole text's: the text's line must be a start of it."""
    text = view.text
    pos = body_start(text)
    footer = text.rfind("\n  in ")
    if pos < 0 or footer < pos:
        return None
    pos = text.find("\n", pos) + 1
    starts: list[int] = []
    eqns = iter(view.eqns)
    while pos <= footer:
        end = text.find("\n", pos)
        line = text[pos:end]
        if line.startswith("    ") and line[4:5] not in (" ", "]", ")", "}", ""):
            eqn = next(eqns, None)
            if eqn is None or not eqn.text.split("\n", 1)[0].strip().startswith(line.strip()):
                return None
            starts.append(pos)
        pos = end + 1
    if len(starts) != len(view.eqns):
        return None
    return starts, footer + 1


def splice_range(text: str, sent: str, more: str) -> str:
    """``text`` (a view split into ranges) with its ranges line replaced by ``sent`` and then
    ``more`` (a line, or "" after the last range): what the page does with a
    ``jaxpr_eqns_sent`` (``frontend/src/store/eqn-ranges.ts``, the same steps)."""
    footer = text.rfind("\n  in ")
    line = text.rfind("\n", 0, footer) + 1
    return text[:line] + sent + (more + "\n" if more else "") + text[footer + 1 :]


def split_view(
    view: JaxprView, new_id: Callable[[], str], sizes: list[int] | None = None
) -> tuple[JaxprView, list[tuple[str, int, list[EqnView], str, str]]] | None:
    """``view`` split for an ``on_demand`` stream: its first eqns (as many as fit in
    :data:`HEAD_BYTES`, at least one), their text, :func:`ranges_line` and the closing line,
    ``total_eqns`` set and ``eqn_ranges`` naming the rest in ranges of at most
    :data:`RANGE_BYTES` (``new_id`` names each); and each range as ``(detail_id, start, eqns,
    text, more)`` (the fields of its ``jaxpr_eqns_sent``). None when the view is not worth
    splitting (all its eqns fit in the head), when most of its bytes are in eqns over
    :data:`RANGE_VIEW_BYTES`, or when its eqns cannot be found in its text. ``sizes``: each
    eqn's JSON length when the caller measured them (:func:`eqn_sizes`)."""
    located = eqn_starts(view)
    if located is None:
        return None
    starts, footer = located
    if sizes is None:
        sizes = eqn_sizes(view)
    if 2 * sum(z for z in sizes if z > RANGE_VIEW_BYTES) > sum(sizes):
        # Most of the view is in a few large eqns (a model under one ``jit`` call), each a range
        # over the bound by itself: the view is split inside its eqns instead (``split_lists``).
        return None
    cuts = _list_cuts(sizes, separator=0)
    if len(cuts) == 1:
        return None
    total = len(view.eqns)
    bounds = [*cuts, total]
    offsets = [*starts, footer]
    text = view.text
    ranges: list[tuple[str, int, list[EqnView], str, str]] = []
    meta: list[EqnRange] = []
    for a, b in itertools.pairwise(bounds[1:]):
        detail_id = new_id()
        more = ranges_line(b, total) if b < total else ""
        ranges.append((detail_id, a, view.eqns[a:b], text[offsets[a] : offsets[b]], more))
        meta.append(EqnRange(start=a, stop=b, detail_id=detail_id))
    head = bounds[1]
    summary = text[: offsets[head]] + ranges_line(head, total) + "\n" + text[footer:]
    # The page's splicing gives JAX's text back, range by range (checked here, once per view).
    whole = summary
    for _, _, _, sent, more in ranges:
        whole = splice_range(whole, sent, more)
    if whole != text:
        return None
    return (
        view.model_copy(
            update={
                "eqns": view.eqns[:head],
                "text": summary,
                "total_eqns": total,
                "eqn_ranges": meta,
            }
        ),
        ranges,
    )


def eqn_sizes(view: JaxprView) -> list[int]:
    """The JSON length of each eqn of ``view`` (what it takes of the view's line)."""
    return [len(e.model_dump_json()) for e in view.eqns]


def view_bytes(view: JaxprView, sizes: list[int]) -> int:
    """``len(view.model_dump_json())`` from its eqns' lengths ``sizes`` (:func:`eqn_sizes`):
    the view without its eqns (``"eqns":[]``) plus each eqn and the commas between them, so
    the eqns, most of a view, are serialised once (they were twice: the view whole, then each
    eqn for its ranges; ~18 ms of partial_eval's three views on bench/ad_overhead.py, design
    0082). ``test_eqn_ranges`` holds it equal to the view's own length."""
    rest = len(view.model_copy(update={"eqns": []}).model_dump_json())
    return rest + sum(sizes) + max(len(sizes) - 1, 0)


@functools.cache
def _emptiest_bytes() -> tuple[int, int]:
    """The JSON length of the shortest eqn view and var view there can be: every string and
    list empty, no source, each bool ``true`` (``false`` is longer)."""
    aval = AvalView.model_construct(shape=[], dtype="", weak_type=True, short="")
    var = VarView.model_construct(name="", aval=aval, literal=True)
    eqn = EqnView.model_construct(
        index=0,
        primitive="",
        params={},
        invars=[],
        outvars=[],
        effects=[],
        source=None,
        text="",
        inner_jaxprs=[],
        name_stack="",
    )
    return len(eqn.model_dump_json()), len(var.model_dump_json())


def least_view_bytes(view: JaxprView) -> int:
    """A lower bound of ``len(view.model_dump_json())`` read without serialising it: its text,
    and per eqn the shortest eqn view, its text and the shortest var view per var it reads or
    writes (JSON only grows with content: a longer string, a longer list, a source for none).
    The runner skips serialising an event whose views are surely over
    :data:`RANGES_FROM_BYTES` before cutting them in ranges (~20 ms for partial_eval's split of
    bench/ad_overhead.py, design 0082); ``test_eqn_ranges`` holds it under the real length."""
    eqn_bytes, var_bytes = _emptiest_bytes()
    least = len(view.text)
    for eqn in view.eqns:
        least += eqn_bytes + len(eqn.text) + var_bytes * (len(eqn.invars) + len(eqn.outvars))
    return least


def split_event(event: EventModel, new_id: Callable[[], str]) -> list[JaxprEqnsSent | ItemsSent]:
    """Split, in place, the jaxpr views of ``event`` (its fields that are a :class:`JaxprView`)
    over :data:`RANGE_VIEW_BYTES` (the runner calls it for an event over
    :data:`RANGES_FROM_BYTES`), then, while the event is still over :data:`RANGES_FROM_BYTES`,
    its long lists (:func:`split_lists`); returns the ranges' answers (``detail_of`` set), for
    the run's capture."""
    views = []
    for name, value in vars(event).items():
        if isinstance(value, JaxprView) and len(value.eqns) > 1 and not value.eqn_ranges:
            sizes = eqn_sizes(value)
            views.append((name, value, view_bytes(value, sizes), sizes))
    out: list[JaxprEqnsSent | ItemsSent] = []
    for name, view, size, sizes in sorted(views, key=lambda view: -view[2]):
        if size <= RANGE_VIEW_BYTES:
            break
        split = split_view(view, new_id, sizes)
        if split is None:
            continue
        summary, ranges = split
        setattr(event, name, summary)
        out.extend(
            JaxprEqnsSent(field=name, start=start, eqns=eqns, text=text, more=more, detail_of=did)
            for did, start, eqns, text, more in ranges
        )
    out.extend(split_lists(event, new_id))
    return out


# Inside a jaxpr view (``_split_nested``), a text or list longer than this may be split, keeping
# half of it: an event made of a few large eqns (a model under one ``jit`` call) has its bytes in
# many medium ones.
NESTED_BYTES = 32 * 2**10

# The lists a jaxpr view may have split (its variables; ``eqns`` go in eqn ranges).
VIEW_LISTS = ("constvars", "invars", "outvars")


def _item_bytes(item: object) -> int:
    return len(item.model_dump_json()) if isinstance(item, BaseModel) else len(repr(item))


def _list_cuts(sizes: list[int], head: int | None = None, separator: int = 1) -> list[int]:
    """Where a list of items of ``sizes`` (bytes) is cut: its head within ``head`` bytes
    (:data:`HEAD_BYTES` by default), then ranges within :data:`RANGE_BYTES` (at least one item
    each), counting ``separator`` bytes per item (a JSON list's commas; eqn ranges count none);
    the cuts' start indices. Eqn ranges (:func:`split_view`) and list ranges share it."""
    cuts = [0]
    budget, used = HEAD_BYTES if head is None else head, 0
    for i, size in enumerate(sizes):
        if i > cuts[-1] and used + size > budget:
            cuts.append(i)
            budget, used = RANGE_BYTES, 0
        used += size + separator
    return cuts


def split_lists(event: EventModel, new_id: Callable[[], str]) -> list[ItemsSent]:
    """Split, in place, the long lists and texts of ``event`` while its line is over
    :data:`RANGES_FROM_BYTES`, largest first, each over :data:`RANGE_VIEW_BYTES`: first the
    variable lists of its jaxpr views (:data:`VIEW_LISTS`: the range is kept in the view's
    ``list_ranges``) and the event's own lists its class names in ``ranged_lists`` (in the
    event's; an entry ``name.*`` names each list inside the list ``name``, e.g. one argument's
    leaves in a list per argument: its range's ``field`` is its path, ``name.3``; a ``str`` field
    it names is a text, cut as :func:`_split_nested` cuts one: :func:`_ranged_texts`), then anything
    inside its jaxpr views (:func:`_split_nested`: a model under one ``jit`` call is one eqn
    whose inner jaxpr is most of the event). A split list keeps its first items (within
    :data:`HEAD_BYTES`), a split text its first lines, and the rest goes in ranges of at most
    :data:`RANGE_BYTES`; returns each range's ``items_sent`` answer (``detail_of`` set; ``seq``
    is set by the supervisor's registration, as for eqn ranges). Nothing shared with another
    event is changed: the models and lists on the way are copied."""
    size = len(event.model_dump_json())
    if size <= RANGES_FROM_BYTES:
        return []
    for name, value in list(vars(event).items()):
        if isinstance(value, JaxprView):
            setattr(event, name, value.model_copy())  # its lists are replaced, never changed
    lists: list[_Ranged | str] = [
        entry
        for entry in _ranged_candidates(event)
        if len(entry.items) >= 2
        and not any(r.field == entry.field for r in getattr(entry.holder, "list_ranges", []))
    ]
    lists += _ranged_texts(event)
    out: list[ItemsSent] = []
    for entry in sorted(lists, key=lambda e: -_whole_bytes(event, e)):
        whole = _whole_bytes(event, entry)
        if size <= RANGES_FROM_BYTES or whole <= RANGE_VIEW_BYTES:
            break
        if isinstance(entry, str):
            text: str = getattr(event, entry)
            kept = _split_text(event, entry, entry, text, HEAD_BYTES, new_id, out)
            setattr(event, entry, kept)
            size -= len(text[len(kept) :].encode()) - sum(
                len(r.model_dump_json()) + 1 for r in event.list_ranges if r.field == entry
            )
            continue
        sizes = entry.sizes
        cuts = _list_cuts(sizes)
        if len(cuts) == 1:
            continue
        ranges = _list_ranges(entry.field, entry.path, entry.items, cuts, new_id, out)
        head = cuts[1]
        entry.put(entry.items[:head])
        entry.holder.list_ranges = [*entry.holder.list_ranges, *ranges]  # type: ignore[attr-defined]
        size -= sum(sizes[head:]) + len(sizes) - head
        size += sum(len(r.model_dump_json()) + 1 for r in ranges)
    if size > RANGES_FROM_BYTES:
        _split_nested(event, new_id, size, out)
    return out


def _ranged_texts(event: EventModel) -> list[str]:
    """The top-level texts of ``event`` its class names in ``ranged_lists`` (the stations'
    StableHLO, HLO and optimized HLO), not split yet: :func:`split_lists` cuts them as
    :func:`_split_nested` cuts a text inside a jaxpr view (after a newline, one item an answer)."""
    return [
        field
        for field in type(event).ranged_lists
        if isinstance(getattr(event, field, None), str)
        and not any(r.field == field for r in event.list_ranges)
    ]


def _whole_bytes(event: EventModel, entry: _Ranged | str) -> int:
    """About what ``entry`` (a list of :func:`_ranged_candidates`, or a text's field) takes of
    the event's line."""
    if isinstance(entry, str):
        return len(getattr(event, entry).encode())
    return sum(entry.sizes) + len(entry.sizes)


def _split_text(
    event: EventModel,
    field: str,
    path: str,
    value: str,
    head: int,
    new_id: Callable[[], str],
    out: list[ItemsSent],
) -> str:
    """Cut ``value`` (the text at ``path`` of ``event``) after its first lines within ``head``
    characters and then in ranges of at most :data:`RANGE_BYTES` (:func:`_text_cuts`): the
    ranges go in the event's ``list_ranges`` under ``field``, their answers (one item each, the
    next characters) in ``out``; returns the head (``value`` itself when it is not cut)."""
    cuts = _text_cuts(value, head)
    bounds = [*cuts, len(value)]
    for a, b in itertools.pairwise(bounds[1:]):
        detail_id = new_id()
        event.list_ranges.append(ListRange(field=field, start=a, stop=b, detail_id=detail_id))
        out.append(ItemsSent(path=path, start=a, items=[value[a:b]], detail_of=detail_id))
    return value[: cuts[1]] if len(cuts) > 1 else value


@dataclass
class _Ranged:
    """A list :func:`split_lists` may split: ``path`` from the event (the answers'), ``holder``
    the model whose ``list_ranges`` name its ranges under ``field``, ``put`` replaces it."""

    path: str
    holder: BaseModel
    field: str
    items: list[Any]
    put: Callable[[list[Any]], None]
    sizes: list[int] = dataclass_field(default_factory=list)

    def __post_init__(self) -> None:
        self.sizes = [_item_bytes(item) for item in self.items]


def _ranged_candidates(event: EventModel) -> list[_Ranged]:
    """The lists of ``event`` that may go in list ranges (:func:`split_lists`)."""
    out: list[_Ranged] = []

    def setter(holder: BaseModel, field: str) -> Callable[[list[Any]], None]:
        return lambda items: setattr(holder, field, items)

    def inner_setter(name: str, index: int) -> Callable[[list[Any]], None]:
        def put(items: list[Any]) -> None:
            copied = list(getattr(event, name))  # the outer list may be shared: copied
            copied[index] = items
            setattr(event, name, copied)

        return put

    for name, value in vars(event).items():
        if isinstance(value, JaxprView):
            for field in VIEW_LISTS:
                items = getattr(value, field)
                if isinstance(items, list):
                    out.append(
                        _Ranged(f"{name}.{field}", value, field, items, setter(value, field))
                    )
    for field in type(event).ranged_lists:
        if field.endswith(".*"):
            name = field[:-2]
            outer = getattr(event, name)
            for i, items in enumerate(outer if isinstance(outer, list) else []):
                if isinstance(items, list):
                    path = f"{name}.{i}"
                    out.append(_Ranged(path, event, path, items, inner_setter(name, i)))
            continue
        items = getattr(event, field)
        if isinstance(items, list):
            out.append(_Ranged(field, event, field, items, setter(event, field)))
    return out


def _list_ranges(
    field: str,
    path: str,
    items: list[object],
    cuts: list[int],
    new_id: Callable[[], str],
    out: list[ItemsSent],
) -> list[ListRange]:
    """The ranges of ``items`` past its head (``cuts`` from :func:`_list_cuts`), their answers
    appended to ``out``."""
    bounds = [*cuts, len(items)]
    ranges: list[ListRange] = []
    for a, b in itertools.pairwise(bounds[1:]):
        detail_id = new_id()
        ranges.append(ListRange(field=field, start=a, stop=b, detail_id=detail_id))
        out.append(ItemsSent(path=path, start=a, items=items[a:b], detail_of=detail_id))
    return ranges


def _text_cuts(text: str, head: int) -> list[int]:
    """Where a long text is cut: after its first lines within ``head`` characters, then every
    :data:`RANGE_BYTES`, each cut after a newline when there is one in reach."""
    cuts = [0]
    budget = head
    while len(text) - cuts[-1] > budget:
        at = cuts[-1] + budget
        line = text.rfind("\n", cuts[-1], at)
        cuts.append(line + 1 if line >= cuts[-1] else at)
        budget = RANGE_BYTES
    return cuts


def _nested_candidates(
    node: BaseModel, parts: tuple[str, ...], view: JaxprView, out: list[tuple[tuple[str, ...], int]]
) -> None:
    """The texts and lists over :data:`NESTED_BYTES` inside the jaxpr view ``node`` (at
    ``parts`` of the event), with their sizes; not the view's own eqn list and variable lists
    (eqn ranges and :func:`split_lists` own those), nor its text when it has eqn ranges (their
    splicing needs it whole)."""
    for name in type(node).model_fields:
        if name in ("eqn_ranges", "list_ranges"):
            continue
        value = getattr(node, name)
        at = (*parts, name)
        top = node is view
        if top and (name in VIEW_LISTS or (name == "text" and view.eqn_ranges)):
            continue
        if isinstance(value, str):
            if len(value) > NESTED_BYTES:
                out.append((at, len(value)))
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            sizes = [_item_bytes(item) for item in value]
            if not (top and name == "eqns") and len(value) > 1 and sum(sizes) > NESTED_BYTES:
                out.append((at, sum(sizes) + len(sizes)))
            for i, (item, item_size) in enumerate(zip(value, sizes, strict=True)):
                if item_size > NESTED_BYTES:
                    _nested_candidates(item, (*at, str(i)), view, out)
        elif isinstance(value, BaseModel) and _item_bytes(value) > NESTED_BYTES:
            _nested_candidates(value, at, view, out)


def _owned(node: BaseModel, parts: tuple[str, ...]) -> BaseModel:
    """The model at ``parts`` below ``node`` (field names, list indices), after replacing every
    model and list on the way with a shallow copy: models are shared between events (an eqn
    view in a jaxpr and in a step), and only this event's copy may lose its tail."""
    if not parts:
        return node
    value = getattr(node, parts[0])
    if isinstance(value, list):
        copied_list = list(value)
        setattr(node, parts[0], copied_list)
        index = int(parts[1])
        item = copied_list[index].model_copy()
        copied_list[index] = item
        return _owned(item, parts[2:])
    copied = value.model_copy()
    setattr(node, parts[0], copied)
    return _owned(copied, parts[1:])


def _split_nested(
    event: EventModel, new_id: Callable[[], str], size: int, out: list[ItemsSent]
) -> None:
    """Split the texts and lists inside the event's jaxpr views, largest first, while the
    event is over :data:`RANGES_FROM_BYTES` (``size``, its line's length now). Their ranges
    are the event's (``list_ranges``, ``field`` the dotted path from the event:
    ``jaxpr.eqns.0.inner_jaxprs.0.eqns``); a text's answer has one item, the next characters."""
    found: list[tuple[tuple[str, ...], int]] = []
    for name, value in vars(event).items():
        if isinstance(value, JaxprView):
            _nested_candidates(value, (name,), value, found)
    done: list[tuple[tuple[str, ...], int]] = []  # the lists split: their path and head
    for parts, whole in sorted(found, key=lambda pw: -pw[1]):
        if size <= RANGES_FROM_BYTES or whole <= NESTED_BYTES:
            break
        if any(
            parts[: len(p)] == p and len(parts) > len(p) and int(parts[len(p)]) >= head
            for p, head in done
        ) or any(p[: len(parts)] == parts for p, _ in done):
            continue  # in a tail already sent in ranges, or holding a list already split
        holder = _owned(event, parts[:-1])
        field, path = parts[-1], ".".join(parts)
        value = getattr(holder, field)
        if isinstance(value, str):
            head = _split_text(event, path, path, value, NESTED_BYTES // 2, new_id, out)
            setattr(holder, field, head)
            size -= len(value) - len(head)
            done.append((parts, 0))
            continue
        sizes = [_item_bytes(item) for item in value]
        cuts = _list_cuts(sizes, NESTED_BYTES // 2)
        if len(cuts) == 1:
            continue
        event.list_ranges.extend(_list_ranges(path, path, value, cuts, new_id, out))
        setattr(holder, field, value[: cuts[1]])
        size -= sum(sizes[cuts[1] :]) + len(sizes) - cuts[1]
        done.append((parts, cuts[1]))


def range_ids(event: EventModel) -> list[tuple[str, str]]:
    """The ``detail_id`` of every range in ``event`` with the type of its answer: the eqn
    ranges of its jaxpr views (``jaxpr_eqns_sent``) and the list ranges of the event and of
    its views (``items_sent``); the supervisor answers DetailRequests for them."""
    out: list[tuple[str, str]] = [(r.detail_id, "items_sent") for r in event.list_ranges]
    for value in vars(event).values():
        if isinstance(value, JaxprView):
            out.extend((r.detail_id, "jaxpr_eqns_sent") for r in value.eqn_ranges)
            out.extend((r.detail_id, "items_sent") for r in value.list_ranges)
    return out
