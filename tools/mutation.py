"""Mutation testing of one target with its own tests; prints the kill rate.

    .venv/bin/python tools/mutation.py replay   # placeholders/_replay.py
    .venv/bin/python tools/mutation.py paths    # index/tools/_paths.py
    .venv/bin/python tools/mutation.py pdf      # the PDF probe, cards/_pdf*.py
    .venv/bin/python tools/mutation.py tables   # index/tools/_tables.py (and capabilities,
                                                # migrations, pdf-doc, pdf-objects)

prints ``killed K of N (survived S, timeout T)``, then every mutant not killed, one a line;
``tools/mutation.py TARGET --show NAME...`` prints their diffs. mutmut 3 is configured in
pyproject.toml (``[tool.mutmut]``); this script runs it with that configuration, only the
target's files mutated and only the target's own tests selected (``--tests`` picks others,
e.g. to measure a baseline), so a run takes minutes. Every run starts from a fresh
``mutants/`` folder: mutmut keeps earlier verdicts, which would hide what a new test kills.
mutmut's own output goes to ``mutants/run.log``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "mutants"

# target: (files mutated, as mutmut's only_mutate globs; the target's own tests, as globs)
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "replay": (
        ["leanreplay/placeholders/_replay.py"],
        ["tests/placeholders/test_replay*.py", "tests/placeholders/test_boundaries.py"],
    ),
    "paths": (["leanreplay/index/tools/_paths.py"], ["tests/index/test_confinement*.py"]),
    "pdf": (
        ["leanreplay/cards/_pdf*.py"],
        ["tests/cards/test_pdf*.py", "tests/index/test_pdf_simple_text.py"],
    ),
    # The PDF probe in two groups: the document (facts, xref sections, /Prev, recovery) and
    # the object syntax (the bounded parser, indirect objects and streams).
    "pdf-doc": (
        [
            "leanreplay/cards/_pdf.py",
            "leanreplay/cards/_pdfdoc.py",
            "leanreplay/cards/_pdffile.py",
            "leanreplay/cards/_pdfxref.py",
        ],
        ["tests/cards/test_pdf*.py"],
    ),
    "pdf-objects": (
        ["leanreplay/cards/_pdfobj.py", "leanreplay/cards/_pdfstream.py"],
        ["tests/cards/test_pdf*.py"],
    ),
    "capabilities": (
        ["leanreplay/index/search/_capabilities.py"],
        ["tests/index/test_capabilities.py"],
    ),
    # test_table_hostile.py too: the sheet-extent refusals, wide rows and giant cells of
    # _tables.py are tested there and nowhere else.
    "tables": (["leanreplay/index/tools/_tables.py"], ["tests/index/test_table_*.py"]),
    "migrations": (
        ["leanreplay/index/store/_migrations.py"],
        ["tests/index/test_store_migrations.py"],
    ),
}


# Tests left out of a target's runs, with why (none today). mutmut runs the clean and the
# stats pass in its own process and then reaps its workers with os.wait(), so a test that
# leaves a child process behind is reaped as an unknown worker and crashes the run (KeyError
# in wait_for_result): the background-copy tests of `tables` were left out for that until
# they waited for their builders themselves (`builders_waited_for`).
DESELECT: dict[str, list[str]] = {}


def _tests(patterns: list[str]) -> list[str]:
    found = sorted({str(p.relative_to(REPO)) for pat in patterns for p in REPO.glob(pat)})
    if not found:
        raise SystemExit(f"no test files match {patterns}: the target needs its own tests")
    return found


def _mutmut(target: str, tests: list[str], *args: str) -> None:
    """mutmut's CLI with the target's files and tests (``args``: the command)."""
    from mutmut import configuration

    mutate, own = TARGETS[target]
    # mutmut reads [tool.mutmut] once and keeps it in this module global; narrowing it
    # before the CLI module is imported is the one way to pick a target per run.
    configuration._config = dataclasses.replace(
        configuration._load_config(),
        only_mutate=mutate,
        pytest_add_cli_args_test_selection=_tests(tests or own)
        + [arg for node in DESELECT.get(target, []) for arg in ("--deselect", node)],
    )
    from mutmut.__main__ import cli

    cli.main(list(args), prog_name="mutmut", standalone_mode=False)


def _verdicts(target: str) -> dict[str, str]:
    """Status of every mutant of the target's files, by mutant name."""
    from mutmut.stats import status_by_exit_code

    mutate, _ = TARGETS[target]
    out: dict[str, str] = {}
    for meta in sorted(WORK.rglob("*.py.meta")):
        source = meta.relative_to(WORK).with_suffix("")
        if not any(source.match(pattern) for pattern in mutate):
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        out.update({name: status_by_exit_code[code] for name, code in codes.items()})
    return out


def _run(args: argparse.Namespace) -> int:
    """One fresh run in a child process (its own session); its exit code."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir()
    log = WORK / "run.log"
    with log.open("w") as out:
        child = subprocess.Popen(
            [sys.executable, __file__, args.target, "--jobs", str(args.jobs), "--_child"]
            + (["--tests", *args.tests] if args.tests else [])
            + (["--sample", args.sample] if args.sample else [])
            + (["--mutants", *args.mutants] if args.mutants else []),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers go with it when the time is up
        )
        try:
            return child.wait(timeout=args.max_seconds)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait()
            print(f"stopped after {args.max_seconds:g} s (--max-seconds)")
            return 0  # what finished is saved mutant by mutant


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument(
        "--tests",
        nargs="+",
        default=[],
        metavar="GLOB",
        help="test files to select instead of the target's own (e.g. to measure a baseline)",
    )
    parser.add_argument(
        "--show", nargs="+", default=[], metavar="NAME", help="print these mutants of the last run"
    )
    parser.add_argument(
        "--sample",
        default=None,
        metavar="GLOB",
        help='test only the mutants whose number matches, e.g. "[05]" (every fifth, spread '
        "over every function); the others are reported as not checked",
    )
    parser.add_argument(
        "--mutants",
        nargs="+",
        default=[],
        metavar="NAME",
        help="test only these mutants (e.g. the survivors of a full run, against new tests); "
        "the others are reported as not checked",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="stop the run after this long; the mutants not reached are reported as not checked",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="print the verdicts of the last run again (one stopped by hand, too) without running",
    )
    parser.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        names = [f"*__mutmut_*{args.sample}"] if args.sample else list(args.mutants)
        _mutmut(args.target, args.tests, "run", "--max-children", str(args.jobs), *names)
        return 0
    if args.show:
        for name in args.show:
            _mutmut(args.target, args.tests, "show", name)
        return 0
    log = WORK / "run.log"
    returncode = 0 if args.report else _run(args)
    verdicts = _verdicts(args.target)
    if returncode != 0 or not verdicts:
        tail = log.read_text(errors="replace")[-2000:]
        print(f"mutmut failed (exit {returncode}); the end of {log}:\n{tail}", file=sys.stderr)
        return 1
    count = {s: sum(1 for v in verdicts.values() if v == s) for s in set(verdicts.values())}
    checked = len(verdicts) - count.get("not checked", 0)
    line = (
        f"killed {count.get('killed', 0)} of {checked} "
        f"(survived {count.get('survived', 0)}, timeout {count.get('timeout', 0)})"
    )
    others = {s: n for s, n in sorted(count.items()) if s not in ("killed", "survived", "timeout")}
    if others:
        line += " " + ", ".join(f"{n} {s}" for s, n in others.items())
    print(line)

    def order(item: tuple[str, str]) -> tuple[str, str, int]:
        name, status = item
        stem, _, number = name.rpartition("_")
        return status, stem, int(number) if number.isdigit() else 0

    for name, status in sorted(verdicts.items(), key=order):
        if status not in ("killed", "timeout", "not checked"):
            print(f"  {status}: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
