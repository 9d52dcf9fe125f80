"""Each exhibit has one title: the page header (``Exhibit.title``, served in the catalogue) and
its narrative's first heading (``narrative.md``, shown under "About this exhibit") say the same.
And one place in the navigation: its registry entry's group and label, which ``npm run gen``
writes to ``frontend/src/gen/exhibits.ts`` (design 0059)."""

from __future__ import annotations

import re

import pytest

from exhibits.registry import EXHIBITS, GROUPS, Exhibit, frontend_table, table_problems


@pytest.mark.parametrize("exhibit_id", list(EXHIBITS))
def test_the_narrative_heading_is_the_page_title(exhibit_id: str) -> None:
    exhibit = EXHIBITS[exhibit_id]
    lines = (exhibit.folder / "narrative.md").read_text().splitlines()
    headings = [line for line in lines if line.startswith("# ")]
    assert headings, f"{exhibit_id}/narrative.md has no '# ' heading"
    # The first line is the heading; markdown code marks are the only difference allowed.
    assert lines[0] == headings[0]
    assert re.sub(r"`", "", headings[0][2:]).strip() == exhibit.title


def test_every_entry_has_a_group_and_a_label_of_its_own() -> None:
    assert table_problems() == []
    table = frontend_table()
    assert table["groups"] == list(GROUPS)
    assert table["exhibits"] == {
        e.id: {"group": e.group, "label": e.label, "worker": e.worker} for e in EXHIBITS.values()
    }
    assert table["exhibits"]["lazy_tensor"]["worker"] == "torch"
    assert table["exhibits"]["tf_bridge"]["worker"] == "tf"
    assert list(table["exhibits"]) == list(EXHIBITS)


def test_a_bad_navigation_entry_is_named() -> None:
    """An entry without a label, in a group not in ``GROUPS``, or with another's label, is
    reported by name (the server then refuses to start, and ``npm run gen`` fails)."""
    table = {
        "a": Exhibit(
            id="a", title="A", summary="", default_example="x", group=GROUPS[0], label="A"
        ),
        "b": Exhibit(id="b", title="B", summary="", default_example="x", group="Misc", label="A"),
        "c": Exhibit(id="c", title="C", summary="", default_example="x", group=GROUPS[1]),
    }
    assert table_problems(table) == [
        f"b: group 'Misc' is not one of exhibits.registry.GROUPS {GROUPS}",
        "c: no label (the tab's short name)",
        "a and b share the label 'A'",
    ]
    with pytest.raises(ValueError, match="share the label"):
        frontend_table(table)
