"""file_read and file_search: numbering, bounds, long lines, the persisted line index."""

from __future__ import annotations

import os
from pathlib import Path

import magic
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from leanreplay.index import InvalidArgumentError, Workspace, WrongFileTypeError
from leanreplay.index._limits import MAX_ANSWER_CHARS
from leanreplay.index.tools._lines import (
    BLOCK,
    MAX_LINE_CHARS,
    MAX_READ_LINES,
    MAX_TAIL_SCAN_BYTES,
    LineIndex,
)
from leanreplay.index.tools._paths import open_confined
from tests.conftest import SAMPLES


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    return Workspace(tmp_path / "home", [root])


@pytest.fixture(scope="module")
def one_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """One workspace for the examples of a property (a fresh store per example is slow)."""
    base = tmp_path_factory.mktemp("files")
    (base / "root").mkdir()
    return Workspace(base / "home", [base / "root"])


def write(ws: Workspace, name: str, data: bytes) -> str:
    path = Path(ws.roots[0]) / name
    path.write_bytes(data)
    return name


def numbered(lines: list[str], first: int = 1) -> str:
    return "\n".join(f"{i}\t{line}" for i, line in enumerate(lines, start=first))


def test_default_read_is_2000_numbered_lines_with_a_next_call(ws: Workspace) -> None:
    lines = [f"line {i}" for i in range(1, 5001)]
    name = write(ws, "a.txt", ("\n".join(lines) + "\n").encode())
    result = ws.file_read(name)
    assert result["content"] == numbered(lines[:MAX_READ_LINES])
    assert result["end_line"] == MAX_READ_LINES
    assert result["next"] == f'file_read(path="{Path(ws.roots[0]) / name}", start_line=2001)'
    tail = ws.file_read(name, start_line=4990)
    assert tail["content"] == numbered(lines[4989:], 4990)
    assert tail["next"] is None
    assert tail["total_lines"] == 5000


def test_ranges_crlf_and_a_last_line_without_newline(ws: Workspace) -> None:
    name = write(ws, "crlf.txt", b"one\r\ntwo\r\nthree")
    assert ws.file_read(name, start_line=2, end_line=3)["content"] == "2\ttwo\n3\tthree"
    assert ws.file_read(name)["total_lines"] == 3


def test_invalid_utf8_is_replaced_not_fatal(ws: Workspace) -> None:
    name = write(ws, "bad.txt", b"ok\n\xff\xfe broken \xc3\n")
    assert ws.file_read(name)["content"] == "1\tok\n2\t\ufffd\ufffd broken \ufffd"


def test_start_past_the_end_says_how_many_lines(ws: Workspace) -> None:
    name = write(ws, "s.txt", b"a\nb\n")
    with pytest.raises(
        InvalidArgumentError, match="start_line 3 is past the end: the file has 2 lines"
    ):
        ws.file_read(name, start_line=3)
    with pytest.raises(InvalidArgumentError, match="end_line 1 is before start_line 2"):
        ws.file_read(name, start_line=2, end_line=1)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"start_line": 0}, "start_line is 1-based"),
        ({"start_line": -5000}, "start_line: Input should be greater than or equal to -2000"),
        ({"start_line": True}, "start_line: Input should be a valid integer"),
        ({"start_line": "5"}, "start_line: Input should be a valid integer"),
        ({"end_line": -2}, "end_line"),
    ],
    ids=["zero", "below-tail-bound", "bool", "string", "negative"],
)
def test_bad_arguments_are_explained(ws: Workspace, args: dict[str, object], match: str) -> None:
    name = write(ws, "s.txt", b"a\n")
    with pytest.raises(InvalidArgumentError, match=match):
        ws.call("file_read", {"path": name, **args})


def test_output_is_bounded_in_chars(ws: Workspace) -> None:
    line = "x" * 1000
    name = write(ws, "wide.txt", ((line + "\n") * 100).encode())
    result = ws.file_read(name)
    assert len(result["content"]) < MAX_ANSWER_CHARS + 2000
    assert result["end_line"] == MAX_ANSWER_CHARS // 1000
    assert any("stopped at" in n for n in result["notes"])
    assert result["next"].endswith(f"start_line={result['end_line'] + 1})")


def test_over_long_line_is_cut_with_a_note(ws: Workspace) -> None:
    long = "y" * (MAX_LINE_CHARS + 500)
    name = write(ws, "long.txt", f"short\n{long}\nafter\n".encode())
    result = ws.file_read(name)
    lines = result["content"].split("\n")
    assert lines[0] == "1\tshort"
    assert lines[1] == f"2\t{'y' * MAX_LINE_CHARS} [... line cut]"
    assert lines[2] == "3\tafter"
    assert any("line 2" in n for n in result["notes"])


def test_file_with_no_newline_at_all_is_read_bounded(ws: Workspace) -> None:
    path = Path(ws.roots[0]) / "blob.txt"
    with path.open("wb") as f:
        for _ in range(24):  # 24 MiB in one line
            f.write(b"z" * (1024 * 1024))
    result = ws.file_read("blob.txt")
    assert result["content"] == f"1\t{'z' * MAX_LINE_CHARS} [... line cut]"
    assert result["end_line"] == 1
    assert result["total_lines"] == 1
    assert result["next"] is None
    assert any("25,165,824 bytes" in n for n in result["notes"])


def test_index_is_persisted_and_reused_by_a_new_workspace(ws: Workspace) -> None:
    lines = [f"row {i}" for i in range(200_000)]
    name = write(ws, "big.txt", ("\n".join(lines) + "\n").encode())
    assert ws.file_read(name, start_line=190_000, end_line=190_001)["content"] == numbered(
        lines[189_999:190_001], 190_000
    )
    cache = Path(ws.home) / "lines"
    assert len(list(cache.glob("*.lines"))) == 1
    with Workspace(ws.home, ws.roots) as again, open_confined(name, again.roots) as f:
        index = LineIndex(f, str(cache))
        assert len(index.counts) == f.size // BLOCK, (
            "the second process starts from the saved index"
        )
        assert index._tail is not None, "the last partial block's count was saved too"
        assert index.total_newlines() == 200_000


def test_index_of_a_grown_log_resumes_and_of_a_rewritten_file_restarts(ws: Workspace) -> None:
    path = Path(ws.roots[0]) / "log.txt"
    first = [f"a{i:07d}" for i in range(150_000)]
    path.write_text("\n".join(first) + "\n")
    assert ws.file_read("log.txt", start_line=150_000)["content"] == f"150000\t{first[-1]}"
    more = [f"b{i:07d}" for i in range(50_000)]
    with path.open("a") as f:
        f.write("\n".join(more) + "\n")
    assert ws.file_read("log.txt", start_line=199_999, end_line=200_000)["content"] == numbered(
        more[-2:], 199_999
    )
    path.write_text("\n".join(["c"] * 10) + "\n")  # rewritten, shorter
    assert ws.file_read("log.txt")["total_lines"] == 10


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=30),
        min_size=1,
        max_size=60,
    ),
    start=st.integers(1, 70),
    span=st.integers(0, 20),
)
def test_reads_match_splitlines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], start: int, span: int
) -> None:
    root = tmp_path_factory.mktemp("r")
    (root / "f.txt").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    with Workspace(root / "home", [root]) as w:
        text = (root / "f.txt").read_bytes().decode("utf-8", "replace").split("\n")[:-1]
        if start > len(text):
            with pytest.raises(InvalidArgumentError, match="past the end"):
                w.file_read("f.txt", start_line=start)
            return
        result = w.file_read("f.txt", start_line=start, end_line=start + span)
        assert result["content"] == numbered(text[start - 1 : start + span], start)


def test_search_finds_lines_with_numbers(ws: Workspace) -> None:
    lines = [f"{'ERROR disk full' if i % 97 == 0 else 'INFO ok'} #{i}" for i in range(1, 20_001)]
    name = write(ws, "log.txt", ("\n".join(lines) + "\n").encode())
    result = ws.file_search(name, "ERROR", limit=500)
    expected = [i for i, line in enumerate(lines, start=1) if "ERROR" in line]
    assert [h["line"] for h in result["hits"]] == expected
    assert result["hits"][0]["text"] == lines[expected[0] - 1]
    assert result["next"] is None


def test_search_limit_gives_a_next_call_and_ignore_case(ws: Workspace) -> None:
    name = write(ws, "log.txt", b"".join(b"Alpha %d\n" % i for i in range(100)))
    result = ws.file_search(name, "alpha", limit=10, ignore_case=True)
    assert [h["line"] for h in result["hits"]] == list(range(1, 11))
    assert "start_line=11" in result["next"]
    assert ws.file_search(name, "alpha")["hits"] == []
    later = ws.file_search(name, "Alpha", start_line=95)
    assert [h["line"] for h in later["hits"]] == list(range(95, 101))


def test_search_across_chunk_boundaries_counts_lines_right(ws: Workspace) -> None:
    line = b"x" * 99 + b"\n"
    data = line * 700_000  # 70 MB: several scan chunks
    data = data[:-100] + b"needle at the very end\n"
    name = write(ws, "huge.txt", data)
    hits = ws.file_search(name, "needle")["hits"]
    assert hits == [{"line": 700_000, "text": "needle at the very end"}]


@pytest.mark.parametrize("query", ["", "x" * 1001], ids=["empty", "too-long"])
def test_search_query_bounds(ws: Workspace, query: str) -> None:
    name = write(ws, "s.txt", b"a\n")
    with pytest.raises(InvalidArgumentError, match="query"):
        ws.call("file_search", {"path": name, "query": query})


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"], ids=str)
def test_utf16_files_read_through_a_utf8_copy(ws: Workspace, encoding: str) -> None:
    bom = "\ufeff".encode(encoding)
    lines = [f"ردیف {i} — naïve café 😀" for i in range(1, 3001)]
    name = write(ws, "ps.txt", bom + "\r\n".join(lines).encode(encoding) + "\r\n".encode(encoding))
    result = ws.file_read(name, start_line=2999)
    assert result["content"] == numbered(lines[2998:], 2999)
    assert result["path"] == str(Path(ws.roots[0]) / name)
    assert result["total_lines"] == 3000
    first = ws.file_read(name)
    assert first["next"] == (
        f'file_read(path="{Path(ws.roots[0]) / name}", start_line={first["end_line"] + 1})'
    )
    hits = ws.file_search(name, "ردیف 2500 ")["hits"]
    assert hits == [{"line": 2500, "text": lines[2499]}]
    assert ws.file_search(name, "CAFÉ", ignore_case=True)["hits"] == []  # ASCII-only folding
    assert len(ws.file_search(name, "café", limit=5)["hits"]) == 5


def test_a_changed_utf16_file_gets_a_fresh_copy(ws: Workspace) -> None:
    path = Path(ws.roots[0]) / "w.txt"
    path.write_bytes("\ufeffold line\n".encode("utf-16-le"))
    assert ws.file_read("w.txt")["content"] == "1\told line"
    path.write_bytes("\ufeffnew line one\nnew line two\n".encode("utf-16-le"))
    assert ws.file_read("w.txt")["content"] == "1\tnew line one\n2\tnew line two"
    copies = list((Path(ws.home) / "transcoded").glob("*.txt"))
    assert len(copies) == 1, "the stale copy was removed"


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab \r", max_size=5), max_size=30),
    final_newline=st.booleans(),
    count=st.integers(min_value=1, max_value=40),
)
def test_negative_start_reads_the_last_lines_like_splitlines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], final_newline: bool, count: int
) -> None:
    base = tmp_path_factory.mktemp("tail")
    ws = Workspace(base / "home", [base])
    body = "\n".join(lines) + ("\n" if final_newline and lines else "")
    (base / "t.txt").write_bytes(body.encode())
    result = ws.file_read("t.txt", start_line=-count)
    # The oracle: an editor's lines (a final newline ends the last line), \r\n as one break.
    expected = body.split("\n")
    if body.endswith("\n") or not body:
        expected = expected[:-1]
    every = [e.removesuffix("\r") for e in expected]
    expected = every[-count:]
    got = [row.split("\t", 1)[1] for row in result["content"].split("\n")] if expected else []
    assert got == expected
    if expected:
        numbers = [int(row.split("\t", 1)[0]) for row in result["content"].split("\n")]
        # A file within one index block has its total counted at once: exact numbers.
        assert numbers == list(range(len(every) - len(expected) + 1, len(every) + 1))


@settings(max_examples=60, deadline=None)
@given(
    body=st.lists(
        st.sampled_from([b"a", b"\n", b"\r", b"\xe2\x82", b"\xac", b"\xff", "é".encode()]),
        min_size=1,
        max_size=40,
    ).map(lambda parts: b"log " + b"".join(parts)),  # a head libmagic takes for text
    count=st.integers(min_value=1, max_value=30),
)
def test_tail_decodes_each_line_as_it_would_alone(
    one_ws: Workspace, body: bytes, count: int
) -> None:
    # Broken UTF-8 beside newlines: the tail and a forward read show the same text per line.
    ws = one_ws
    (Path(ws.roots[0]) / "t.txt").write_bytes(body)
    raws = body.split(b"\n")
    if body.endswith(b"\n"):
        raws = raws[:-1]
    expected = [r.removesuffix(b"\r").decode("utf-8", "replace") for r in raws][-count:]
    tail = ws.file_read("t.txt", start_line=-count)
    assert [row.split("\t", 1)[1] for row in tail["content"].split("\n")] == expected
    forward = ws.file_read("t.txt", start_line=len(raws) - len(expected) + 1)
    assert forward["content"] == tail["content"]


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=1900), min_size=1, max_size=60),
    count=st.integers(min_value=1, max_value=60),
)
def test_tail_of_lines_longer_than_the_first_read_guesses(
    one_ws: Workspace, lengths: list[int], count: int
) -> None:
    # The first backward read is sized for count lines of ~160 bytes, later ones grow to
    # 64 KiB: lines up to 1,900 bytes end in any read, and the tail is the same.
    lines = [f"{i}:" + "y" * n for i, n in enumerate(lengths)]
    # Within the answer's budget (a longer answer is cut, and says so elsewhere).
    assume(sum(len(line) + 6 for line in lines[-count:]) < MAX_ANSWER_CHARS - 2_000)
    (Path(one_ws.roots[0]) / "long.log").write_text("\n".join(lines) + "\n")
    tail = one_ws.file_read("long.log", start_line=-count)
    assert [row.split("\t", 1)[1] for row in tail["content"].split("\n")] == lines[-count:]


def test_tail_reads_back_no_further_than_its_cap(ws: Workspace) -> None:
    # One 20 MiB line of 8-digit offsets/8: the tail shows the line from exactly
    # MAX_TAIL_SCAN_BYTES before its end (the reads' sizes grow, the last one is cut to the
    # cap), and says it was cut there.
    data = b"".join(b"%08d" % i for i in range(20 * 1024 * 1024 // 8)) + b"\n"
    name = write(ws, "one.log", data)
    tail = ws.file_read(name, start_line=-3)
    start = len(data) - 1 - MAX_TAIL_SCAN_BYTES
    assert tail["content"].split("\t", 1)[1][:80] == data[start : start + 80].decode()
    assert f"read the last {MAX_TAIL_SCAN_BYTES:,} bytes only" in tail["notes"][0]


def test_tail_is_numbered_exactly_once_the_index_knows_the_total(ws: Workspace) -> None:
    lines = [f"line {i} " + "." * 190 for i in range(1, 3001)]  # 600 KB: several blocks
    name = write(ws, "log.txt", ("\n".join(lines) + "\n").encode())
    cold = ws.file_read(name, start_line=-3)
    assert cold["content"] == numbered(lines[-3:], -3)
    assert cold["total_lines"] is None
    assert "last 3 lines" in cold["notes"][0]
    ws.file_read(name, start_line=2999)  # counts the blocks: the index learns the total
    warm = ws.file_read(name, start_line=-3)
    assert warm["total_lines"] == 3000
    assert warm["content"] == numbered(lines[-3:], 2998)


def test_tail_of_a_big_file_reads_only_its_end(ws: Workspace) -> None:
    line = b"x" * 99 + b"\n"
    name = write(ws, "big.log", line * (40 * BLOCK // 100) + b"the end\n")
    result = ws.file_read(name, start_line=-2)
    assert result["content"] == f"-2\t{'x' * 99}\n-1\tthe end"
    assert result["total_lines"] is None
    lines_dir = Path(ws.home) / "lines"
    assert not lines_dir.exists() or not any(lines_dir.iterdir())  # nothing was indexed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"start_line": 0}, "1-based"),
        ({"start_line": -5, "end_line": 9}, "end_line goes with a positive start_line"),
    ],
    ids=str,
)
def test_tail_argument_errors(ws: Workspace, args: dict[str, int], message: str) -> None:
    name = write(ws, "a.txt", b"a\nb\n")
    with pytest.raises(InvalidArgumentError, match=message):
        ws.file_read(name, **args)


def test_tail_char_budget_keeps_the_last_lines(ws: Workspace) -> None:
    rows = [f"{i:05d}" + "y" * 1500 for i in range(100)]
    name = write(ws, "wide.txt", ("\n".join(rows) + "\n").encode())
    result = ws.file_read(name, start_line=-100)
    shown = result["content"].split("\n")
    assert shown[-1].split("\t", 1)[1] == rows[-1]
    assert len(shown) < 100
    assert any("chars" in n for n in result["notes"])


@pytest.mark.parametrize(
    ("sample", "readers"),
    [
        ("red_64x48.png", "read it with image_view"),
        ("classic_xref.pdf", "read it with pdf_info, pdf_search, pdf_read"),
        ("bundle.zip", "read it with archive_list"),
        ("report.docx", "read it with doc_read, doc_search"),
        ("sales.parquet", "read it with table_read, table_query"),
        ("tone.wav", "no tool reads its content"),
    ],
)
def test_file_tools_refuse_known_binary_kinds_and_name_their_readers(
    tmp_path: Path, sample: str, readers: str
) -> None:
    ws = Workspace(tmp_path / "home", [SAMPLES])
    with pytest.raises(WrongFileTypeError, match=f"not text: {readers}"):
        ws.file_read(sample)
    with pytest.raises(WrongFileTypeError, match=f"not text: {readers}"):
        ws.file_search(sample, "x")


def test_a_log_whose_head_is_nul_bytes_is_still_read_as_text(ws: Workspace) -> None:
    # What a writer leaves after logrotate's copytruncate: a hole of NULs, then new lines.
    name = write(ws, "app.log", b"\0" * 8192 + b"\nrestarted\nserving\n")
    assert ws.file_read(name, start_line=2)["content"] == "2\trestarted\n3\tserving"


def test_libmagic_is_asked_once_per_head_not_once_per_read(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The regression of 3b23ac5: every read asked libmagic again (milliseconds on text).
    asked: list[int] = []
    real = magic.Magic.from_buffer

    def counting(self: magic.Magic, buffer: bytes | str) -> str:
        asked.append(len(buffer))
        return real(self, buffer)

    monkeypatch.setattr(magic.Magic, "from_buffer", counting)
    head = "".join(f"{os.urandom(8).hex()} request {i} served\n" for i in range(1000))
    name = write(ws, "fresh.log", head.encode())
    for start in (1, 500, -10):
        ws.file_read(name, start_line=start)
    ws.file_search(name, "served")
    assert len(asked) == 1
    # A log that grew past its head keeps the verdict; one whose head changed is asked again.
    with (Path(ws.roots[0]) / name).open("ab") as f:
        f.write(b"appended line\n" * 100)
    ws.file_read(name, start_line=-5)
    assert len(asked) == 1
    write(ws, name, b"rewritten " + head.encode())
    ws.file_read(name)
    assert len(asked) == 2
