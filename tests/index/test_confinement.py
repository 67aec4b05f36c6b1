"""File tools read only regular files inside their roots, whatever the path tries."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index import (
    InvalidArgumentError,
    NotAFileError,
    NotFoundError,
    OutsideRootsError,
    PathError,
    Workspace,
)
from leanreplay.index.tools import _paths
from leanreplay.index.tools._paths import open_confined

SECRET = "top secret outside the root\n"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "data" / "allow"
    root.mkdir(parents=True)
    (root / "inside.txt").write_text("hello inside\nsecond line\n")
    (root / "sub").mkdir()
    (root / "sub" / "deep.txt").write_text("deep\n")
    sibling = tmp_path / "data" / "allow_secret"
    sibling.mkdir()
    (sibling / "secret.txt").write_text(SECRET)
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    return {"root": root, "sibling": sibling, "outside": outside, "home": tmp_path / "home"}


def ws_for(layout: dict[str, Path]) -> Workspace:
    return Workspace(layout["home"], [layout["root"]])


def test_reads_inside_by_relative_and_absolute_path(layout: dict[str, Path]) -> None:
    with ws_for(layout) as ws:
        assert ws.file_read("inside.txt")["content"] == "1\thello inside\n2\tsecond line"
        assert ws.file_read(str(layout["root"] / "sub" / "deep.txt"))["content"] == "1\tdeep"
        assert ws.file_read("sub/../inside.txt")["end_line"] == 2


def test_relative_paths_ignore_the_working_directory(
    layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(layout["outside"].parent)
    with (
        ws_for(layout) as ws,
        pytest.raises(NotFoundError, match="no file 'outside.txt' in any root; tried"),
    ):
        ws.file_read("outside.txt")


@pytest.mark.parametrize(
    "make_path",
    [
        lambda paths: "../allow_secret/secret.txt",
        lambda paths: "../../outside.txt",
        lambda paths: str(paths["outside"]),
        lambda paths: str(paths["sibling"] / "secret.txt"),
        lambda paths: "/etc/passwd",
        lambda paths: "/proc/self/environ",
        lambda paths: "sub/../../allow_secret/secret.txt",
    ],
    ids=[
        "dotdot-sibling",
        "dotdot-outside",
        "absolute-outside",
        "prefix-sibling",
        "etc-passwd",
        "proc-environ",
        "nested-dotdot",
    ],
)
def test_paths_outside_the_roots_are_refused(layout: dict[str, Path], make_path: object) -> None:
    path = make_path(layout)  # type: ignore[operator]
    with ws_for(layout) as ws:
        for tool, extra in (
            ("file_read", {}),
            ("file_search", {"query": "secret"}),
            ("pdf_info", {}),
            ("image_view", {}),
        ):
            with pytest.raises(OutsideRootsError, match="outside the allowed roots") as info:
                ws.call(tool, {"path": path, **extra})
            assert SECRET.strip() not in str(info.value)


def test_symlink_out_of_the_root_is_refused(layout: dict[str, Path]) -> None:
    (layout["root"] / "escape.txt").symlink_to(layout["outside"])
    (layout["root"] / "escape_dir").symlink_to(layout["sibling"])
    with ws_for(layout) as ws:
        with pytest.raises(OutsideRootsError):
            ws.file_read("escape.txt")
        with pytest.raises(OutsideRootsError):
            ws.file_read("escape_dir/secret.txt")


def test_symlink_inside_the_root_is_followed(layout: dict[str, Path]) -> None:
    (layout["root"] / "alias.txt").symlink_to(layout["root"] / "sub" / "deep.txt")
    with ws_for(layout) as ws:
        result = ws.file_read("alias.txt")
        assert result["content"] == "1\tdeep"
        assert result["path"] == str(layout["root"] / "sub" / "deep.txt")


def test_root_given_as_a_symlink_is_resolved_once(layout: dict[str, Path], tmp_path: Path) -> None:
    link = tmp_path / "root_link"
    link.symlink_to(layout["root"])
    with Workspace(layout["home"], [link]) as ws:
        assert ws.roots == (str(layout["root"]), ws.attachments_dir, ws.members_dir)
        assert ws.file_read("inside.txt")["end_line"] == 2
        # Re-pointing the link later changes nothing: the workspace kept the resolved root.
        link.unlink()
        link.symlink_to(layout["sibling"])
        assert ws.file_read("inside.txt")["end_line"] == 2
        with pytest.raises(NotFoundError):
            ws.file_read("secret.txt")


def test_directory_is_refused(layout: dict[str, Path]) -> None:
    with ws_for(layout) as ws:
        with pytest.raises(NotAFileError, match="is a directory"):
            ws.file_read("sub")
        with pytest.raises(NotAFileError, match="is a directory"):
            ws.file_read(str(layout["root"]))


def test_fifo_is_refused_without_hanging(layout: dict[str, Path]) -> None:
    os.mkfifo(layout["root"] / "pipe")
    errors: list[BaseException] = []

    def attempt() -> None:
        try:
            with ws_for(layout) as ws:
                ws.file_read("pipe")
        except BaseException as exc:  # noqa: BLE001 - inspected below
            errors.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "file_read blocked on a FIFO"
    assert isinstance(errors[0], NotAFileError)
    assert "is a FIFO" in str(errors[0])


def test_socket_is_refused(layout: dict[str, Path]) -> None:
    sock = socket.socket(socket.AF_UNIX)
    path = layout["root"] / "s.sock"
    try:
        sock.bind(str(path))
        with ws_for(layout) as ws, pytest.raises(PathError, match="socket|No such device"):
            ws.file_read("s.sock")
    finally:
        sock.close()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"], ids=str)
def test_devices_are_refused_even_inside_a_root(tmp_path: Path, device: str) -> None:
    with Workspace(tmp_path / "home", ["/dev"]) as ws:
        started = time.monotonic()
        with pytest.raises(NotAFileError, match="is a device"):
            ws.file_read(device)
        assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "path must be a non-empty string; pass a file's path inside the roots ({roots})"),
        (
            "a\x00b",
            "path 'a\\x00b' contains a NUL byte, which no file name holds; "
            "pass the name without it",
        ),
        (
            "n" * 100 + "\x00",
            f"path '{'n' * 80}' contains a NUL byte, which no file name holds; "
            "pass the name without it",
        ),
        (
            "x" * 5000,
            f"path '{'x' * 80}'... is 5000 characters, longer than any file path (4096); "
            "pass a shorter path inside the roots ({roots})",
        ),
    ],
    ids=["empty", "nul", "long-nul", "too-long"],
)
def test_malformed_paths_get_a_clear_error(
    layout: dict[str, Path], tmp_path: Path, path: str, message: str
) -> None:
    with ws_for(layout) as ws:
        with pytest.raises(InvalidArgumentError) as info:
            ws.call("file_read", {"path": path})
        assert type(info.value) is InvalidArgumentError
        assert str(info.value) == message.format(roots=", ".join(ws.roots))
        # Nothing but the given path (cut to 80 characters) and the roots: no working
        # directory, no resolved location, no home besides the roots inside it.
        rest = str(info.value).replace(repr(path[:80]), "")
        for root in ws.roots:
            rest = rest.replace(root, "")
        assert str(tmp_path) not in rest
        assert os.getcwd() not in rest


def test_missing_file_says_so(layout: dict[str, Path]) -> None:
    with (
        ws_for(layout) as ws,
        pytest.raises(NotFoundError, match="no file 'nope.txt' in any root; tried"),
    ):
        ws.file_read("nope.txt")


def test_swap_to_symlink_between_calls_never_leaks(layout: dict[str, Path]) -> None:
    """Race a file being replaced by a symlink to a secret while the tool reads it."""
    target = layout["root"] / "racy.txt"
    target.write_text("benign\n")
    stop = threading.Event()

    def swapper() -> None:
        tmp_link = layout["root"] / "racy.link"
        tmp_file = layout["root"] / "racy.file"
        while not stop.is_set():
            if tmp_link.exists() or tmp_link.is_symlink():
                tmp_link.unlink()
            tmp_link.symlink_to(layout["outside"])
            os.replace(tmp_link, target)
            tmp_file.write_text("benign\n")
            os.replace(tmp_file, target)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    outcomes = {"ok": 0, "refused": 0}
    try:
        with ws_for(layout) as ws:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                try:
                    text = ws.file_read("racy.txt")["content"]
                except (OutsideRootsError, NotFoundError) as exc:
                    # Refused by the check (resolves outside), by the walk (a symlink met
                    # with O_NOFOLLOW), or caught mid-swap (resolving a link that became a
                    # file, or between the two renames).
                    assert str(exc) in (
                        "'racy.txt' changed into a symlink while it was opened; refused",
                        f"'racy.txt' is outside the allowed roots ({', '.join(ws.roots)}); "
                        "read files inside them",
                        "no file at 'racy.txt'; check the name",
                    ) or str(exc).startswith(
                        (
                            "no file 'racy.txt' in any root",
                            "'racy.txt' changed while it was resolved (",
                        )
                    ), str(exc)
                    outcomes["refused"] += 1
                    continue
                assert text == "1\tbenign", text
                outcomes["ok"] += 1
    finally:
        stop.set()
        thread.join(5)
    assert outcomes["ok"] > 0
    assert outcomes["refused"] > 0, "the race never hit the symlink state; the test proved nothing"


def test_open_confined_checks_every_component(layout: dict[str, Path]) -> None:
    # "allow" must not admit "allow_secret" even though the string is a prefix.
    with (
        pytest.raises(OutsideRootsError),
        open_confined(str(layout["sibling"] / "secret.txt"), [str(layout["root"])]),
    ):
        pass
    with (
        pytest.raises(OutsideRootsError, match="no roots are configured"),
        open_confined("inside.txt", []),
    ):
        pass


def test_a_refusal_names_only_the_given_path_and_the_roots(
    layout: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden = tmp_path / "hidden-outside-dir"
    hidden.mkdir()
    (hidden / "target.txt").write_text("outside\n")
    (layout["root"] / "link.txt").symlink_to(hidden / "target.txt")
    cwd = tmp_path / "server-working-dir"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with ws_for(layout) as ws:
        ws.conversation_search("anything")  # opens the store and its index files
        store = os.path.realpath(ws._store.path)
        fds = [
            f"/proc/self/fd/{fd}"
            for fd in os.listdir("/proc/self/fd")
            if os.path.realpath(f"/proc/self/fd/{fd}") == store
        ]
        assert fds, "the store is open in this process"
        secrets = [store, str(cwd), sys.executable, os.path.realpath(sys.executable), str(hidden)]
        for path in [*fds, "/proc/self/cwd/x", "/proc/self/exe", "link.txt"]:
            with pytest.raises(OutsideRootsError) as info:
                ws.file_read(path)
            message = str(info.value)
            assert message.startswith(repr(path)), message
            for secret in secrets:
                assert secret not in message, (path, secret, message)


_parts = st.lists(st.sampled_from(["a", "ab", "b", "a.b", "-", "é"]), max_size=4)


@given(root=_parts, path=_parts)
def test_inside_is_the_commonpath_test_on_resolved_paths(root: list[str], path: list[str]) -> None:
    # The prefix test at a separator decides what commonpath did, for resolved paths ("/"
    # itself included): "/a" holds "/a" and "/a/b", never "/ab".
    r, p = "/" + "/".join(root), "/" + "/".join(path)
    expected = p == r or os.path.commonpath([r, p]) == r
    assert _paths.inside(r, p) is expected
