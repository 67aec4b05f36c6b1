"""What makes a folder a leanreplay home: a marker file, or a store already in it.

A home is written to (store, indexes, attachments, logs), so a folder that already holds
other files and shows no sign of being a home is refused rather than filled with ours.
"""

from __future__ import annotations

import contextlib
import os

from .._errors import StoreError

__all__ = ["HOME_MARKER", "check_home", "is_home", "mark_home"]

HOME_MARKER = ".leanreplay-home"
_STORE_FILE = "store.sqlite3"  # homes made before the marker existed count as ours


def is_home(path: str) -> bool:
    return os.path.isfile(os.path.join(path, HOME_MARKER)) or os.path.isfile(
        os.path.join(path, _STORE_FILE)
    )


def check_home(path: str) -> None:
    """Refuse an existing, non-empty folder that is not a leanreplay home.

    Raises:
        StoreError: the folder holds other files and neither the marker nor a store.
    """
    try:
        entries = os.listdir(path)
    except FileNotFoundError:
        return  # a new home
    except NotADirectoryError:
        raise StoreError(f"{path!r} is a file, not a folder; a home is a folder") from None
    except OSError as exc:
        raise StoreError(f"cannot use {path!r} as the home: {exc.strerror}") from None
    if entries and not is_home(path):
        raise StoreError(
            f"{path!r} already holds {len(entries)} entries and is not a leanreplay home "
            f"(no {HOME_MARKER} file); choose a new or empty folder, or create {HOME_MARKER} "
            "in it to use it anyway"
        )


def mark_home(path: str) -> None:
    """Leave the marker in a home (best effort: a read-only home still serves reads)."""
    marker = os.path.join(path, HOME_MARKER)
    if not os.path.exists(marker):
        with contextlib.suppress(OSError), open(marker, "a", encoding="utf-8") as f:
            f.write("This folder is a leanreplay home: store, indexes, attachments, logs.\n")
