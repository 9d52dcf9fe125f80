"""The prng exhibit's tests.

The key data the exhibit reports is checked against an independent numpy implementation of
Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011; 20
rounds), which first reproduces the Random123 known-answer vector, and against JAX's own
``jax.random.split``/``fold_in``. The reuse findings are checked against the lines of the
examples' text; the golden stream against the probe; the ``--print`` artefacts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished, StdoutPrinted

from exhibits.conftest import Runner
from exhibits.registry import EXHIBITS

from .events import EVENTS, KeyReuseChecked, RandomCallRecorded

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"

# --- an independent Threefry-2x32 -------------------------------------------------------------

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
SKEIN_PARITY = 0x1BD11BDA
MASK = 0xFFFFFFFF


def rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & np.uint64(MASK)


def threefry2x32(key: tuple[int, int], counter: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds on uint32 words (held in uint64 to wrap explicitly)."""
    ks = [np.uint64(key[0]), np.uint64(key[1])]
    ks.append(ks[0] ^ ks[1] ^ np.uint64(SKEIN_PARITY))
    x0 = (np.asarray(counter[0], np.uint64) + ks[0]) & np.uint64(MASK)
    x1 = (np.asarray(counter[1], np.uint64) + ks[1]) & np.uint64(MASK)
    for i in range(5):  # 5 groups of 4 rounds, a key injection after each group
        for r in ROTATIONS[i % 2]:
            x0 = (x0 + x1) & np.uint64(MASK)
            x1 = rotl32(x1, r) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & np.uint64(MASK)
        x1 = (x1 + ks[(i + 2) % 3] + np.uint64(i + 1)) & np.uint64(MASK)
    return x0.astype(np.uint32), x1.astype(np.uint32)


def np_split(key: list[int], num: int) -> list[list[int]]:
    """``split`` as JAX's partitionable Threefry does it (``jax_threefry_partitionable``, on by
    default): child ``i`` is Threefry of the key on the 64-bit counter ``i`` as (hi, lo) words."""
    hi, lo = threefry2x32((key[0], key[1]), (np.zeros(num), np.arange(num)))
    return [[int(a), int(b)] for a, b in zip(hi, lo, strict=True)]


def np_fold_in(key: list[int], data: int) -> list[int]:
    """``fold_in``: Threefry of the key on the seed of ``data`` (``(0, data)`` for a uint32)."""
    a, b = threefry2x32((key[0], key[1]), (np.array(0), np.array(data)))
    return [int(a), int(b)]


def test_threefry_reproduces_the_random123_known_answer() -> None:
    # Random123's kat_vectors: threefry2x32_20, the digits of pi as counter and key.
    out = threefry2x32((0x13198A2E, 0x03707344), (np.array(0x243F6A88), np.array(0x85A308D3)))
    assert [int(w) for w in out] == [0xC4923A9C, 0x483DF7A0]


def test_threefry_is_jaxs_split() -> None:
    config: Any = jax.config  # its flags are attributes mypy does not know
    assert config.jax_threefry_partitionable  # the scheme np_split follows
    raw = jax.random.PRNGKey(0)
    assert np.asarray(jax.random.split(raw)).tolist() == np_split([0, 0], 2)
    typed = jax.random.split(jax.random.key(0), 3)
    assert np.asarray(jax.random.key_data(typed)).tolist() == np_split([0, 0], 3)


# --- the recorded key tree ----------------------------------------------------------------------


def source(name: str) -> str:
    return (EXAMPLES / f"{name}.py").read_text()


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """The 1-based line number of the ``nth`` line of ``text`` containing ``needle``."""
    lines = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return lines[nth]


def calls(events: list[EventBase]) -> list[RandomCallRecorded]:
    return [e for e in events if isinstance(e, RandomCallRecorded)]


def test_split_then_draw_key_data_is_threefry(probe_runner: Runner) -> None:
    text = source("split_then_draw")
    tree = calls(probe_runner(EXHIBIT, text).events)
    assert [c.op for c in tree] == [
        "key", "split", "normal", "split", "bernoulli", "fold_in", "uniform"
    ]  # fmt: skip
    seed, split1, normal, split2, bern, fold, unif = tree
    assert seed.keys_out == [[0, 0]] and seed.typed and seed.key_in is None
    # split of key(0): numpy's Threefry, and JAX's own answer
    assert split1.key_in == [0, 0]
    assert split1.keys_out == np_split([0, 0], 2)
    jax_split = jax.random.key_data(jax.random.split(jax.random.key(0)))
    assert split1.keys_out == np.asarray(jax_split).tolist()
    # `key, init_key = split(key)`: normal reads the second child, the next split the first
    assert normal.key_in == split1.keys_out[1] and normal.parent == 1
    assert split2.key_in == split1.keys_out[0] and split2.parent == 1
    assert split2.keys_out == np_split(split1.keys_out[0], 2)
    assert bern.key_in == split2.keys_out[1] and bern.parent == 3
    assert fold.keys_out == [np_fold_in(split2.keys_out[0], 7)]
    assert unif.key_in == fold.keys_out[0] and unif.parent == 5
    assert [c.line for c in tree] == [
        line_of(text, needle)
        for needle in ("key(seed)", "init_key = ", "normal(", "drop_key = ", "bernoulli(",
                       "fold_in(", "uniform(")
    ]  # fmt: skip
    assert [c.consumes for c in tree] == [False, True, True, True, True, False, True]
    assert all(c.impl == "threefry2x32" for c in tree)


def test_raw_prngkey_data(probe_runner: Runner) -> None:
    text = source("prngkey_loop")
    tree = calls(probe_runner(EXHIBIT, text).events)
    seed = tree[0]
    assert seed.op == "PRNGKey" and not seed.typed
    assert seed.keys_out == [np.asarray(jax.random.PRNGKey(42)).tolist()] == [[0, 42]]
    splits = [c for c in tree if c.op == "split"]
    assert len(splits) == 3
    key = [0, 42]
    for s in splits:  # the loop's key chain: each split reads the first child of the last
        assert s.key_in == key and s.keys_out == np_split(key, 2)
        key = s.keys_out[0]


# --- key reuse ------------------------------------------------------------------------------


def reuse(events: list[EventBase]) -> list[tuple[int | None, int | None, str]]:
    (checked,) = [e for e in events if isinstance(e, KeyReuseChecked)]
    return [(f.line, f.first_line, f.checker) for f in checked.findings]


def test_reuse_bug_lines_are_the_examples(probe_runner: Runner) -> None:
    text = source("reuse_bug")
    ctx = probe_runner(EXHIBIT, text)
    second = line_of(text, "jax.random.bernoulli(key")
    first = line_of(text, "jax.random.normal(key")
    assert reuse(ctx.events) == [(second, first, "jax.debug_key_reuse")]
    (checked,) = ctx.of_type(KeyReuseChecked)
    assert checked.typed_keys and not checked.raw_keys
    assert checked.findings[0].message is not None
    assert "consumed" in checked.findings[0].message


def test_raw_key_reuse_is_jaxscopes_own_check(probe_runner: Runner) -> None:
    text = source("prngkey_loop")
    ctx = probe_runner(EXHIBIT, text)
    # normal(key) consumes the key, then split(key) consumes it again, every step of the loop
    second = line_of(text, "jax.random.split(key)")
    first = line_of(text, "jax.random.normal(key")
    assert reuse(ctx.events) == [(second, first, "jaxscope")]
    (checked,) = ctx.of_type(KeyReuseChecked)
    assert checked.raw_keys and not checked.typed_keys
    # the checker itself indeed sees nothing: the example runs clean under it
    ns = example_namespace("prngkey_loop")
    with jax.debug_key_reuse(True):
        ns["f"](*ns["args"])


def test_what_f_prints_is_shown_once(probe_runner: Runner) -> None:
    # f runs twice (recorded, then under the reuse checker); the script would print once.
    text = (
        "import jax\n"
        "def f(key):\n"
        "    print('drawing')\n"
        "    x = jax.random.normal(key)\n"
        "    jax.debug.print('x={x}', x=x)\n"
        "    return x\n"
        "args = (jax.random.key(0),)\n"
    )
    ctx = probe_runner(EXHIBIT, text)
    printed = "".join(e.text for e in ctx.of_type(StdoutPrinted))
    assert printed.count("drawing") == 1
    assert printed.count("x=") == 1


def test_correct_code_has_no_findings(probe_runner: Runner) -> None:
    assert reuse(probe_runner(EXHIBIT, source("split_then_draw")).events) == []


def test_reuse_inside_jit_and_from_jax_random_import(probe_runner: Runner) -> None:
    text = (
        "import jax\n"
        "from jax.random import normal, split\n"
        "@jax.jit\n"
        "def f(key):\n"
        "    a, b = split(key)\n"
        "    x = normal(a)\n"
        "    y = normal(a)\n"
        "    return x + y + normal(b)\n"
        "args = (jax.random.key(1),)\n"
    )
    ctx = probe_runner(EXHIBIT, text)
    # under jit the line comes from the eqn's user traceback; the tree from a disable_jit run
    assert reuse(ctx.events) == [(7, 6, "jax.debug_key_reuse")]
    tree = calls(ctx.events)
    assert [(c.op, c.line) for c in tree] == [
        ("split", 5),
        ("normal", 6),
        ("normal", 7),
        ("normal", 8),
    ]
    assert tree[0].parent is None  # the key came from args
    assert tree[0].keys_out == np_split([0, 1], 2)
    # the wrappers are gone again (functools.wraps gave them a __wrapped__)
    assert not hasattr(jax.random.split, "__wrapped__")


def example_namespace(name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "example"}
    path = EXAMPLES / f"{name}.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


# --- golden and artefacts -------------------------------------------------------------------


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, probe_runner: Runner) -> None:
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    assert [e.seq for e in stream] == list(range(len(stream)))
    example = EXAMPLES / (golden.name.removesuffix(".events.jsonl") + ".py")
    ctx = probe_runner(EXHIBIT, example.read_text())

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, EVENTS)]

    assert own(stream) == own(ctx.events)
    assert own(stream), "the golden holds none of this exhibit's events"


def test_print_artefacts(probe_runner: Runner) -> None:
    text = source("reuse_bug")
    ctx = probe_runner(EXHIBIT, text)
    artefacts = EXHIBITS[EXHIBIT].artefacts
    tree = json.loads(artefacts["key_tree"](ctx.events) or "null")
    assert [n["op"] for n in tree] == ["key", "normal", "bernoulli"]
    assert tree[0] == {
        "op": "key", "line": line_of(text, "key(seed)"), "key_in": None,
        "keys_out": [[0, 0]], "parent": None,
    }  # fmt: skip
    assert tree[1]["key_in"] == tree[2]["key_in"] == [0, 0]
    assert json.loads(artefacts["reuse"](ctx.events) or "null") == [
        {
            "line": line_of(text, "bernoulli(key"),
            "first_line": line_of(text, "normal(key"),
            "checker": "jax.debug_key_reuse",
        }
    ]


def test_jax_random_is_restored_when_f_raises(probe_runner: Runner) -> None:
    text = (
        "import jax\n"
        "from jax.random import split\n"
        "def f(key):\n"
        "    a, b = split(key)\n"
        "    raise ValueError('after a split')\n"
        "args = (jax.random.key(0),)\n"
    )
    original = jax.random.split
    with pytest.raises(ValueError, match="after a split"):
        probe_runner(EXHIBIT, text)
    assert jax.random.split is original


def test_keys_under_vmap_have_no_data(probe_runner: Runner) -> None:
    text = (
        "import jax\n"
        "def f(key):\n"
        "    keys = jax.random.split(key, 3)\n"
        "    return jax.vmap(lambda k: jax.random.normal(k, (2,)))(keys)\n"
        "args = (jax.random.key(5),)\n"
    )
    ctx = probe_runner(EXHIBIT, text)
    split, normal = calls(ctx.events)
    assert split.keys_out == np_split([0, 5], 3)
    # inside vmap the key is a batch tracer: no data, no parent found by data
    assert normal.op == "normal" and normal.key_in is None and normal.line == 4
    assert reuse(ctx.events) == []


def test_a_long_loop_is_capped_but_checked(probe_runner: Runner) -> None:
    from .probe import MAX_CALLS

    text = (
        "import jax\n"
        "def f(n):\n"
        "    key = jax.random.PRNGKey(0)\n"
        f"    for i in range({MAX_CALLS + 10}):\n"
        "        key = jax.random.fold_in(key, i)\n"
        "    return jax.random.uniform(key) + jax.random.uniform(key)\n"
        "args = (0,)\n"
    )
    ctx = probe_runner(EXHIBIT, text)
    assert len(calls(ctx.events)) == MAX_CALLS
    (checked,) = ctx.of_type(KeyReuseChecked)
    assert checked.calls_left_out == MAX_CALLS + 10 + 3 - MAX_CALLS
    # the reuse past the cap is still found: both draws on line 6
    assert reuse(ctx.events) == [(6, 6, "jaxscope")]
