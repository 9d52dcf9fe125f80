"""Each exhibit has one title: the page header (``Exhibit.title``, served in the catalogue) and
its narrative's first heading (``narrative.md``, shown under "About this exhibit") say the same."""

from __future__ import annotations

import re

import pytest

from exhibits.registry import EXHIBITS


@pytest.mark.parametrize("exhibit_id", list(EXHIBITS))
def test_the_narrative_heading_is_the_page_title(exhibit_id: str) -> None:
    exhibit = EXHIBITS[exhibit_id]
    lines = (exhibit.folder / "narrative.md").read_text().splitlines()
    headings = [line for line in lines if line.startswith("# ")]
    assert headings, f"{exhibit_id}/narrative.md has no '# ' heading"
    # The first line is the heading; markdown code marks are the only difference allowed.
    assert lines[0] == headings[0]
    assert re.sub(r"`", "", headings[0][2:]).strip() == exhibit.title
