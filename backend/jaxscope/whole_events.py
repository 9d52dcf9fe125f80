"""An eager run's events made whole again, for the CLI (design 0051).

A run for the CLI (``details = "eager"``) streams every event whole, except one whose line would
be over ``summaries.STREAM_LIMIT_BYTES`` (a 20,000-eqn program's ``jaxpr_split``: three views
of 20,000 eqns): the runner splits it as it splits a page's (``summaries.split_event``: its
large jaxpr views in eqn ranges, its long lists and texts in list ranges) and sends every
range's answer (``jaxpr_eqns_sent``, ``items_sent``, ``detail_of`` the range's id, ``seq`` the
event's) right after it. :class:`WholeEvents` puts each answer back where the page's store puts
it (``frontend/src/store/eqn-ranges.ts``, ``store/list-ranges.ts``: the same steps, on the
event's JSON) and hands on the whole event once its last range is in, so that ``--print`` and
``--json`` show the whole program: JAX's whole text, every eqn, every residual.

An answer that does not fit (not the next range of its list, a path that names nothing) is
dropped and its event handed on with the ranges it still lacks; a run that ends first hands its
events on as they are. Nothing here raises on a worker's answers.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from jaxscope.protocol import EVENT_ADAPTER, EventModel, ItemsSent, JaxprEqnsSent
from jaxscope.summaries import splice_range

Json = dict[str, Any]


def _step(node: Any, part: str) -> Any:
    """Item ``part`` (digits) of a list, or key ``part`` of an object; None otherwise."""
    if isinstance(node, list):
        index = int(part) if part.isascii() and part.isdecimal() else len(node)
        return node[index] if index < len(node) else None
    return node.get(part) if isinstance(node, dict) else None


def _views(event: Json) -> list[Json]:
    """The event's jaxpr views (its fields that are one)."""
    return [
        v
        for v in event.values()
        if isinstance(v, dict)
        and isinstance(v.get("text"), str)
        and isinstance(v.get("eqns"), list)
    ]


def ranges_left(event: Json) -> int:
    """How many eqn and list ranges of ``event`` (JSON) are still to come."""
    count = len(event.get("list_ranges") or [])
    for view in _views(event):
        count += len(view.get("eqn_ranges") or []) + len(view.get("list_ranges") or [])
    return count


def apply_eqns_sent(event: Json, sent: JaxprEqnsSent) -> bool:
    """Extend the view ``sent.field`` of ``event`` (JSON, changed in place) by its next eqn
    range; False (nothing changed) when ``sent`` is not that range."""
    view = event.get(sent.field)
    if not isinstance(view, dict):
        return False
    ranges = view.get("eqn_ranges") or []
    eqns = view.get("eqns")
    if not ranges or not isinstance(eqns, list) or not isinstance(view.get("text"), str):
        return False
    first = ranges[0]
    if first.get("detail_id") != sent.detail_of or sent.start != len(eqns):
        return False
    if len(sent.eqns) != int(first.get("stop", -1)) - sent.start:
        return False
    eqns.extend(e.model_dump(mode="json") for e in sent.eqns)
    view["text"] = splice_range(view["text"], sent.text, sent.more)
    del ranges[0]
    if not ranges:
        view.pop("eqn_ranges", None)
        view["total_eqns"] = None
    return True


def apply_items_sent(event: Json, sent: ItemsSent) -> bool:
    """Append ``sent.items`` to the list (or text) at ``sent.path`` of ``event`` (JSON, changed
    in place) when it is that list's next range; False (nothing changed) otherwise. The range is
    held by the object at the path less its last part, under that part, or (a list or text
    nested deeper in a jaxpr view) by the event, under the whole path."""
    parts = sent.path.split(".")
    if any(p == "" for p in parts):
        return False
    own = event.get("list_ranges") or []
    by_event = len(parts) > 1 and any(r.get("field") == sent.path for r in own)
    depth = 0 if by_event else len(parts) - 1
    key = sent.path if by_event else parts[depth]
    holder: Any = event
    for part in parts[:depth]:
        holder = _step(holder, part)
    if not isinstance(holder, dict):
        return False
    ranges = holder.get("list_ranges") or []
    at = next((i for i, r in enumerate(ranges) if r.get("field") == key), None)
    if at is None:
        return False
    rng = ranges[at]
    if rng.get("detail_id") != sent.detail_of or rng.get("start") != sent.start:
        return False
    count = int(rng["stop"]) - int(rng["start"])
    parent: Any = event
    for part in parts[:-1]:
        parent = _step(parent, part)
    last = parts[-1]
    value = _step(parent, last)
    if isinstance(value, list):
        if len(value) != sent.start or len(sent.items) != count:
            return False
        value.extend(sent.items)
    elif isinstance(value, str):
        # A text's answer is one item, its next characters (counted as Python counts them).
        if len(sent.items) != 1 or not isinstance(sent.items[0], str):
            return False
        if len(value) != sent.start or len(sent.items[0]) != count:
            return False
        if isinstance(parent, list):
            parent[int(last)] = value + sent.items[0]
        else:
            parent[last] = value + sent.items[0]
    else:
        return False
    del ranges[at]
    if not ranges:
        holder.pop("list_ranges", None)
    return True


class WholeEvents:
    """Events in, whole events out, in order: an event with ranges to come is held (and the
    events after it) until its answers are in; :meth:`finish` hands on what is still held."""

    def __init__(self) -> None:
        self._held: list[tuple[EventModel, Json | None]] = []

    def feed(self, event: EventModel) -> list[EventModel]:
        """Take one event of the run; returns the events now whole, in order."""
        if isinstance(event, (JaxprEqnsSent, ItemsSent)) and event.detail_of is not None:
            for model, json in self._held:
                if json is not None and model.seq == event.seq:
                    if isinstance(event, JaxprEqnsSent):
                        apply_eqns_sent(json, event)
                    else:
                        apply_items_sent(json, event)
                    break
            return self._ready()
        json = event.model_dump(mode="json")
        self._held.append((event, json if ranges_left(json) else None))
        return self._ready()

    def finish(self) -> list[EventModel]:
        """Everything still held, as it is (a run that ended before its answers came)."""
        out = [self._whole(model, json) for model, json in self._held]
        self._held = []
        return out

    def _ready(self) -> list[EventModel]:
        out: list[EventModel] = []
        while self._held:
            model, json = self._held[0]
            if json is not None and ranges_left(json):
                break
            out.append(self._whole(model, json))
            self._held.pop(0)
        return out

    @staticmethod
    def _whole(model: EventModel, json: Json | None) -> EventModel:
        if json is None:
            return model
        try:
            return EVENT_ADAPTER.validate_python(json)
        except ValidationError:
            # Answers of the right count but not of the list's kind (a forged line): the event
            # as it was streamed.
            return model
