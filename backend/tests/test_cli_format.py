"""``jaxscope run ID FILE --print ARTEFACT --format json|text`` (``jaxscope.cli_format``, design
0035): every artefact of every exhibit in the registry, read from the exhibits' golden event
streams (real runs of their examples), in both forms; then one real run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jaxscope.cli_format import formatted, parsed_json, readable
from jaxscope.protocol import EVENT_ADAPTER

from exhibits.registry import EXHIBITS
from testkit import run_cli

ARTEFACTS = [
    (exhibit.id, golden, name)
    for exhibit in EXHIBITS.values()
    for golden in sorted((exhibit.folder / "golden").glob("*.events.jsonl"))
    for name in exhibit.artefacts
]


def leaves(value: Any) -> list[Any]:
    """Every scalar inside a JSON value."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    return [value]


def keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [str(k) for k in value] + [k for v in value.values() for k in keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in keys(v)]
    return []


def test_the_registry_has_artefacts_to_check() -> None:
    assert len(ARTEFACTS) > 50
    assert {"jaxpr", "cost"} <= {name for _, _, name in ARTEFACTS}


@pytest.mark.parametrize(
    ("exhibit", "golden", "artefact"),
    ARTEFACTS,
    ids=[f"{e}/{g.name.removesuffix('.events.jsonl')}/{a}" for e, g, a in ARTEFACTS],
)
def test_every_artefact_in_both_formats(exhibit: str, golden: Path, artefact: str) -> None:
    lines = golden.read_text("utf-8").splitlines()
    events = [EVENT_ADAPTER.validate_json(x) for x in lines]
    text = EXHIBITS[exhibit].artefacts[artefact](events)
    if text is None:
        pytest.skip(f"{golden.name} has no {artefact}")
    # No --format: the artefact as it is (what --print printed before the flag).
    assert formatted(exhibit, artefact, text, None) == text
    as_json = formatted(exhibit, artefact, text, "json")
    as_text = formatted(exhibit, artefact, text, "text")
    value = parsed_json(text)
    if value is None:  # a text artefact
        assert json.loads(as_json) == {"exhibit": exhibit, "artefact": artefact, "text": text}
        assert as_text == text
        return
    # A JSON artefact: json is the JSON itself; text is readable lines that hold every key and
    # every value of it, and is not JSON.
    assert json.loads(as_json) == json.loads(text)
    assert parsed_json(as_text) is None or value == []
    for key in keys(value):
        assert key in as_text
    for leaf in leaves(value):
        shown = leaf if isinstance(leaf, str) else json.dumps(leaf)
        assert shown in as_text, f"{leaf!r} missing from the text form"


def test_readable_forms() -> None:
    assert readable({"flops": 12.0, "bytes accessed": 40, "note": None}) == [
        "flops:          12.0",
        "bytes accessed: 40",
        "note:           null",
    ]
    assert readable([{"call": 1, "layer": "tracing"}, {"call": 2, "hit": True}]) == [
        "call  layer    hit",
        "1     tracing",
        "2              true",
    ]
    assert readable({"calls": [{"a": 1}], "names": ["x", "y"], "empty": {}}) == [
        "calls:",
        "  a",
        "  1",
        "names:",
        "  - x",
        "  - y",
        "empty: {}",
    ]


def test_a_json_string_or_number_is_a_text_artefact() -> None:
    # Only an object or an array makes a JSON artefact: "12" or "true" stay text.
    assert parsed_json("12") is None
    assert json.loads(formatted("x", "n", "12", "json")) == {
        "exhibit": "x",
        "artefact": "n",
        "text": "12",
    }


def test_the_cli_prints_both_formats(tmp_path: Path) -> None:
    example = EXHIBITS["tracing"].example_paths()["mlp_loss"]
    base = ["run", "tracing", str(example), "--print", "jaxpr"]
    plain = run_cli(*base)
    assert plain.returncode == 0, plain.stderr
    as_json = run_cli(*base, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {
        "exhibit": "tracing",
        "artefact": "jaxpr",
        "text": plain.stdout.removesuffix("\n"),
    }
    refused = run_cli("run", "tracing", str(example), "--format", "json")
    assert refused.returncode == 2
    assert "--format goes with --print" in refused.stderr
