"""Standalone HTML: one recorded run in one self-contained file that opens from disk with no
server (design 0034; issue 18 item 3).

The file is the single-file build of the frontend (``frontend/vite.standalone.config.ts``, at
``standalone/index.html`` in the built frontend that the server serves: a checkout's
``frontend/dist`` or a wheel's package copy, found as :mod:`jaxscope.settings` finds it) with one
``<script type="application/json" id="jaxscope-recording">`` added before its last ``</body>``:
the exhibit, the snippet, the run's options, when it was recorded and every event of the run,
whole. The page reads it and replays the run (``frontend/src/recording.ts`` is the other end,
and the page's Download button embeds it the same way). ``jaxscope run --html`` and
``jaxscope.show`` write it; their runs stream every event whole (``details`` ``eager``), so the
file holds every detail a view may show.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxscope.protocol import EventModel, RunOptions
from jaxscope.settings import settings_from_env

RECORDING_ID = "jaxscope-recording"
RECORDING_FORMAT = "jaxscope-recording/1"
# Where the single-file build sits inside the built frontend.
TEMPLATE = Path("standalone") / "index.html"


class TemplateMissing(FileNotFoundError):
    """The built frontend has no single-file template (``npm run build`` makes it)."""


def template_path(dist: Path | None = None) -> Path:
    """The single-file template inside ``dist`` (default: the frontend the server would serve,
    ``JAXSCOPE_FRONTEND_DIST`` or :func:`jaxscope.settings._default_dist`)."""
    root = settings_from_env(workers=0).frontend_dist if dist is None else dist
    return root / TEMPLATE


def read_template(dist: Path | None = None) -> str:
    """The template's text; raises :class:`TemplateMissing` naming the path and the fix."""
    path = template_path(dist)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateMissing(
            f"{path} is missing: build the frontend (`npm run build`, or `make frontend`)"
        ) from None


def recording(
    exhibit: str,
    code: str,
    options: RunOptions,
    events: Sequence[EventModel],
    recorded_at: datetime.datetime | None = None,
) -> dict[str, Any]:
    """The recording as the page reads it (``Recording`` in ``frontend/src/recording.ts``):
    events as the wire carries them (``model_dump(mode="json")``, unset optional fields left
    out as the server leaves them out)."""
    when = recorded_at or datetime.datetime.now(datetime.UTC)
    return {
        "format": RECORDING_FORMAT,
        "exhibit": exhibit,
        "code": code,
        "options": options.model_dump(mode="json"),
        "recorded_at": when.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z"),
        "events": [json.loads(event.model_dump_json()) for event in events],
    }


def script_text(payload: dict[str, Any]) -> str:
    """``payload`` as JSON for a script element: every ``<`` written ``\\u003c``, so that no
    ``</script>`` or ``<!--`` in the code or a jaxpr ends the element (``JSON.parse`` reads the
    same value back)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def embed(template: str, payload: dict[str, Any]) -> str:
    """The standalone file: ``template`` with the recording's script before its last
    ``</body>`` (the inlined bundle sits in ``<head>``)."""
    at = template.rfind("</body>")
    if at < 0:
        raise ValueError("the standalone template has no </body>")
    script = (
        f'<script type="application/json" id="{RECORDING_ID}">{script_text(payload)}</script>\n'
    )
    return template[:at] + script + template[at:]


def standalone_html(
    exhibit: str,
    code: str,
    options: RunOptions,
    events: Sequence[EventModel],
    *,
    dist: Path | None = None,
    recorded_at: datetime.datetime | None = None,
) -> str:
    """The whole standalone file of one run (:func:`embed` of :func:`recording` into the
    template found in ``dist``)."""
    return embed(read_template(dist), recording(exhibit, code, options, events, recorded_at))
