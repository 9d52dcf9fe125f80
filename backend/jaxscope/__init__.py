"""jaxscope, a visual explorer of JAX internals. ``jaxscope.show(f, *args, exhibit=...)`` shows
an exhibit inline in a notebook (:mod:`jaxscope.notebook`, imported on first use, so that the
server and the sandbox, which import this package, load nothing for it)."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "show":
        from jaxscope.notebook import show

        return show
    raise AttributeError(f"module 'jaxscope' has no attribute {name!r}")
