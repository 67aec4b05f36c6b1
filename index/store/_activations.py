"""Which capability-index tools each conversation has activated, kept under the home.

Activation is sticky: once a model activates a tool in a conversation, every later request of
that conversation carries its schema, in activation order (new ones at the end, so the tools
list, like the prompt, only grows at its end and the provider's cache survives).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading

__all__ = ["Activations"]

MAX_ACTIVE = 200  # a conversation cannot grow its tools list without bound


class Activations:
    """Per-conversation activation lists in ``directory`` (one small JSON file each); the
    ``None`` conversation lives in memory only."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._session: list[str] = []

    def _path(self, conversation_id: str) -> str:
        digest = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()
        return os.path.join(self.directory, digest[:32] + ".json")

    def get(self, conversation_id: str | None) -> list[str]:
        if conversation_id is None:
            return list(self._session)
        try:
            with open(self._path(conversation_id), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return []  # never activated, or a damaged file: start from nothing
        names = data.get("names") if isinstance(data, dict) else None
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def add(self, conversation_id: str | None, names: list[str]) -> tuple[list[str], list[str]]:
        """Append ``names`` not yet active; returns (newly activated, already active)."""
        with self._lock:
            current = self.get(conversation_id)
            new = [n for n in dict.fromkeys(names) if n not in current]
            old = [n for n in dict.fromkeys(names) if n in current]
            if len(current) + len(new) > MAX_ACTIVE:
                raise ValueError(
                    f"a conversation can have at most {MAX_ACTIVE} active tools; "
                    f"{len(current)} are active and {len(new)} more were asked for"
                )
            if new:
                self._save(conversation_id, current + new)
            return new, old

    def _save(self, conversation_id: str | None, names: list[str]) -> None:
        if conversation_id is None:
            self._session = names
            return
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".activations-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"conversation_id": conversation_id, "names": names}, f)
            os.replace(tmp, self._path(conversation_id))
        except BaseException:
            os.unlink(tmp)
            raise
