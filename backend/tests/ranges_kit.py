"""What the tests of events sent in list ranges share (design 0045): one snippet run twice in
one sandboxed session, eager (the CLI's stream) and ``on_demand`` (the page's), every range of
the page's events asked for; and the page's way of putting a range's answer back."""

from __future__ import annotations

import json
from typing import Any

from jaxscope.protocol import DetailRequest, EventModel, ItemsSent, RunRequest

from tests.harness import SandboxHarness


def run_eager_and_on_demand(
    harness: SandboxHarness,
    code: str,
    exhibit: str,
    *,
    summaries_too: bool = False,
    timeout: float = 600,
) -> tuple[list[EventModel], list[EventModel], list[EventModel]]:
    """The eager stream, the ``on_demand`` stream, and the answers to every list range the
    ``on_demand`` stream's events hold (``event.list_ranges``), and with ``summaries_too`` to
    every summary's detail id as well (what a Download asks for)."""
    session = harness.session()
    out: dict[str, list[EventModel]] = {"eager": [], "page": [], "answers": []}

    async def go() -> None:
        for details in ("eager", "on_demand"):
            got = out["eager" if details == "eager" else "page"]

            async def emit(event: EventModel, got: list[EventModel] = got) -> None:
                got.append(event)

            request = RunRequest(run_id=f"r-{details}", exhibit=exhibit, code=code, details=details)
            await session.run(request, emit)

        async def answer(event: EventModel) -> None:
            out["answers"].append(event)

        for event in out["page"]:
            ids = [r.detail_id for r in event.list_ranges]
            if summaries_too and event.detail_id is not None:
                ids.append(event.detail_id)
            for detail_id in ids:
                await session.detail(
                    DetailRequest(run_id="r-on_demand", detail_id=detail_id), answer
                )

    try:
        harness.call(go(), timeout=timeout)
    finally:
        harness.call(session.close())
    return out["eager"], out["page"], out["answers"]


def put_back(event: EventModel, answers: list[ItemsSent]) -> dict[str, Any]:
    """``event`` (JSON, without ``run_id`` and ``seq``: each run's own) with its list ranges'
    answers put back in order, as the page's store does (``frontend/src/store/list-ranges.ts``
    ``applyItemsSent``: a range held by the event, ``field`` its dotted path; a list extended by
    the answer's items, a text by its one item, the next characters). Asserts each answer is its
    field's next range and that none is left."""
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
        value = holder[key]
        assert len(value) == sent.start
        items = json.loads(sent.model_dump_json())["items"]
        if isinstance(value, str):
            [chunk] = items
            assert len(chunk) == first["stop"] - first["start"]
            holder[key] = value + chunk
        else:
            holder[key] = [*value, *items]
    assert not ranges, ranges
    out.pop("run_id"), out.pop("seq")
    return out


def eager_json(event: EventModel) -> dict[str, Any]:
    """``event`` as JSON without ``run_id`` and ``seq`` (to compare with :func:`put_back`)."""
    out: dict[str, Any] = json.loads(event.model_dump_json())
    out.pop("run_id"), out.pop("seq")
    return out
