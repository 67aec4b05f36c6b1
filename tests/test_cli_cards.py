"""`leanreplay card` and `leanreplay demo` through click's runner."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from leanreplay.index.faces.cli import cli
from tests.conftest import SAMPLES


def test_card_json_lists_to_dict_objects() -> None:
    result = CliRunner().invoke(
        cli, ["card", "--json", str(SAMPLES / "classic_xref.pdf"), str(SAMPLES / "table.csv")]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [d["name"] for d in data] == ["classic_xref.pdf", "table.csv"]
    assert set(data[0]) == {"name", "path", "mime", "kind", "size", "facts", "tools", "warnings"}
    assert data[0]["facts"]["pages"] == 12


def test_card_text_is_one_line_per_file() -> None:
    result = CliRunner().invoke(cli, ["card", str(SAMPLES / "red_64x48.png")])
    assert result.exit_code == 0
    assert result.output.count("\n") == 1
    assert "64x48" in result.output


def test_card_error_is_one_line_and_exit_nonzero(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["card", str(tmp_path / "missing.pdf")])
    assert result.exit_code == 1
    assert "no file at" in result.output
    assert "Traceback" not in result.output


def test_demo_shows_cards_of_every_sample() -> None:
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code == 0, result.output
    # Its own line breaks are not escaped as controls (every CLI line is made terminal-safe).
    assert "\\u000a" not in result.output
    assert "\n\n== 2. ingest" in result.output
    for name in json.loads((SAMPLES / "manifest.json").read_text())["files"]:
        assert f'name="{name}"' in result.output
    assert "1 placeholder(s)" in result.output
    assert "byte-exact: True" in result.output
    assert 'name="q3-report.pdf"' in result.output
    assert "pdf_search on it: page 7" in result.output
    folds = re.search(r"(\d+) folds; the largest replay was ([\d,]+) chars", result.output)
    assert folds is not None
    assert int(folds.group(1)) >= 1
    assert int(folds.group(2).replace(",", "")) < 130_000
