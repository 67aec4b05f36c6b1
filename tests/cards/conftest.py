"""The two ways the probe undoes an xref stream's PNG predictors: C (``cards/_predictor.c``,
compiled at install time) and Python (a machine without a compiler). Tests that take
``row_decoder`` run under both, and must give the same answers."""

from __future__ import annotations

import pytest

from leanreplay.cards import _pdfxref
from tests.conftest import in_ci

NOT_BUILT = (
    "cards/_predictor.c was not built at install time (no compiler or no Python headers); "
    "the probe sums xref columns in Python instead"
)


def require_predictor() -> None:
    """Skip, or fail under CI=true, when the C row decoder was not built."""
    if _pdfxref._predictor is None:
        if in_ci():
            pytest.fail(f"CI=true but {NOT_BUILT}", pytrace=False)
        pytest.skip(NOT_BUILT)


@pytest.fixture(params=["compiled", "pure"])
def row_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "compiled":
        require_predictor()
    else:
        monkeypatch.setattr(_pdfxref, "_predictor", None)
    return str(request.param)
