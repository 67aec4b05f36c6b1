"""The probe's C pieces, compiled at install time, and their Python twins (a machine without a
compiler): `require_built` skips a test of a piece that was not built (fails it under CI);
tests that take ``row_decoder`` run under both ways of undoing an xref stream's PNG
predictors (``cards/_predictor.c`` and Python), and must give the same answers."""

from __future__ import annotations

import pytest

from leanreplay.cards import _pdfxref
from tests.conftest import in_ci


def require_built(module: object, source: str, fallback: str) -> None:
    """Skip, or fail under CI=true, when the C piece ``source`` was not built (``module`` is
    None); ``fallback`` says what reads instead."""
    if module is None:
        message = (
            f"{source} was not built at install time (no compiler or no Python headers); "
            f"{fallback} instead"
        )
        if in_ci():
            pytest.fail(f"CI=true but {message}", pytrace=False)
        pytest.skip(message)


def require_predictor() -> None:
    require_built(_pdfxref._predictor, "cards/_predictor.c", "the probe sums xref columns")


@pytest.fixture(params=["compiled", "pure"])
def row_decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "compiled":
        require_predictor()
    else:
        monkeypatch.setattr(_pdfxref, "_predictor", None)
    return str(request.param)
