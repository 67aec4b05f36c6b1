"""`leanreplay demo`: the pipeline on the bundled sample files, in a temporary home."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import click

from leanreplay import cards
from leanreplay.index import Workspace
from leanreplay.placeholders import is_placeholder, parse_read_call, result_slots

from ._render import echo

__all__ = ["run_demo", "sample_dir"]


def sample_dir() -> Path:
    """The bundled samples: inside the installed package, else next to the source tree."""
    here = Path(__file__).resolve().parent  # index/faces
    for candidate in (here.parent / "sample_files", here.parent.parent / "sample_files"):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise click.ClickException("sample_files/ not found; run the demo from a leanreplay checkout")


def run_demo() -> None:
    """The pipeline on the bundled sample files, in a temporary home: what it saved."""
    samples = sample_dir()
    echo(f"== 1. cards of {samples} (content never injected) ==")
    total = card_chars = 0
    for path in sorted(samples.iterdir()):
        if path.name == "manifest.json":
            continue
        line = cards.card_for(path).render()
        echo(line)
        total += path.stat().st_size
        card_chars += len(line)
    echo(f"-- {total:,} bytes of attachments became {card_chars:,} chars of cards")
    echo("")  # a blank line between the steps

    with (
        tempfile.TemporaryDirectory(prefix="leanreplay-demo-") as home,
        Workspace(home, [str(samples)]) as ws,
    ):
        (cid,) = ws.ingest(samples / "conversation.jsonl")
        count = ws.info(cid).messages
        echo(f"== 2. ingest conversation.jsonl -> conversation {cid!r} ({count} messages) ==")
        result = ws.replay(cid)
        stats = result.stats()
        echo(
            f"replay: {stats['chars_in']:,} chars in, {stats['chars_out']:,} out, "
            f"{stats['placeholders']} placeholder(s), {stats['elided_chars']:,} chars elided"
        )
        placeholder = next(
            (
                s.content
                for m in result.messages
                for s in result_slots(m)
                if is_placeholder(s.content)
            ),
            None,
        )
        if placeholder is None:
            raise click.ClickException("the demo conversation produced no placeholder")
        echo(f"the model sees instead: {placeholder}")
        echo("")  # a blank line between the steps
        arguments = parse_read_call(placeholder)
        if arguments is None:
            raise click.ClickException(f"the placeholder names no call: {placeholder}")
        call_text = placeholder[placeholder.index("conversation_read(") :]
        echo(f"== 3. the model calls {call_text} ==")
        read = ws.call("conversation_read", arguments)
        original = next(m for m in ws.messages(cid) if m["id"] == arguments["message_id"])
        (slot,) = result_slots(original)
        same = read["content"] == slot.content and read["next"] is None
        size = slot.chars()
        echo(f"conversation_read returned {size:,} chars, byte-exact: {same}")
        echo("")  # a blank line between the steps

        echo("== 4. ingest conversation_with_pdf.jsonl: an inline PDF becomes its card ==")
        (attached,) = ws.ingest(samples / "conversation_with_pdf.jsonl")
        lean = ws.replay(attached)
        card_text = lean.messages[1]["content"][1]["text"]
        stats = lean.stats()
        echo(
            f"replay: {stats['chars_in']:,} chars in (base64 replaced by the card), "
            f"{stats['chars_out']:,} out, {stats['placeholders']} placeholder(s)"
        )
        echo(f"the model sees: {card_text}")
        found = re.search(r'path=("(?:[^"\\]|\\.)*")', card_text)
        if found is None:
            raise click.ClickException(f"the attachment card names no path: {card_text}")
        saved = json.loads(found.group(1))
        hit = ws.pdf_search(saved, "marker00007")["hits"][0]
        echo(f"pdf_search on it: page {hit['page']}: {hit['snippet'][:90]}...")
        echo("")  # a blank line between the steps

        echo("== 5. a long conversation folds as it grows (offline summarizer) ==")
        peak = grown = 0
        for i in range(60):
            for message in _synthetic_turn(i):
                ws.append("long", message)
                grown += len(json.dumps(message))
            peak = max(peak, ws.replay("long").chars_out)
        state = ws.fold_state("long") or {}
        echo(
            f"{len(ws.messages('long'))} messages stored ({grown:,} chars of JSON); "
            f"{state.get('generation', 0)} folds; the largest replay was {peak:,} chars; "
            f"the summary runs through {state.get('summarized_through_message_id')}; "
            "every original is kept"
        )


def _synthetic_turn(i: int) -> list[dict[str, Any]]:
    log = "".join(f"step {i}.{n}: compiled module {n} in {n % 7 + 1}ms\n" for n in range(180))
    return [
        {"role": "user", "content": f"Run build #{i} and tell me if it passed."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"b{i}", "name": "bash", "input": {"cmd": "make"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"b{i}", "content": log}],
        },
        {"role": "assistant", "content": f"Build #{i} passed: 180 modules compiled."},
    ]
