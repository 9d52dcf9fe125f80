"""The pmap exhibit's error explainer: the plain explanation and fix of the errors pmap users
hit (a leading axis larger than the device count, a collective naming an axis pmap did not
bind, a pmap inside a pmap), which the probe recognised and attached to JAX's exception
(:func:`attach`). Any other run's errors carry nothing of it, so the chain's answer for them is
unchanged (``None`` here).
"""

from __future__ import annotations

from jaxscope.exhibit_api import ErrorContext, Explanation

# The attribute the probe sets on JAX's exception: (explanation, fix).
HELP_ATTR = "_jaxscope_pmap_help"


def attach(exc: BaseException, explanation: str, fix: str) -> BaseException:
    """Give ``exc`` (JAX's own error, raised unchanged) the pmap exhibit's words."""
    try:
        setattr(exc, HELP_ATTR, (explanation, fix))
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass
    return exc


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The words the probe attached, ``None`` for an error it did not recognise."""
    del ctx
    found = getattr(exc, HELP_ATTR, None)
    if not (isinstance(found, tuple) and len(found) == 2):
        return None
    return Explanation(explanation=str(found[0]), fix=str(found[1]))
