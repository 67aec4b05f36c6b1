"""Build hook: compiles the C extensions (`EXTENSIONS`) with the compiler the interpreter was
built with: ``index/tools/_bytecount.c`` (the newline count of file_read's line index), and
for the PDF probe ``cards/_simpledict.c`` (simple dictionaries read) and
``cards/_predictor.c`` (the PNG predictors of an xref stream undone).

They are optional. Without a compiler or Python's headers the wheel is pure Python: NumPy
counts the lines and Python reads the PDF structures instead (slower, and the same answers,
except that pure Python gives up on a hostile stream's millions of Paeth rows sooner); the
build says so in a warning. Set ``LEANREPLAY_PURE=1`` to skip them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Each extension's source, where the wheel installs it, and what the pure fallback does.
EXTENSIONS = {
    Path("index/tools/_bytecount.c"): (
        "leanreplay/index/tools",
        "file_read's newline count falls back to NumPy",
    ),
    Path("cards/_simpledict.c"): (
        "leanreplay/cards",
        "the PDF parser reads simple dictionaries in Python",
    ),
    Path("cards/_predictor.c"): (
        "leanreplay/cards",
        "the PDF probe sums xref stream columns in Python (and gives up sooner on a "
        "hostile stream's millions of Paeth rows)",
    ),
}


def compile_extension(source: Path, target_dir: Path) -> Path:
    """Compile ``source`` into ``target_dir`` for the running interpreter; raises
    `subprocess.CalledProcessError` (with the compiler's output) or `OSError` on failure."""
    out = target_dir / (source.stem + str(sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    cc = shlex.split(os.environ.get("CC") or str(sysconfig.get_config_var("CC") or "cc"))
    flags = ["-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"]]
    if sys.platform == "darwin":
        flags += ["-undefined", "dynamic_lookup"]  # symbols come from the interpreter
    subprocess.run(
        [*cc, *flags, str(source), "-o", str(out)], check=True, capture_output=True, text=True
    )
    return out


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("LEANREPLAY_PURE") == "1":
            return
        if sys.platform == "win32":
            self.app.display_warning(
                "leanreplay: no C extensions on Windows; NumPy counts lines and Python reads "
                "PDF structures"
            )
            return
        # An editable install imports the extensions from the source tree; a wheel takes them
        # from a scratch folder (the tree's own copies, if any, are excluded from wheels).
        editable = version == "editable"
        scratch = None if editable else Path(tempfile.mkdtemp(prefix="leanreplay-ext-"))
        built_any = False
        for relative, (installed_as, fallback) in EXTENSIONS.items():
            source = Path(self.root) / relative
            target = source.parent if scratch is None else scratch
            try:
                built = compile_extension(source, target)
            except (OSError, subprocess.CalledProcessError) as exc:
                detail = getattr(exc, "stderr", None) or str(exc)
                self.app.display_warning(
                    f"leanreplay: {relative} did not compile, so {fallback}; slower, with the "
                    f"same answers otherwise: {detail.strip()[-500:]}"
                )
                continue
            built_any = True
            if scratch is not None:
                build_data["force_include"][str(built)] = f"{installed_as}/{built.name}"
        if scratch is not None and not built_any:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch = None
        if built_any:
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
        self._scratch = scratch

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
