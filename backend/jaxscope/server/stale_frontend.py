"""Whether the built frontend a server is about to serve is older than the checkout's sources.

``jaxscope serve`` serves whatever ``frontend/dist`` holds; after a ``git pull`` without a
rebuild, the page silently lacks new exhibits (a new-user review saw three torch exhibits
missing from the nav while ``/api/exhibits`` listed them). ``make serve`` rebuilds; a bare
``jaxscope serve`` warns instead. Only a checkout is checked (an installed wheel carries the
frontend it was built with).
"""

from __future__ import annotations

from pathlib import Path

from exhibits.registry import EXHIBITS_DIR

# What the frontend build reads (the Makefile's prerequisites of frontend/dist/index.html).
_SOURCE_SUFFIXES = (".svelte", ".ts", ".css", ".html", ".md")


def newer_sources(dist: Path, root: Path | None = None) -> list[Path]:
    """The frontend sources of the checkout at ``root`` (default: the one beside the exhibits)
    modified after ``dist/index.html`` was built, newest first; [] when ``dist`` is not that
    checkout's ``frontend/dist``, is not built, or is up to date."""
    root = EXHIBITS_DIR.parent if root is None else root
    index = dist / "index.html"
    src = root / "frontend" / "src"
    if (
        not index.is_file()
        or not src.is_dir()
        or dist.resolve() != (root / "frontend" / "dist").resolve()
    ):
        return []
    built = index.stat().st_mtime
    newer = [
        p
        for folder in (src, root / "exhibits")
        for p in folder.rglob("*")
        if p.suffix in _SOURCE_SUFFIXES and p.is_file() and p.stat().st_mtime > built
    ]
    return sorted(newer, key=lambda p: -p.stat().st_mtime)


def stale_warning(dist: Path, root: Path | None = None) -> str | None:
    """The line ``jaxscope serve`` prints when :func:`newer_sources` finds any, else None."""
    newer = newer_sources(dist, root)
    if not newer:
        return None
    base = EXHIBITS_DIR.parent if root is None else root
    first = newer[0].relative_to(base)
    return (
        f"jaxscope: warning: the built frontend ({dist}) is older than {len(newer)} of its "
        f"sources (newest: {first}); the page may lack recent changes. "
        "Rebuild with `make frontend` (`make serve` does it)"
    )
