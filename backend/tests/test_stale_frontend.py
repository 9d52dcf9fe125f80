"""``jaxscope serve`` warns when the checkout's built frontend is older than its sources."""

from __future__ import annotations

import os
from pathlib import Path

from jaxscope.server.stale_frontend import newer_sources, stale_warning


def _checkout(tmp: Path) -> Path:
    (tmp / "frontend" / "src").mkdir(parents=True)
    (tmp / "frontend" / "dist").mkdir()
    (tmp / "exhibits" / "seam").mkdir(parents=True)
    (tmp / "frontend" / "dist" / "index.html").write_text("<html></html>")
    for path in ("frontend/src/App.svelte", "exhibits/seam/View.svelte", "exhibits/seam/probe.py"):
        (tmp / path).write_text("x")
    return tmp


def _age(path: Path, seconds: float) -> None:
    now = path.stat().st_mtime
    os.utime(path, (now - seconds, now - seconds))


def test_sources_newer_than_the_build_are_named_newest_first(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    dist = root / "frontend" / "dist"
    _age(dist / "index.html", 100)
    _age(root / "frontend/src/App.svelte", 50)
    newer = newer_sources(dist, root)
    # probe.py is not a frontend source; App.svelte (older) after View.svelte (newer).
    assert newer == [root / "exhibits/seam/View.svelte", root / "frontend/src/App.svelte"]
    warning = stale_warning(dist, root)
    assert warning is not None and "older than 2 of its sources" in warning
    assert "exhibits/seam/View.svelte" in warning and "make frontend" in warning


def test_an_up_to_date_other_or_missing_build_gives_no_warning(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    dist = root / "frontend" / "dist"
    for path in ("frontend/src/App.svelte", "exhibits/seam/View.svelte"):
        _age(root / path, 100)
    assert stale_warning(dist, root) is None
    _age(dist / "index.html", 200)
    assert stale_warning(dist, root) is not None
    assert stale_warning(tmp_path / "elsewhere", root) is None  # JAXSCOPE_FRONTEND_DIST
    (dist / "index.html").unlink()
    assert stale_warning(dist, root) is None
