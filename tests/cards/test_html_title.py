"""The title of an HTML card: the first <title> element of the head, found in linear time."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanreplay.cards import card_for


def _html(tmp_path: Path, body: bytes, name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_bytes(body)
    return path


@pytest.mark.parametrize(
    ("body", "title"),
    [
        (b"<html><head><title>Plain</title></head></html>", "Plain"),
        (b"<HTML><TITLE lang='en'>Upper &amp; case</TITLE >", "Upper & case"),
        (b"<title>\n  spread over\n  lines </title>", "spread over lines"),
        (b"<titlebar>no</titlebar><title>the element</title>", "the element"),
        (b"<title>first</title><title>second</title>", "first"),
        (b"<title>never closed", None),
        (b"<title", None),
        (b"<p>no title here</p>", None),
    ],
    ids=["plain", "attributes", "lines", "prefix-tag", "first", "unclosed", "cut", "none"],
)
def test_the_first_title_element(tmp_path: Path, body: bytes, title: str | None) -> None:
    facts = card_for(_html(tmp_path, b"<!doctype html>" + body)).facts
    assert facts.get("title") == title


@pytest.mark.timeout(30)  # a regex with a lazy group took 2 s per card (73 s for 40 of them)
@pytest.mark.parametrize("tag", [b"<title>", b"<title ", b"<TITLE>x"], ids=str)
def test_a_head_full_of_title_tags_is_carded_at_once(tmp_path: Path, tag: bytes) -> None:
    body = b"<!doctype html>" + tag * (63 * 1024 // len(tag))
    for i in range(40):
        facts = card_for(_html(tmp_path, body, f"page{i}.html")).facts
        assert "title" not in facts
