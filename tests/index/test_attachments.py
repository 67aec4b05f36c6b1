"""Inline attachments are saved once by content hash; replay shows their card; the original
stays byte-exact; the file tools read the saved file."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import check_pairing
from tests.conftest import SAMPLES

PDF = (SAMPLES / "classic_xref.pdf").read_bytes()
PNG = (SAMPLES / "red_64x48.png").read_bytes()
B64_PDF = base64.b64encode(PDF).decode()
B64_PNG = base64.b64encode(PNG).decode()


def anthropic_message() -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in the report and the chart?"},
            {
                "type": "document",
                "title": "report.pdf",
                "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
            },
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
            },
        ],
    }


def openai_message() -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": "Compare these."},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
            {
                "type": "file",
                "file": {
                    "filename": "q3.pdf",
                    "file_data": f"data:application/pdf;base64,{B64_PDF}",
                },
            },
        ],
    }


def card_path(card: str) -> str:
    match = re.search(r'path=("(?:[^"\\]|\\.)*")', card)
    assert match, card
    return str(json.loads(match.group(1)))


@pytest.mark.parametrize("build", [anthropic_message, openai_message], ids=["anthropic", "openai"])
def test_replay_shows_cards_and_the_original_stays_exact(tmp_path: Path, build: Any) -> None:
    message = build()
    with Workspace(tmp_path) as ws:
        mid = ws.append("c", message)
        ws.append("c", {"role": "assistant", "content": "Looking."})
        replayed = ws.replay("c").messages[0]
        texts = [b["text"] for b in replayed["content"] if b["type"] == "text"]
        assert len(texts) == 3
        pdf_card = next(t for t in texts if "application/pdf" in t)
        png_card = next(t for t in texts if "image/png" in t)
        assert "pages=12" in pdf_card
        assert "read with: pdf_info, pdf_search, pdf_read" in pdf_card
        assert "64x48" in png_card
        assert "read with: image_view" in png_card
        assert B64_PDF not in json.dumps(ws.replay("c").messages)
        assert ws.messages("c")[0] == {**message, "id": mid}
        # conversation_read: no base64 in its text; the image as an image part, the PDF as
        # its card (the byte-exact original is ws.messages above).
        read = ws.conversation_read("c", mid)
        assert B64_PDF not in read["content"]
        assert B64_PNG not in read["content"]
        assert "<image 1: returned as image content>" in read["content"]
        assert "inline file saved as an attachment" in read["content"]
        assert "pages=12" in read["content"]
        (image,) = read["images"]
        assert image == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
        }
        assert check_pairing(ws.replay("c").messages) == []
        pdf_path = card_path(pdf_card)
        assert Path(pdf_path).read_bytes() == PDF
        assert Path(pdf_path).name == hashlib.sha256(PDF).hexdigest() + ".pdf"
        # The tools named on the card read the saved file, whatever roots were configured.
        assert ws.pdf_read(pdf_path, "1")["pages"][0]["text"]
        assert ws.image_view(card_path(png_card))["original_width"] == 64


def test_the_same_bytes_are_saved_once(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws:
        ws.append("a", anthropic_message())
        ws.append("b", openai_message())
        files = sorted(p.name for p in (tmp_path / "attachments").rglob("*") if p.is_file())
    assert files == sorted(
        [hashlib.sha256(PDF).hexdigest() + ".pdf", hashlib.sha256(PNG).hexdigest() + ".png"]
    )


def test_ingested_logs_get_cards_too(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    log.write_text(
        json.dumps(openai_message())
        + "\n"
        + json.dumps({"role": "assistant", "content": "ok"})
        + "\n"
    )
    with Workspace(tmp_path / "home") as ws:
        (cid,) = ws.ingest(log)
        first = ws.replay(cid).messages[0]
    assert [b["type"] for b in first["content"]] == ["text", "text", "text"]
    assert 'name="q3.pdf"' in first["content"][2]["text"]


def test_broken_base64_is_left_alone(tmp_path: Path) -> None:
    message = {
        "role": "user",
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "!!!not base64!!!"},
            }
        ],
    }
    with Workspace(tmp_path) as ws:
        ws.append("c", message)
        replayed = ws.replay("c").messages[0]
    assert replayed["content"] == message["content"]
    assert not any(p.is_file() for p in (tmp_path / "attachments").rglob("*"))
