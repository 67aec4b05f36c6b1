"""The C newline counter of file_read's line index (index/tools/_bytecount.c), built by
hatch_build.py: the same answers as bytes.count, whatever the length, alignment or byte, and
shipped in the wheel with the PDF probe's row decoder (a pure wheel when asked, or when
nothing compiles)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index import Workspace
from leanreplay.index.tools import _lines
from tests.conftest import in_ci

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def counter() -> ModuleType:
    if _lines._bytecount is None:
        message = (
            "the C newline counter was not built at install time (no compiler or no Python "
            "headers); file_read counts with NumPy instead"
        )
        if in_ci():
            pytest.fail(f"CI=true but {message}", pytrace=False)
        pytest.skip(message)
    return _lines._bytecount  # type: ignore[no-any-return]


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=3000),
    skip=st.integers(0, 15),
    byte=st.integers(0, 255),
)
def test_counts_like_bytes_count(counter: ModuleType, data: bytes, skip: int, byte: int) -> None:
    view = memoryview(bytearray(data))[skip:]  # any start, aligned or not
    assert counter.count(view, byte) == bytes(view).count(bytes([byte]))


@pytest.mark.parametrize(
    "length", [0, 1, 63, 64, 65, 255 * 64 - 1, 255 * 64, 255 * 64 + 1, 1 << 20]
)
def test_counters_do_not_wrap(counter: ModuleType, length: int) -> None:
    # Every byte a match: each byte counter in the loop fills to 255 before it is folded.
    assert counter.count(b"\n" * length, 10) == length
    assert counter.count(b"\n" * length, 11) == 0


def test_refuses_what_is_not_a_byte_or_a_buffer(counter: ModuleType) -> None:
    with pytest.raises(ValueError, match="byte must be in 0..255, not 256"):
        counter.count(b"abc", 256)
    with pytest.raises(TypeError):
        counter.count("text", 10)


def test_the_line_index_counts_with_it(counter: ModuleType) -> None:
    assert _lines._count_block is _lines._count_block_c
    scratch = _lines._Scratch()
    for _ in range(3):
        scratch.buf[:] = os.urandom(_lines.BLOCK)
        expected = bytes(scratch.buf).count(b"\n")
        assert _lines._count_block_c(scratch) == expected
        assert _lines._count_block_numpy(scratch) == expected
        assert _lines._count_block_bytes(scratch) == expected


@pytest.mark.parametrize("without", ["c", "c_and_numpy"])
def test_reads_are_the_same_without_the_counter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, without: str
) -> None:
    # Nine blocks of lines of many lengths: reads near the start, in the middle, at the end,
    # and the last lines, by each fallback of a machine that compiled nothing.
    lines = [f"line {i} " + "x" * (i * 7 % 97) for i in range(1, 40_001)]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    starts = [1, 12_345, 29_000, 39_990]
    expected = ["\n".join(f"{n}\t{lines[n - 1]}" for n in range(s, s + 4)) for s in starts]
    expected_tail = "\n".join(f"{n}\t{lines[n - 1]}" for n in range(39_996, 40_001))
    monkeypatch.setattr(_lines, "_bytecount", None)
    if without == "c_and_numpy":
        monkeypatch.setattr(_lines, "_count_block", _lines._count_block_bytes)
    else:
        monkeypatch.setattr(_lines, "_count_block", _lines._count_block_numpy)
    with Workspace(tmp_path / f"home-{without}", [tmp_path]) as ws:
        got = [ws.file_read("log.txt", s, s + 3)["content"] for s in starts]
        tail = ws.file_read("log.txt", -5)
    assert got == expected
    assert tail["content"] == expected_tail
    assert tail["total_lines"] == 40_000


def _build_wheel(out: Path, **env: str) -> zipfile.ZipFile:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        env={**os.environ, **env},
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("*.whl")
    return zipfile.ZipFile(wheel)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wheel_ships_the_extensions_and_a_pure_wheel_does_not(
    counter: ModuleType, tmp_path: Path
) -> None:
    from leanreplay.cards import _pdfobj, _pdfxref

    # Built by the same hook, which keeps what compiled: here all three did.
    if _pdfxref._predictor is None or _pdfobj._simpledict is None:
        pytest.fail("the newline counter was built but cards/*.c were not")
    with _build_wheel(tmp_path / "native") as wheel:
        built = sorted(n for n in wheel.namelist() if n.endswith(".so"))
        assert [Path(n).parent.as_posix() for n in built] == [
            "leanreplay/cards",
            "leanreplay/cards",
            "leanreplay/index/tools",
        ]
        names = [Path(n).name.split(".")[0] for n in built]
        assert names == ["_predictor", "_simpledict", "_bytecount"]
        tag = Path(wheel.filename or "").name.split("-", 2)[2]
        assert tag.startswith(f"cp{sys.version_info.major}{sys.version_info.minor}-"), tag
        for name in built:
            wheel.extract(name, tmp_path / "native")
    predictor = _load(tmp_path / "native" / built[0], "_predictor")
    reader = _load(tmp_path / "native" / built[1], "_simpledict")
    shipped = _load(tmp_path / "native" / built[2], "_bytecount")
    assert shipped.count(b"a\nb\n\n", 10) == 3
    assert reader.simple_dict(b"<< /A /B >>", 0, str, tuple, bytes) == ({"A": "B"}, 11)
    assert predictor.undo(b"\x02\x01\x02\x02\x01\x01", 2, b"\x0a\x0a") == b"\x0b\x0c\x0c\x0d"
    with _build_wheel(tmp_path / "pure", LEANREPLAY_PURE="1") as wheel:
        assert not [n for n in wheel.namelist() if n.endswith(".so")]
        assert Path(wheel.filename or "").name.endswith("py3-none-any.whl")
