"""Replaying a recorded event stream into the page, for view-only e2e tests (issue 36, part 4).

A test that checks what the page shows of a known run need not start a sandbox worker: the
run's events are already recorded, as the golden stream ``exhibits/<id>/golden/<example>.events
.jsonl`` that ``exhibits/test_goldens.py`` compares with a live run of the same example. The
page still talks to the real ``jaxscope serve`` (catalogue, examples, its websocket for
everything else); only its ``run`` request for the recorded example is answered here, through
Playwright's websocket route, with the recorded events under the page's own ``run_id``. The
page's store, views and stepper then work on a stream that a real run makes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, WebSocketRoute

ROOT = Path(__file__).resolve().parent.parent


def recorded_events(exhibit: str, example: str) -> list[dict[str, Any]]:
    """The golden event stream of ``exhibit``'s ``example`` (one JSON event per line)."""
    path = ROOT / "exhibits" / exhibit / "golden" / f"{example}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def replay_runs(
    page: Page, exhibit: str, example: str, *, events: list[dict[str, Any]] | None = None
) -> list[str]:
    """Answer the page's ``run`` requests for ``exhibit`` with ``example``'s recorded stream
    (or with ``events``, a stream recorded elsewhere: pallas's TPU lowering, which CI cannot
    re-run, is kept outside ``golden/``).

    Call before the page opens its websocket (before ``page.goto``). Every other message goes
    to the real server and back. Returns the list that collects the ``run_id`` of each run
    answered from the recording, so a test can assert its run was one of them."""
    if events is None:
        events = recorded_events(exhibit, example)
    answered: list[str] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def from_page(message: str | bytes) -> None:
            request = json.loads(message) if isinstance(message, str) else None
            if (
                isinstance(request, dict)
                and request.get("type") == "run"
                and request.get("exhibit") == exhibit
            ):
                run_id = str(request["run_id"])
                answered.append(run_id)
                ws.send(json.dumps([{**event, "run_id": run_id} for event in events]))
            else:
                server.send(message)

        ws.on_message(from_page)

    page.route_web_socket(re.compile(r".*/api/ws.*"), route)
    return answered
