"""Regenerates the small committed files in sample_files/ (run by hand; needs qpdf).

    python tests/make_samples.py

The expected facts in sample_files/manifest.json are written by hand and checked by the tests
against independent readers (pypdf, Pillow, zipfile), so this script is not an oracle.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import officegen, pdfgen

OUT = Path(__file__).resolve().parent.parent / "sample_files"


def qpdf(*args: str) -> None:
    subprocess.run(["qpdf", *args], check=True)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    classic = OUT / "classic_xref.pdf"
    pdfgen.write_pdf(str(classic), 12, title="Quarterly revenue report", compress=True)
    qpdf("--object-streams=generate", str(classic), str(OUT / "object_streams.pdf"))
    qpdf("--linearize", str(classic), str(OUT / "linearized.pdf"))
    (OUT / "incremental_update.pdf").write_bytes(pdfgen.incremental_add_pages(4, 3))
    qpdf(
        "--encrypt",
        "",
        "owner-secret",
        "256",
        "--",
        "--object-streams=disable",
        str(classic),
        str(OUT / "encrypted.pdf"),
    )
    qpdf(
        "--encrypt",
        "user-secret",
        "owner-secret",
        "256",
        "--",
        "--object-streams=generate",
        str(classic),
        str(OUT / "encrypted_object_streams.pdf"),
    )

    (OUT / "broken_page_tree.pdf").write_bytes(pdfgen.lost_page_tree_pdf(3))
    (OUT / "metadata_encodings.pdf").write_bytes(
        pdfgen.one_page_pdf(b"BT /F1 10 Tf 40 800 Td (metadata) Tj ET\n", pdfgen.METADATA_INFO)
    )
    (OUT / "hyphenated.pdf").write_bytes(pdfgen.one_page_pdf(pdfgen.HYPHENATED_CONTENT))

    Image.new("RGB", (64, 48), (200, 30, 30)).save(OUT / "red_64x48.png")
    Image.new("RGB", (120, 80), (30, 120, 200)).save(OUT / "blue_120x80.jpg", quality=80)
    frames = [Image.new("RGB", (32, 32), (i * 50, 255 - i * 50, 90)) for i in range(5)]
    frames[0].save(
        OUT / "animated_5_frames.gif", save_all=True, append_images=frames[1:], duration=100
    )

    (OUT / "notes_utf8.txt").write_text(
        "Meeting notes\nدرآمد فصلی افزایش یافت\nnaïve café — 😀\nlast line without newline",
        encoding="utf-8",
    )
    (OUT / "notes_utf16.txt").write_text("first line\nsecond line\nthird line\n", encoding="utf-16")
    (OUT / "table.csv").write_text("id,name,amount\n1,alpha,10.5\n2,bravo,20\n3,charlie,7\n")

    with zipfile.ZipFile(OUT / "bundle.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(7):
            z.writestr(f"data/file{i}.txt", f"entry {i}\n" * 10)

    docx = io.BytesIO()
    with zipfile.ZipFile(docx, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            "</Types>",
        )
        z.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
            "</Relationships>",
        )
        z.writestr(
            "word/document.xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            "<w:body><w:p><w:r><w:t>Hello from a docx</w:t></w:r></w:p></w:body></w:document>",
        )
    (OUT / "letter.docx").write_bytes(docx.getvalue())
    write_conversation(OUT / "conversation.jsonl")
    write_conversation_with_pdf(OUT / "conversation_with_pdf.jsonl", OUT / "classic_xref.pdf")
    write_tables()
    write_documents()
    write_archives()
    write_media()


def write_media() -> None:
    """A one-second 8 kHz mono WAV (`python tests/make_samples.py media`)."""
    import wave

    with wave.open(str(OUT / "tone.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x10" * 8000)


def write_archives() -> None:
    """The archive samples (`python tests/make_samples.py archives`): deterministic bytes."""
    import bz2
    import gzip
    import lzma
    import tarfile

    members = {
        "data/table.csv": (OUT / "table.csv").read_bytes(),
        "docs/guide.md": (OUT / "guide.md").read_bytes(),
        "img/red.png": (OUT / "red_64x48.png").read_bytes(),
    }
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1767225600
            t.addfile(info, io.BytesIO(data))
    (OUT / "bundle.tar").write_bytes(tar_bytes.getvalue())
    (OUT / "bundle.tar.gz").write_bytes(gzip.compress(tar_bytes.getvalue(), mtime=0))
    notes = (OUT / "notes_utf8.txt").read_bytes()
    with (
        open(OUT / "notes.txt.gz", "wb") as raw,
        gzip.GzipFile("notes.txt", "wb", fileobj=raw, mtime=0) as gz,
    ):
        gz.write(notes)
    (OUT / "notes.txt.bz2").write_bytes(bz2.compress(notes))
    (OUT / "notes.txt.xz").write_bytes(lzma.compress(notes))


REPORT: list[officegen.Block] = [
    ("h1", "Quarterly report"),
    ("p", "Revenue grew in every region this quarter."),
    ("h2", "By region"),
    ("table", [["region", "amount"], ["north", "260"], ["south", "175.5"]]),
    ("p", "The east office opened in Q2."),
]
DECK = [
    ("Quarterly review", ["Revenue up 12%", "Two new regions"]),
    ("Regions", ["north 260", "south 175.5", "east 60"]),
    ("Next steps", ["Hire in the east office"]),
]
CHAPTERS = [
    ("Arrival", "The ship came into the harbour at dawn."),
    ("The market", "Spices, copper and paper changed hands."),
    ("Departure", "By evening the harbour was empty again."),
]


def write_documents() -> None:
    """The document samples (`python tests/make_samples.py documents`)."""
    meta = {"title": "Quarterly report", "author": "Ada Finance"}
    (OUT / "report.docx").write_bytes(officegen.docx(REPORT, images=1, **meta))
    (OUT / "report.odt").write_bytes(officegen.odt(REPORT, **meta))
    (OUT / "deck.pptx").write_bytes(
        officegen.pptx(DECK, title="Quarterly review", author="Ada Finance")
    )
    (OUT / "deck.odp").write_bytes(
        officegen.odp(DECK, title="Quarterly review", author="Ada Finance")
    )
    (OUT / "voyage.epub").write_bytes(
        officegen.epub(CHAPTERS, title="A short voyage", author="R. Sailor")
    )
    (OUT / "page.html").write_text(
        "<!doctype html><html><head><title>Release notes</title><style>p{}</style></head><body>"
        "<h1>Release notes</h1><p>Tables and documents get real cards.</p>"
        "<table><tr><th>tool</th><th>reads</th></tr><tr><td>doc_read</td><td>parts</td></tr></table>"
        "<script>var hidden = 1;</script><p>Archives come next.</p></body></html>\n"
    )
    (OUT / "guide.md").write_text(
        "# Guide\n\nleanreplay keeps replays lean.\n\n## Install\n\n```bash\npip install leanreplay\n\nleanreplay demo\n```\n\n## Use\nCall doc_read for parts.\n"
    )


SALES: list[list[officegen.Cell]] = [
    ["region", "quarter", "amount"],
    ["north", "Q1", 120],
    ["south", "Q1", 80.5],
    ["north", "Q2", 140],
    ["south", "Q2", 95],
    ["east", "Q2", 60],
]
NOTES: list[list[officegen.Cell]] = [["note"], ["amounts in thousands"], ["east opened in Q2"]]


def write_tables() -> None:
    """The spreadsheet and table samples (no qpdf needed: `python tests/make_samples.py tables`)."""
    import duckdb

    (OUT / "cities.tsv").write_text(
        "city\tcountry\tpopulation\nTehran\tIran\t9039000\nLyon\tFrance\t522250\n"
        "Osaka\tJapan\t2753000\n"
    )
    sheets = {"Sales": SALES, "Notes": NOTES}
    (OUT / "sales.xlsx").write_bytes(officegen.xlsx(sheets))
    (OUT / "sales.ods").write_bytes(officegen.ods(sheets))
    target = OUT / "sales.parquet"
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE s (region VARCHAR, quarter VARCHAR, amount DOUBLE);"
        "INSERT INTO s VALUES " + ", ".join(f"('{r}', '{q}', {a})" for r, q, a in SALES[1:])
    )
    con.execute(f"COPY s TO '{target}' (FORMAT parquet)")
    con.close()


def write_conversation_with_pdf(path: Path, pdf: Path) -> None:
    """An OpenAI-shape session whose first message attaches a PDF inline as a file part."""
    import base64
    import json

    data = base64.b64encode(pdf.read_bytes()).decode()
    hits = "".join(
        f"page {n}: marker{n:05d} revenue margin quarter forecast audit ledger\n"
        for n in range(1, 13)
    )
    messages = [
        {"role": "system", "content": "You answer questions about attached reports."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarize what the attached report says about revenue."},
                {
                    "type": "file",
                    "file": {
                        "filename": "q3-report.pdf",
                        "file_data": f"data:application/pdf;base64,{data}",
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "pdf_search", "arguments": '{"query": "revenue"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": hits * 4},
        {
            "role": "assistant",
            "content": "Revenue is discussed on all 12 pages, alongside margin and forecast.",
        },
        {"role": "user", "content": "Which page first mentions the forecast?"},
        {"role": "assistant", "content": "Page 1."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You're welcome."},
    ]
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))


def write_conversation(path: Path) -> None:
    """An Anthropic-shape session: a big log read early, then two more user exchanges. The
    log is large enough (480 lines, 27,708 chars) that the default replay elides it: a
    request under `ReplayPolicy.min_request_chars` (20,000) elides nothing."""
    import json

    log = "".join(
        f"2026-11-29T10:{i // 60:02d}:{i % 60:02d}Z worker-{i % 4} "
        f"{'ERROR disk quota exceeded on /var/data' if i % 17 == 0 else 'INFO request served in 3ms'}\n"
        for i in range(480)
    )
    messages = [
        {"role": "user", "content": "Why did the nightly job fail? The log is in sample_files."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me read the job log."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "file_read",
                    "input": {"path": "job.log"},
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": log}],
        },
        {
            "role": "assistant",
            "content": "The job failed because the disk quota on /var/data ran out (29 ERROR lines).",
        },
        {"role": "user", "content": "Which workers hit it?"},
        {
            "role": "assistant",
            "content": "worker-0 to worker-3; the errors repeat every 17 requests.",
        },
        {"role": "user", "content": "Thanks. Draft a short incident note."},
        {
            "role": "assistant",
            "content": "Incident: nightly job stopped when /var/data hit its quota. Fix: raise the quota and add an alert.",
        },
    ]
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages))


if __name__ == "__main__":
    {
        "tables": write_tables,
        "documents": write_documents,
        "archives": write_archives,
        "media": write_media,
    }.get(sys.argv[1] if len(sys.argv) > 1 else "", main)()
