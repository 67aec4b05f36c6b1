"""The red team's attacks (issue 18), each in a child process watched for 60 s and 2 GiB of
resident memory, per surface: documents, archives, tables, file_list, gateway, view, ingest,
migrations. Prints JSON: every attack's wall time, peak RSS (the child's ru_maxrss) and what
it answered, and per surface the worst one.

Inputs are written once under the temp folder (some are hundreds of MB; they are deleted at
the end unless --keep), each attack timed on its own, in a fresh interpreter.

    python bench/bench_hostile.py [--only SURFACE] [--keep]
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._docx import docx_body  # noqa: E402

LIMIT_S = 60.0
LIMIT_RSS = 2 * 1024**3
MIB = 1024 * 1024

# --- inputs -----------------------------------------------------------------------------


def _docx_stream(path: Path, write_body: Callable[[Any], None], *, pad: int = 0) -> None:
    """A docx whose document.xml body is written by ``write_body``; with ``pad``, the part's
    recorded compressed size claims ``pad`` more bytes than its data (junk follows it)."""
    with docx_body(path) as (out, _):
        write_body(out)
    if pad:
        _pad_member(path, "word/document.xml", pad)


def _pad_member(path: Path, name: str, pad: int) -> None:
    """Rewrite the zip with ``pad`` junk bytes after ``name``'s data, counted in its recorded
    compressed size (a member lying about its compressed size)."""
    from tests.filetools import raw_zip  # noqa: F401  (the same surgery the tests use)

    data = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
    out = io.BytesIO()
    central = io.BytesIO()
    for info in infos:
        local = data[info.header_offset : info.header_offset + 30]
        n, m = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + n + m
        raw = data[start : start + info.compress_size]
        extra = b"\xa5" * pad if info.filename == name else b""
        offset = out.tell()
        encoded = info.filename.encode()
        size = len(raw) + len(extra)
        out.write(
            struct.pack(
                "<4sHHHHHLLLHH",
                b"PK\x03\x04",
                20,
                0,
                info.compress_type,
                0,
                0x5821,
                info.CRC,
                size,
                info.file_size & 0xFFFFFFFF,
                len(encoded),
                0,
            )
            + encoded
            + raw
            + extra
        )
        central.write(
            struct.pack(
                "<4sHHHHHHLLLHHHHHLL",
                b"PK\x01\x02",
                20,
                20,
                0,
                info.compress_type,
                0,
                0x5821,
                info.CRC,
                size,
                info.file_size & 0xFFFFFFFF,
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    start = out.tell()
    out.write(central.getvalue())
    out.write(
        struct.pack(
            "<4sHHHHLLH",
            b"PK\x05\x06",
            0,
            0,
            len(infos),
            len(infos),
            len(central.getvalue()),
            start,
            0,
        )
    )
    path.write_bytes(out.getvalue())


def make_inputs(base: Path, only: str | None) -> None:
    from tests import officegen

    def want(surface: str) -> bool:
        return only in (None, surface)

    if want("documents"):

        def runs(out: Any) -> None:  # 230 MB of text in runs, numbered: it compresses ~20x
            out.write(b"<w:p>")
            words = b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do "
            for block in range(230 * MIB // (100 * 10_000)):
                out.write(
                    b"".join(
                        b"<w:r><w:t>%s%010d </w:t></w:r>" % (words[: 26 + i % 37], block * i)
                        for i in range(10_000)
                    )
                )
            out.write(b"</w:p><w:p><w:r><w:t>after</w:t></w:r></w:p>")

        _docx_stream(base / "paragraph230.docx", runs)
        _docx_stream(
            base / "liar400.docx",
            lambda out: [
                out.write(b"<w:p><w:r><w:t>"),
                *[out.write(b"a" * MIB) for _ in range(400)],
                out.write(b"</w:t></w:r></w:p>"),
            ],
            pad=8 * MIB,
        )
        with open(base / "paragraph300.html", "wb") as out:
            out.write(b"<html><body><p>")
            for _ in range(300):
                out.write(b"words of one paragraph " * (MIB // 23))
            out.write(b"</p><p>after</p></body></html>")
        para = b"<w:p><w:r><w:t>p</w:t></w:r></w:p>"
        _docx_stream(
            base / "paragraphs7m.docx",
            lambda out: [out.write(para * 100_000) for _ in range(70)],
        )
    if want("archives"):
        with open(base / "bomb.tar.bz2", "wb") as out:
            comp = bz2.BZ2Compressor(9)
            header = io.BytesIO()
            import tarfile

            info = tarfile.TarInfo("zeros.bin")
            info.size = 3 * 1024**3  # about what a 3 KB bzip2 stream of zeros holds
            header.write(info.tobuf(format=tarfile.GNU_FORMAT))
            out.write(comp.compress(header.getvalue()))
            zeros = b"\0" * (64 * MIB)
            for _ in range(info.size // len(zeros)):
                out.write(comp.compress(zeros))
            out.write(comp.flush())
        with open(base / "claims1.zip", "wb") as out:
            count = 5_000_000
            central = io.BytesIO()
            for i in range(count):
                name = b"f%07d" % i
                central.write(
                    struct.pack(
                        "<4sHHHHHHLLLHHHHHLL",
                        b"PK\x01\x02",
                        20,
                        20,
                        0,
                        0,
                        0,
                        0x5821,
                        0,
                        0,
                        0,
                        len(name),
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                    )
                    + name
                )
            cd = central.getvalue()
            # One real (empty) member first: the file starts as a zip does.
            local = struct.pack("<4sHHHHHLLLHH", b"PK\x03\x04", 20, 0, 0, 0, 0x5821, 0, 0, 0, 8, 0)
            out.write(local + b"f0000000")
            out.write(cd)
            out.write(
                struct.pack("<4sHHHHLLH", b"PK\x05\x06", 0, 0, 1, 1, len(cd), len(local) + 8, 0)
            )
        liar = base / "liar.zip"
        with (
            zipfile.ZipFile(liar, "w", zipfile.ZIP_DEFLATED) as z,
            z.open("zeros.bin", "w", force_zip64=True) as out,
        ):
            for _ in range(2048):
                out.write(b"\0" * MIB)
        _pad_member(liar, "zeros.bin", 8 * MIB)
        (base / "zeroblock.gz").write_bytes(gzip.compress(b"\0" * 512 + b"data\n" * 1000))
    if want("tables"):
        sparse = officegen.xlsx({"S": [["a", "b"], [1, 2]]})
        _rewrite_sheet(
            sparse,
            base / "sparse.xlsx",
            lambda xml: xml.replace(
                b"</sheetData>",
                b'<row r="1048576"><c r="XFD1048576"><v>1</v></c></row></sheetData>',
            ),
        )
        _strings_bomb(base / "strings.xlsx")
        _rewrite_sheet(
            sparse,
            base / "giantcell.xlsx",
            lambda xml: xml.replace(
                b"</sheetData>",
                b'<row r="3"><c r="A3" t="inlineStr"><is><t>'
                + b"x" * (300 * MIB)
                + b"</t></is></c></row></sheetData>",
            ),
        )
        with open(base / "wide.csv", "w") as out:
            row = ",".join(f"c{i}" + "v" * 100 for i in range(100_000))
            out.write(row + "\n" + row + "\n")
        with open(base / "giantcell.csv", "w") as out:
            out.write("a,b\n1,")
            for _ in range(300):
                out.write("x" * MIB)
            out.write("\n2,y\n")
        # A footer of lists of booleans: each claims as many as the footer has bytes.
        inner = b"\xf1" + _varint(200_000)
        footer = b"\x19\xf9" + _varint(200_000) + inner * 200_000
        (base / "bools.parquet").write_bytes(
            b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1"
        )
        (base / "junk.parquet").write_bytes(b"PAR1" + os.urandom(1 << 20) + b"PAR1")
    if want("file_list"):
        folder = base / "names"
        folder.mkdir(exist_ok=True)
        for i in range(2000):
            (folder / ("a" * 200 + str(i))).write_text("x")
        (folder / ".gitignore").write_text(
            "\n".join("*a*a*a*a*a*a*a*a*a*a*a*a*" + str(i) + "*b" for i in range(10_000))
        )
    if want("ingest"):
        folder = base / "logs"
        folder.mkdir(exist_ok=True)
        fifo = folder / "fifo.jsonl"
        if not fifo.exists():
            os.mkfifo(fifo)
        for name, target in (("zero.jsonl", "/dev/zero"), ("random.jsonl", "/dev/urandom")):
            if not (folder / name).is_symlink():
                (folder / name).symlink_to(target)
        (folder / "ok.jsonl").write_text(
            json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n"
        )
    if want("migrations"):
        _old_store(base / "store", 200 * MIB)


def _varint(n: int) -> bytes:
    out = b""
    while n > 0x7F:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _rewrite_sheet(data: bytes, path: Path, edit: Callable[[bytes], bytes]) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                body = edit(body)
            dst.writestr(info.filename, body, zipfile.ZIP_DEFLATED)


def _strings_bomb(path: Path) -> None:
    """1.6M rows, each naming shared string 0; 1M shared strings of 700 chars (700 MB)."""
    from tests import officegen

    base = officegen.xlsx({"S": [["s"]]})
    with (
        zipfile.ZipFile(io.BytesIO(base)) as src,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            if info.filename == "xl/worksheets/sheet1.xml":
                with dst.open(info.filename, "w", force_zip64=True) as out:
                    out.write(f'<worksheet xmlns="{officegen._MAIN}"><sheetData>'.encode())
                    for r in range(1, 1_600_001, 10_000):
                        out.write(
                            "".join(
                                f'<row r="{n}"><c r="A{n}" t="s"><v>0</v></c></row>'
                                for n in range(r, r + 10_000)
                            ).encode()
                        )
                    out.write(b"</sheetData></worksheet>")
            elif info.filename == "xl/sharedStrings.xml":
                with dst.open(info.filename, "w", force_zip64=True) as out:
                    out.write(f'<sst xmlns="{officegen._MAIN}">'.encode())
                    item = b"<si><t>" + b"s" * 700 + b"</t></si>"
                    for _ in range(100):
                        out.write(item * 10_000)
                    out.write(b"</sst>")
            else:
                dst.writestr(info, src.read(info))


def _old_store(home: Path, body_bytes: int) -> None:
    """A store at the schema version before the sizes backfill, holding ``body_bytes`` of
    message bodies."""
    import sqlite3

    from tests.index.test_store_migrations import store_at

    shutil.rmtree(home, ignore_errors=True)  # a kept one was migrated by the last run
    path = store_at(home, 3)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    db.execute("INSERT INTO conversations(id, source, format) VALUES ('big', NULL, NULL)")
    text = "x" * 20_000
    db.executemany(
        "INSERT INTO messages(conversation_id, seq, id, role, body) "
        "VALUES ('big', ?, ?, 'user', ?)",
        (
            (n, f"b{n}", json.dumps({"role": "user", "id": f"b{n}", "content": text}))
            for n in range(body_bytes // len(text))
        ),
    )
    db.execute("COMMIT")
    db.close()


# --- attacks (each runs in its own child) -----------------------------------------------


def _ws(base: Path) -> Any:
    from leanreplay.index import Workspace

    return Workspace(tempfile.mkdtemp(dir=base), [str(base)])


def _answer(call: Callable[[], Any]) -> str:
    try:
        out = call()
    except Exception as exc:  # noqa: BLE001 - the attack's answer: what the library said
        return f"{type(exc).__name__}: {str(exc)[:160]}"
    text = json.dumps(out, default=str)
    return f"answered {len(text):,} chars; notes: {json.dumps(out.get('notes', []))[:200]}"


def attack(name: str, base: Path) -> list[str]:
    ws = _ws(base) if name not in ("gateway_hostile", "migration_200mb") else None
    p = str(base)
    if name == "docx_paragraph_230mb_doc_read":
        return [_answer(lambda: ws.doc_read(f"{p}/paragraph230.docx", part="1-2"))]
    if name == "docx_paragraph_230mb_doc_search":
        return [_answer(lambda: ws.doc_search(f"{p}/paragraph230.docx", "after"))]
    if name == "docx_member_lying_400mb":
        return [_answer(lambda: ws.doc_read(f"{p}/liar400.docx", part="1"))]
    if name == "html_paragraph_300mb":
        return [_answer(lambda: ws.doc_read(f"{p}/paragraph300.html", part="1-2"))]
    if name == "docx_7m_paragraphs_doc_search":
        return [_answer(lambda: ws.doc_search(f"{p}/paragraphs7m.docx", "p"))]
    if name == "tar_bz2_bomb_3kb":
        return [
            _answer(lambda: ws.archive_list(f"{p}/bomb.tar.bz2")),
            _answer(lambda: ws.file_read(f"{p}/bomb.tar.bz2", member="zeros.bin")),
        ]
    if name == "zip_claims_1_holds_5m":
        from leanreplay.cards import card_for

        return [
            _answer(lambda: {"notes": card_for(f"{p}/claims1.zip").warnings}),
            _answer(lambda: ws.archive_list(f"{p}/claims1.zip", prefix="f4999999")),
        ]
    if name == "zip_member_lying_2gb":
        return [_answer(lambda: ws.file_read(f"{p}/liar.zip", member="zeros.bin"))]
    if name == "gzip_zero_block":
        return [_answer(lambda: ws.archive_list(f"{p}/zeroblock.gz"))]
    if name == "xlsx_sparse_huge_range":
        return [
            _answer(lambda: ws.table_read(f"{p}/sparse.xlsx")),
            _answer(lambda: ws.table_query(f"{p}/sparse.xlsx", "SELECT count(*) FROM t")),
        ]
    if name == "xlsx_shared_strings_bomb":
        return [_answer(lambda: ws.table_read(f"{p}/strings.xlsx"))]
    if name == "csv_wide_row_11m":
        return [
            _answer(lambda: ws.table_read(f"{p}/wide.csv")),
            _answer(lambda: ws.table_query(f"{p}/wide.csv", "SELECT * FROM t")),
        ]
    if name == "csv_giant_cell_300mb":
        return [_answer(lambda: ws.table_query(f"{p}/giantcell.csv", "SELECT * FROM t"))]
    if name == "xlsx_giant_cell_300mb":
        return [
            _answer(lambda: ws.table_read(f"{p}/giantcell.xlsx")),
            _answer(lambda: ws.table_query(f"{p}/giantcell.xlsx", "SELECT * FROM t")),
        ]
    if name == "parquet_footer_bool_lists":
        from leanreplay.cards import card_for

        return [_answer(lambda: {"notes": card_for(f"{p}/bools.parquet").warnings})]
    if name == "parquet_junk":
        return [_answer(lambda: ws.table_read(f"{p}/junk.parquet"))]
    if name == "file_list_backtracking_patterns":
        return [
            _answer(
                lambda: ws.file_list(f"{p}/names", pattern="**a**a**a**a**a**a**a**a**a**a**a**ab")
            ),
            _answer(lambda: ws.file_list(f"{p}/names", pattern="*a*a*a*a*a*a*a*a*a*a*a*a*b")),
        ]
    if name == "ingest_fifo_and_devices":
        return [_answer(lambda: ws.ingest(f"{p}/logs"))]
    if name == "view_hostile_params":
        return _view_attack(ws)
    if name == "gateway_hostile":
        return _gateway_attack(base)
    if name == "migration_200mb":
        from leanreplay.index import Workspace

        with Workspace(base / "store") as opened:
            return [f"migrated; {len(opened.conversations())} conversation(s)"]
    raise SystemExit(f"no attack {name}")


def _view_attack(ws: Any) -> list[str]:
    from starlette.testclient import TestClient

    from leanreplay.index.faces._net import HttpPolicy
    from leanreplay.index.faces.view import build_app

    for i in range(500):
        ws.append(f"c{i}", {"role": "user", "content": "hello " * 50})
    app = build_app(ws, token="t" * 32, port=8000, policy=HttpPolicy.for_bind("127.0.0.1", 8000))
    client = TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False)
    client.cookies.set("leanreplay_view_8000", "t" * 32)
    out = []
    for url in (
        "/c?id=conv\"'><img src=x onerror=alert(1)>",
        "/api/replay_stats?id=conv\"'><img>",
        "/?sort=replay",
        "/c?id=c1&before=99999999999999999999999",
    ):
        out.append(f"{url} -> {client.get(url, follow_redirects=False).status_code}")
    from tests.test_view_params import _raw_get  # the path exactly as a client sent it

    status, headers = _raw_get(app, "//evil.example/", f"token={'t' * 32}&id=c1")
    out.append(f"token hand-off at //evil.example/ -> {status} to {headers.get(b'location')!r}")
    return out


def _gateway_attack(base: Path) -> list[str]:
    import anyio
    from mcp import Client

    from leanreplay.index import Workspace
    from leanreplay.index.faces.gateway import UpstreamSpec, gateway

    hostile = str(REPO / "tests" / "fixtures" / "hostile_upstream.py")

    def up(name: str, *args: str) -> UpstreamSpec:
        return UpstreamSpec(name, sys.executable, (hostile, *args))

    specs = [
        up("silent", "silent"),
        up("unlisted", "unlisted"),
        up("many", "many", "10000"),
        up("giant", "giant", str(64 * MIB)),
        up("nested", "nested", "100000"),
        up("garbage", "garbage"),
    ]

    async def main() -> list[str]:
        out = []
        with Workspace(base / "gwhome") as ws:
            started = time.monotonic()
            async with gateway(ws, specs) as server, Client(server) as client:
                out.append(f"initialize after {time.monotonic() - started:.1f}s")
                works = [c.name for c in ws.capabilities.capabilities if "work" in c.name]
                for name in works:
                    await client.call_tool("tool_activate", {"names": [name]})
                    t = time.monotonic()
                    result = await client.call_tool(name, {})
                    text = "".join(c.text for c in result.content if c.type == "text")
                    out.append(f"{name}: {time.monotonic() - t:.1f}s, {text[:100]}")
        return out

    return anyio.run(main)


ATTACKS = {
    "documents": [
        "docx_paragraph_230mb_doc_read",
        "docx_paragraph_230mb_doc_search",
        "docx_member_lying_400mb",
        "html_paragraph_300mb",
        "docx_7m_paragraphs_doc_search",
    ],
    "archives": [
        "tar_bz2_bomb_3kb",
        "zip_claims_1_holds_5m",
        "zip_member_lying_2gb",
        "gzip_zero_block",
    ],
    "tables": [
        "xlsx_sparse_huge_range",
        "xlsx_shared_strings_bomb",
        "csv_wide_row_11m",
        "csv_giant_cell_300mb",
        "xlsx_giant_cell_300mb",
        "parquet_footer_bool_lists",
        "parquet_junk",
    ],
    "file_list": ["file_list_backtracking_patterns"],
    "gateway": ["gateway_hostile"],
    "view": ["view_hostile_params"],
    "ingest": ["ingest_fifo_and_devices"],
    "migrations": ["migration_200mb"],
}


def _memory(pid: int) -> tuple[int, int]:
    """(resident, peak resident) bytes of a live process; (0, 0) once it is gone. The peak is
    the kernel's high-water mark of the interpreter's own address space (a fork's rusage
    would count the parent's pages it started with)."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def run_child(name: str, base: Path) -> dict[str, Any]:
    """One attack in a fresh interpreter (its own session), killed past the limits."""
    out_file = base / f"{name}.out"
    out_file.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--attack", name, str(base), str(out_file)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    killed = None
    peak = 0
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss, hwm = _memory(proc.pid)
        peak = max(peak, hwm, rss)
        if time.monotonic() - started > LIMIT_S:
            killed = f"over {LIMIT_S:.0f} s"
        elif rss > LIMIT_RSS:
            killed = "over 2 GiB resident"
        if killed:
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, _ = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    proc.returncode = status  # reaped by wait4
    wall = time.monotonic() - started
    stderr = proc.stderr.read().decode("utf-8", "replace")[-300:] if proc.stderr else ""
    answers = json.loads(out_file.read_text()) if out_file.exists() else None
    return {
        "attack": name,
        "wall_s": round(wall, 2),
        "peak_rss_mib": round(peak / MIB),
        "killed": killed,
        "exit": os.waitstatus_to_exitcode(status),
        "answers": answers if answers is not None else stderr,
    }


def main() -> None:
    if sys.argv[1:2] == ["--attack"]:
        name, base, out_file = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
        Path(out_file).write_text(json.dumps(attack(name, base)))
        return
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    base = Path(tempfile.gettempdir()) / "leanreplay-bench-hostile"
    base.mkdir(exist_ok=True)
    load_before = [round(x, 2) for x in os.getloadavg()]
    made = time.monotonic()
    make_inputs(base, only)
    inputs_s = round(time.monotonic() - made, 1)
    rows = []
    for surface, names in ATTACKS.items():
        if only not in (None, surface):
            continue
        for name in names:
            row = run_child(name, base)
            row["surface"] = surface
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    worst = {}
    for surface in ATTACKS:
        mine = [r for r in rows if r["surface"] == surface]
        if mine:
            top = max(mine, key=lambda r: (r["killed"] is not None, r["wall_s"]))
            mem = max(mine, key=lambda r: r["peak_rss_mib"])
            worst[surface] = {
                "attacks": len(mine),
                "slowest": top["attack"],
                "slowest_s": top["wall_s"],
                "most_memory": mem["attack"],
                "peak_rss_mib": mem["peak_rss_mib"],
                "over_a_limit": [r["attack"] for r in mine if r["killed"]],
            }
    print(
        json.dumps(
            {
                "limits": {"seconds": LIMIT_S, "rss_mib": LIMIT_RSS // MIB},
                "inputs_written_s": inputs_s,
                "worst_per_surface": worst,
                "attacks": rows,
                "load_before": load_before,
                "load_after": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )
    if "--keep" not in sys.argv:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
