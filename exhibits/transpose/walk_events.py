"""The transpose exhibit's events made of the backward-pass walk's records (design 0059).

``jaxscope.internals.transpose_walk`` returns records, not events: the linear jaxpr's
(``linear_jaxpr_staged(lin)``, a ``LinearJaxprRecord``) and each step's view
(``TransposeStepRecord.view``, a ``TransposeStepView``, built on first use). The transpose and
nan_finder probes emit the events made of them here, field by field (a contract test in
``backend/tests/test_internals_contract.py`` holds the fields equal). The values' previews pass
on as they are (pending ones stay pending: nothing is computed here, design 0068).
"""

from __future__ import annotations

from jaxscope.exhibit_api import Linearized, TransposeStepRecord, linear_jaxpr_staged

from exhibits.transpose.events import LinearJaxprStaged, TransposeStepped


def stepped(record: TransposeStepRecord) -> TransposeStepped:
    """The ``transpose_stepped`` event of one step of the walk."""
    return TransposeStepped.model_validate(record.view, from_attributes=True)


def linear_staged(lin: Linearized) -> LinearJaxprStaged:
    """The ``linear_jaxpr_staged`` event of ``lin`` (its ``output_leaf`` left to the probe)."""
    return LinearJaxprStaged.model_validate(linear_jaxpr_staged(lin), from_attributes=True)
