"""The shard_map narrative's count of checks is the number of checks the page shows: the check
results of a real run (the golden of the default example, recorded with ``jaxscope run``) and
the list the exhibit runs with JAX's helpers (``internals.shard_map_checks.CHECK_SOURCES``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jaxscope.internals.api import CHECK_TITLES

HERE = Path(__file__).resolve().parent
NUMBERS = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


def test_the_narrative_counts_the_checks_the_page_shows() -> None:
    narrative = (HERE / "narrative.md").read_text()
    said = re.findall(r"\*\*(\w+) checks\*\*", narrative)
    assert said, "the narrative names how many checks there are"
    shown: set[int] = set()
    for line in (HERE / "golden" / "psum_rows.events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if isinstance(event.get("checks"), list):
            shown.add(len(event["checks"]))
    assert shown == {len(CHECK_TITLES)}
    assert [NUMBERS[w.lower()] for w in said] == [len(CHECK_TITLES)] * len(said)
