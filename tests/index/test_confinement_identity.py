"""What open_confined hands back and how it fails once the file is open: the file's identity
(open_file, fingerprint, from the documented rule), the errors a caller meets while reading,
and the operator's view of the roots (resolve_roots, root_notices, no_roots_error)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from leanreplay.index import InvalidArgumentError, NotFoundError, OutsideRootsError, StoreError
from leanreplay.index._errors import not_a_file
from leanreplay.index.tools._paths import (
    MAX_PATH_CHARS,
    Roots,
    fingerprint,
    no_roots_error,
    open_confined,
    open_file,
    resolve_roots,
    root_notices,
)


def _expected_fingerprint(path: Path) -> str:
    """The rule in fingerprint's docstring, written out independently: size, mtime, ctime,
    device, inode and SHA-256 of the first and last 64 KiB."""
    st = path.stat()
    data = path.read_bytes()
    h = hashlib.sha256(
        f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_dev}:{st.st_ino}".encode()
    )
    h.update(data[: 64 * 1024])
    h.update(data[max(0, len(data) - 64 * 1024) :][: 64 * 1024])
    return h.hexdigest()[:32]


@pytest.mark.parametrize("size", [0, 10, 64 * 1024, 200_000], ids=str)
def test_open_confined_hands_back_the_file_and_its_identity(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(i % 251 for i in range(size)))
    st = path.stat()
    with open_confined("f.bin", [str(tmp_path)]) as f:
        assert (f.path, f.size, f.mtime_ns, f.ctime_ns, f.dev, f.ino) == (
            str(path),
            size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_dev,
            st.st_ino,
        )
        assert os.pread(f.fd, size + 1, 0) == path.read_bytes()
        assert open_file(f.fd, f.path) == f
        assert fingerprint(f) == _expected_fingerprint(path)
        fd = f.fd
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)  # closed on the way out


def test_the_fingerprint_changes_with_the_content_at_either_end(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 200_000)
    prints = set()
    for at in (0, 199_999):
        data = bytearray(b"a" * 200_000)
        data[at] = ord("b")
        path.write_bytes(data)
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, 0))  # same size and mtime every time
        with open_confined(str(path), [str(tmp_path)]) as f:
            prints.add(fingerprint(f))
            assert fingerprint(f) == _expected_fingerprint(path)
    assert len(prints) == 2


def _write_to_a_full_disk() -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        os.write(fd, b"x")  # ENOSPC, as a full disk under the home answers
    finally:
        os.close(fd)


def _raise_without_a_reason() -> None:
    raise OSError


@pytest.mark.parametrize(
    ("fail", "error", "message"),
    [
        (lambda: os.fstat(10_000), NotFoundError, "'f.txt' changed while it was read (Bad file"),
        (
            _write_to_a_full_disk,
            StoreError,
            "cannot write what this tool keeps in the home: the disk holding the home is full",
        ),
        (lambda: os.mkdir("/dev/null/sub"), StoreError, "a file stands where the home needs"),
        (_raise_without_a_reason, NotFoundError, "'f.txt' changed while it was read (replaced)"),
    ],
    ids=["changed", "disk-full", "file-for-folder", "no-reason"],
)
def test_errors_met_while_reading_name_the_file_or_the_home(
    tmp_path: Path, fail: Callable[[], object], error: type[Exception], message: str
) -> None:
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(error) as info, open_confined("f.txt", [str(tmp_path)]):
        fail()
    assert message in str(info.value)
    assert str(tmp_path) not in str(info.value)


def test_kind_names_each_file_type() -> None:
    def kind(mode: int) -> str:
        return str(not_a_file("'x'", mode, "the file tools read regular files"))

    assert kind(stat.S_IFDIR | 0o755) == "'x' is a directory; the file tools read regular files"
    assert kind(stat.S_IFIFO | 0o644) == "'x' is a FIFO; the file tools read regular files"
    assert kind(stat.S_IFSOCK | 0o644) == "'x' is a socket; the file tools read regular files"
    assert kind(stat.S_IFCHR | 0o644) == "'x' is a device; the file tools read regular files"
    assert kind(stat.S_IFBLK | 0o644) == "'x' is a device; the file tools read regular files"
    assert kind(stat.S_IFLNK | 0o777) == (
        "'x' is not a regular file; the file tools read regular files"
    )


def test_a_path_of_max_path_chars_is_looked_for_and_one_more_is_refused(tmp_path: Path) -> None:
    name = "x" * MAX_PATH_CHARS
    with pytest.raises(NotFoundError, match="in any root"), open_confined(name, [str(tmp_path)]):
        pass
    with (
        pytest.raises(InvalidArgumentError, match=f"is {MAX_PATH_CHARS + 1} characters"),
        open_confined(name + "x", [str(tmp_path)]),
    ):
        pass


def test_no_roots_is_refused_naming_the_roots_argument() -> None:
    error = no_roots_error()
    assert isinstance(error, OutsideRootsError)
    assert str(error) == (
        "no roots are configured, so the file tools read no folder; give the workspace "
        "roots (the folders they may read)"
    )
    assert error.names == ("roots",)
    with pytest.raises(OutsideRootsError) as info, open_confined("f.txt", []):
        pass
    assert (str(info.value), info.value.names) == (str(error), error.names)


def test_resolve_roots_resolves_links_and_refuses_what_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file.txt").write_text("x")
    assert resolve_roots([str(tmp_path / "link"), str(tmp_path)]) == (
        str(tmp_path / "real"),
        str(tmp_path),
    )
    for bad in ("file.txt", "missing"):
        with pytest.raises(InvalidArgumentError) as info:
            resolve_roots([str(tmp_path), str(tmp_path / bad)])
        assert str(info.value) == f"root {str(tmp_path / bad)!r} is not a directory"


def test_root_notices_say_what_the_operator_should_know(tmp_path: Path) -> None:
    with open("/proc/sys/fs/protected_hardlinks") as f:
        hardlinks_open = f.read().strip() == "0"
    hardlinks = ["fs.protected_hardlinks is 0: anyone who can write inside a root"]
    expected = hardlinks if hardlinks_open else []
    narrow = root_notices(Roots([str(tmp_path)]))
    assert [n[: len(e)] for n, e in zip(narrow, expected, strict=True)] == expected
    wide = root_notices(Roots([str(tmp_path), "/"]))
    expected = [
        "root '/' lets the file tools read every file this process can read; give narrower roots",
        *expected,
    ]
    assert [n[: len(e)] for n, e in zip(wide, expected, strict=True)] == expected


def _home_layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "root"
    home = root / ".home"
    attachments = home / "attachments"
    attachments.mkdir(parents=True)
    (home / "store.db").write_text("store")
    (attachments / "a.png").write_text("png")
    return root, home, attachments


def test_the_home_inside_a_root_is_refused_naming_the_path_given(tmp_path: Path) -> None:
    root, home, _ = _home_layout(tmp_path)
    roots = Roots([str(root)], private=[str(home)])
    with pytest.raises(OutsideRootsError) as info, open_confined(".home/store.db", roots):
        pass
    assert str(info.value) == (
        "'.home/store.db' is inside the leanreplay home, whose store and indexes the file "
        "tools never serve; read conversations with conversation_read"
    )


def test_the_attachments_gate_sees_the_real_and_the_given_path(tmp_path: Path) -> None:
    root, home, attachments = _home_layout(tmp_path)
    asked: list[tuple[str, str]] = []

    def gate(real: str, shown: str) -> None:
        asked.append((real, shown))
        if shown.endswith("refused.png"):
            raise OutsideRootsError(f"{shown!r} belongs to another conversation")

    (attachments / "refused.png").write_text("png")
    roots = Roots([str(root)], private=[str(home)], gates={str(attachments): gate})
    with open_confined(".home/attachments/a.png", roots) as f:
        assert os.pread(f.fd, 10, 0) == b"png"
    with (
        pytest.raises(OutsideRootsError, match="belongs to another conversation"),
        open_confined(".home/attachments/refused.png", roots),
    ):
        pass
    assert asked == [
        (str(attachments / "a.png"), ".home/attachments/a.png"),
        (str(attachments / "refused.png"), ".home/attachments/refused.png"),
    ]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda root: str(root / "gone.txt"),
            NotFoundError,
            "no file at {root}/gone.txt'; check the name",
        ),
        (
            lambda root: str(root / "f.txt" / "x"),
            NotFoundError,
            "no file at {root}/f.txt/x'; a parent is not a directory",
        ),
    ],
    ids=["missing", "parent-is-a-file"],
)
def test_the_walk_names_the_path_given(
    tmp_path: Path, make: Callable[[Path], str], error: type[Exception], message: str
) -> None:
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(error) as info, open_confined(make(tmp_path), [str(tmp_path)]):
        pass
    assert str(info.value) == message.format(root=repr(str(tmp_path))[:-1])


def test_a_relative_path_in_no_root_names_every_place_tried(tmp_path: Path) -> None:
    roots = [str(tmp_path / "a"), str(tmp_path / "b")]
    with pytest.raises(NotFoundError) as info, open_confined("x.txt", roots):
        pass
    tried = f"'{tmp_path}/a/x.txt', '{tmp_path}/b/x.txt'"
    assert str(info.value) == (
        f"no file 'x.txt' in any root; tried {tried}; check the name, or pass an absolute "
        "path inside a root"
    )


def test_a_root_removed_after_it_was_configured_says_so(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    roots = resolve_roots([str(root)])
    root.rmdir()
    with pytest.raises(NotFoundError) as info, open_confined(str(root / "f.txt"), roots):
        pass
    assert str(info.value) == f"root {str(root)!r} cannot be opened: No such file or directory"
