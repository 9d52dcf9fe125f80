"""``jaxscope.internals.patching.patched``: the replacements are in place inside the block and
the originals are back after it, also when the block raises and when patches nest."""

from __future__ import annotations

import pytest
from jax._src.interpreters import partial_eval as pe
from jaxscope.internals.patching import patched


class _Owner:
    def method(self) -> str:
        return "original"

    value = 1


def _replacement(self: _Owner) -> str:
    del self
    return "replaced"


def test_replaced_inside_and_restored_after() -> None:
    original = _Owner.__dict__["method"]
    with patched(_Owner, method=_replacement, value=2):
        assert _Owner().method() == "replaced" and _Owner.value == 2
    assert _Owner.__dict__["method"] is original and _Owner.value == 1
    assert _Owner().method() == "original"


def test_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="inside"), patched(_Owner, value=3):
        assert _Owner.value == 3
        raise RuntimeError("inside")
    assert _Owner.value == 1


def test_nested_patches_restore_in_order() -> None:
    with patched(_Owner, value=2):
        with patched(_Owner, value=3):
            assert _Owner.value == 3
        assert _Owner.value == 2
    assert _Owner.value == 1


def test_a_jax_method_is_the_same_function_after() -> None:
    # The way recording.py patches JaxprStackFrame: the class keeps its own function object.
    add_eqn = pe.JaxprStackFrame.__dict__["add_eqn"]
    with patched(pe.JaxprStackFrame, add_eqn=lambda self, eqn: None):
        assert pe.JaxprStackFrame.__dict__["add_eqn"] is not add_eqn
    assert pe.JaxprStackFrame.__dict__["add_eqn"] is add_eqn
