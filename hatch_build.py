"""Build hook: compiles the one C extension, ``index/tools/_bytecount.c`` (the newline count
of file_read's line index), with the compiler the interpreter was built with.

It is optional. Without a compiler or Python's headers the wheel is pure Python and the line
index counts with NumPy instead (slower, same answers); the build says so in a warning.
Set ``LEANREPLAY_PURE=1`` to skip it.
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

SOURCE = Path("index/tools/_bytecount.c")
INSTALLED_AS = "leanreplay/index/tools"


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
            self.app.display_warning("leanreplay: no C extension on Windows; NumPy counts lines")
            return
        source = Path(self.root) / SOURCE
        # An editable install imports the extension from the source tree; a wheel takes it
        # from a scratch folder (the tree's own copy, if any, is excluded from wheels).
        editable = version == "editable"
        target = source.parent if editable else Path(tempfile.mkdtemp(prefix="leanreplay-ext-"))
        try:
            built = compile_extension(source, target)
        except (OSError, subprocess.CalledProcessError) as exc:
            if not editable:
                shutil.rmtree(target, ignore_errors=True)
            detail = getattr(exc, "stderr", None) or str(exc)
            self.app.display_warning(
                f"leanreplay: {SOURCE} did not compile, so file_read's newline count falls "
                f"back to NumPy (slower, same answers): {detail.strip()[-500:]}"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if not editable:
            build_data["force_include"][str(built)] = f"{INSTALLED_AS}/{built.name}"
            self._scratch = target

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
