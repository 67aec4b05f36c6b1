"""UTF-16 text files, read through a UTF-8 copy made once.

The line index and the readers work on UTF-8 bytes. A file that starts with a UTF-16 byte
order mark (PowerShell's ``>`` writes UTF-16LE, for instance) is decoded once, streaming in
flat memory, into a copy under the home keyed by the original's fingerprint; line numbers
are the same in both. A changed original gets a new copy and the old one is removed.

Threads of one process make a copy once (the others wait for it); processes each write a
temporary file of their own and the last rename wins, with the same bytes.
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import hashlib
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ._paths import OpenFile, fingerprint, open_file

__all__ = ["BOMS", "encoding_of", "utf8_view"]

BOMS = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be"}
_CHUNK = 4 * 1024 * 1024
_LOCKS = [threading.Lock() for _ in range(32)]  # striped: bounded, whatever the files


def _lock_for(path: str) -> threading.Lock:
    return _LOCKS[hash(path) % len(_LOCKS)]


def encoding_of(f: OpenFile) -> str | None:
    """The UTF-16 flavour named by the file's byte order mark, or None."""
    return BOMS.get(os.pread(f.fd, 2, 0))


@contextmanager
def utf8_view(f: OpenFile, directory: str, encoding: str) -> Iterator[OpenFile]:
    """An open UTF-8 copy of the UTF-16 file ``f`` (made on first use)."""
    prefix = hashlib.sha256(f.path.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    path = os.path.join(directory, f"{prefix}-{fingerprint(f)[:16]}.txt")
    with _lock_for(path):
        if not os.path.exists(path):
            _transcode(f, directory, path, prefix, encoding)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        yield open_file(fd, path)
    finally:
        os.close(fd)


def _transcode(f: OpenFile, directory: str, path: str, prefix: str, encoding: str) -> None:
    os.makedirs(directory, exist_ok=True)
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"  # never shared by two writers
    try:
        with open(tmp, "wb") as out:
            offset = 2  # past the byte order mark
            while offset < f.size:
                chunk = os.pread(f.fd, _CHUNK, offset)
                if not chunk:
                    break
                offset += len(chunk)
                out.write(decoder.decode(chunk).encode("utf-8", "surrogatepass"))
            out.write(decoder.decode(b"", final=True).encode("utf-8", "surrogatepass"))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    for stale in glob.glob(os.path.join(glob.escape(directory), f"{prefix}-*.txt")):
        if stale != path:
            with contextlib.suppress(FileNotFoundError):  # another process removed it first
                os.unlink(stale)
