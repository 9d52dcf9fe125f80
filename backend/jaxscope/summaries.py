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

from jaxscope.protocol import EventModel, JaxprView

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


def _eqn_start(text: str, view: JaxprView, index: int) -> int | None:
    """The offset in ``text`` of the line where eqn ``index`` starts (eqns are printed in order,
    each from its own line; found by their first lines in order), or None when not found."""
    pos = text.find(" let\n")
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


def summarise_event(event: EventModel) -> bool:
    """Summarise, in place, the jaxpr views of ``event`` (its fields that are a
    :class:`JaxprView`) that take more than :data:`SUMMARY_BYTES` of its JSON line, each to
    about that size. Returns whether anything was summarised."""
    views = [
        (name, value)
        for name, value in vars(event).items()
        if isinstance(value, JaxprView) and len(value.eqns) > 1
    ]
    changed = False
    for name, view in sorted(views, key=lambda nv: -len(nv[1].eqns)):
        size = len(view.model_dump_json())
        if size <= SUMMARY_BYTES:
            continue
        keep = max(1, int(len(view.eqns) * SUMMARY_BYTES / size))
        setattr(event, name, summarise_view(view, keep))
        changed = True
    return changed
