"""The packages' contracts: sorted, complete __all__; import direction; CLI help everywhere."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import REPO

# The rooms: top-level folders of the repository, installed as subpackages of `leanreplay`.
PACKAGES = ["cards", "placeholders", "index"]


@pytest.mark.parametrize("name", ["leanreplay", *(f"leanreplay.{p}" for p in PACKAGES)], ids=str)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    public = {n for n in vars(module) if not n.startswith("_") or n == "__version__"}
    # Private submodules (``_card``) are not public names; anything else must be exported.
    public -= {n for n in public if isinstance(getattr(module, n), type(module))}
    assert public == set(exported), f"{name}: public names and __all__ differ"
    for n in exported:
        obj = getattr(module, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.startswith(name), f"{name}.{n} comes from {obj.__module__}"


@pytest.mark.parametrize("name", PACKAGES, ids=str)
def test_package_ships_py_typed(name: str) -> None:
    assert (REPO / name / "py.typed").is_file()
    assert (REPO / "leanreplay" / "py.typed").is_file()


@pytest.mark.parametrize("name", PACKAGES, ids=str)
def test_each_room_installs_inside_the_one_package(name: str) -> None:
    # The wheel and an editable install both see leanreplay/<room>, a link to the room's folder.
    link = REPO / "leanreplay" / name
    assert link.is_symlink()
    assert link.readlink() == Path("..") / name
    module = importlib.import_module(f"leanreplay.{name}")
    assert Path(module.__file__ or "").resolve() == (REPO / name / "__init__.py").resolve()


@pytest.mark.parametrize("name", PACKAGES, ids=str)
def test_every_error_is_in_errors_and_in_its_tree(name: str) -> None:
    # httpx's _exceptions.py: one module holds the package's errors, drawn as a tree.
    errors = importlib.import_module(f"leanreplay.{name}._errors")
    for path in (REPO / name).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                assert path.name == "_errors.py", f"{node.name} is defined in {path}"
    classes = [
        v for v in vars(errors).values() if inspect.isclass(v) and v.__module__ == errors.__name__
    ]
    assert classes
    for cls in classes:
        drawn = re.search(rf"^[ │├└─]*{cls.__name__}\b", errors.__doc__ or "", re.MULTILINE)
        assert drawn, f"{cls.__name__} is not in the tree of {errors.__name__}"


def _module_name(path: Path) -> str:
    parts = ["leanreplay", *path.relative_to(REPO).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(package: str) -> set[tuple[str, str]]:
    """(importing module, imported module) pairs, relative imports resolved to absolute names."""
    found: set[tuple[str, str]] = set()
    for path in (REPO / package).rglob("*.py"):
        here = _module_name(path)
        # The package a relative import starts from: the module's own package.
        base = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {(here, a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - (node.level - 1)]
                    target = ".".join([*anchor, node.module] if node.module else anchor)
                    names = [f"{target}.{a.name}" for a in node.names]
                    found |= {(here, target), *((here, n) for n in names)}
                elif node.module:
                    found.add((here, node.module))
    return found


def test_relative_imports_are_resolved() -> None:
    # The direction tests below would pass vacuously if relative imports were not seen.
    pairs = _imports("index")
    assert ("leanreplay.index._workspace", "leanreplay.index.store._store") in pairs
    assert ("leanreplay.index.faces.server", "leanreplay.index._workspace") in pairs


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("cards", {"placeholders", "index"}), ("placeholders", {"cards", "index"})],
    ids=["cards", "placeholders"],  # a set's str() is in hash order, different per process
)
def test_leaf_packages_import_no_sibling(package: str, forbidden: set[str]) -> None:
    for importer, module in _imports(package):
        parts = module.split(".")
        assert parts[0] != "leanreplay" or parts[1] not in forbidden, f"{importer} imports {module}"


def _python_files() -> list[Path]:
    # leanreplay/ holds links to the rooms: only its own __init__ is new there.
    tops = [*PACKAGES, "tests", "bench", "tools"]
    return [
        REPO / "leanreplay" / "__init__.py",
        *(p for t in tops for p in (REPO / t).rglob("*.py")),
    ]


def test_nothing_imports_the_rooms_by_their_old_top_level_names() -> None:
    # The rooms import as leanreplay.<room>; a bare `import index` would load a second copy of
    # each module (the checkout is on sys.path in the tests) and collide with any other `index`.
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in PACKAGES, f"{path}:{node.lineno} imports {name}"


def test_no_room_imports_another_rooms_private_modules() -> None:
    # A room's contract is its __init__: the others (and the faces) import only public names.
    # Tests and benches may reach inside, to test and time the parts.
    for package in PACKAGES:
        for importer, module in _imports(package):
            parts = module.split(".")
            if parts[0] != "leanreplay" or len(parts) < 3 or parts[1] == package:
                continue
            assert not any(p.startswith("_") for p in parts[2:]), f"{importer} imports {module}"


def test_nothing_imports_the_faces() -> None:
    for package in PACKAGES:
        for importer, module in _imports(package):
            if importer.startswith("leanreplay.index.faces") or importer == "leanreplay.index.cli":
                continue
            assert not module.startswith(("leanreplay.index.faces", "leanreplay.index.cli")), (
                f"{importer} imports {module}"
            )


# Each room of `index` and the rooms it must not import (see the README's development section).
ROOMS = {
    "leanreplay.index.store": (
        "leanreplay.index.tools",
        "leanreplay.index.search",
        "leanreplay.index.lifecycle",
        "leanreplay.index.faces",
        "leanreplay.index._workspace",
    ),
    "leanreplay.index.tools": (
        "leanreplay.index.store",
        "leanreplay.index.search",
        "leanreplay.index.lifecycle",
        "leanreplay.index.faces",
        "leanreplay.index._workspace",
    ),
    "leanreplay.index.search": (
        "leanreplay.index.lifecycle",
        "leanreplay.index.faces",
        "leanreplay.index._workspace",
    ),
    "leanreplay.index.lifecycle": (
        "leanreplay.index.tools",
        "leanreplay.index.search",
        "leanreplay.index.faces",
        "leanreplay.index._workspace",
    ),
    # The tool registry: the workspace imports it, never the other way round.
    "leanreplay.index._tools": ("leanreplay.index._workspace", "leanreplay.index.faces"),
}


@pytest.mark.parametrize("room", sorted(ROOMS), ids=str)
def test_rooms_import_only_downward(room: str) -> None:
    for importer, module in _imports("index"):
        if importer == room or importer.startswith(room + "."):
            assert not module.startswith(ROOMS[room]), f"{importer} imports {module}"


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import click

    out = []
    assert isinstance(group, click.Group)
    for name, command in group.commands.items():
        out.append((*prefix, name))
        if isinstance(command, click.Group):
            out += _commands(command, (*prefix, name))
    return out


def test_every_cli_command_has_help() -> None:
    cli = importlib.import_module("leanreplay.index.faces.cli").cli
    runner = CliRunner()
    for path in [(), *_commands(cli)]:
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output
        command = cli
        for part in path:
            command = command.commands[part]
        assert command.help, f"command {' '.join(path)} has no help text"


def test_console_script_points_at_cli_main() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'leanreplay = "leanreplay.index.cli:main"' in text


def test_repository_layout() -> None:
    for entry in [
        "pyproject.toml",
        "README.md",
        "cards",
        "placeholders",
        "index",
        "tests",
        "sample_files",
        "bench",
        ".ci/run",
    ]:
        assert (REPO / entry).exists(), entry


def test_readme_opens_with_demo_then_the_ci_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = [b.split("\n", 1)[1].strip() for b in readme.split("```bash")[1:3]]
    blocks = [b.split("```")[0].strip() for b in blocks]
    assert blocks[0].endswith("leanreplay demo")
    ci = (REPO / ".ci" / "run").read_text()
    assert blocks[1] in ci, "the README's test command must be what .ci/run runs"


def test_ci_runs_the_suite_on_the_newest_python_after_311() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.index(".venv/bin/python -m pytest -q") < ci.index("\nbash .ci/run-newest\n")


@pytest.mark.parametrize(("ci", "code", "said"), [("true", 1, "missing"), ("", 0, "skipping")])
def test_without_the_newest_python_ci_fails_and_a_run_by_hand_skips(
    ci: str, code: int, said: str, tmp_path: Path
) -> None:
    env = {**os.environ, "CI": ci, "NEWEST_PYTHON": str(tmp_path / "no-python3.13")}
    run = subprocess.run(
        ["bash", str(REPO / ".ci" / "run-newest")], env=env, capture_output=True, text=True
    )
    assert run.returncode == code, run.stderr
    assert said in run.stderr
    assert "NEWEST_PYTHON" in run.stderr


def test_ci_lints_and_type_checks_before_the_tests() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    steps = [".venv/bin/ruff check .", ".venv/bin/ruff format --check .", ".venv/bin/mypy"]
    positions = [ci.index(step) for step in steps]
    assert positions == sorted(positions)
    assert positions[-1] < ci.index(".venv/bin/python -m pytest")


# The frameworks the integrations plug into: only leanreplay.integrations imports them.
FRAMEWORKS = ("agents", "langchain", "langchain_core", "langgraph")


def test_only_the_integrations_import_the_frameworks() -> None:
    for package in PACKAGES:
        for importer, module in _imports(package):
            if importer.startswith("leanreplay.index.integrations"):
                continue
            assert module.split(".")[0] not in FRAMEWORKS, f"{importer} imports {module}"


def test_the_integrations_are_one_folder_imported_by_one_name() -> None:
    # index/integrations is linked as leanreplay/integrations: one copy of each module, and
    # one name for it (a second name would load a second copy, with classes of its own).
    link = REPO / "leanreplay" / "integrations"
    assert link.is_symlink()
    assert link.readlink() == Path("..") / "index" / "integrations"
    module = importlib.import_module("leanreplay.integrations.openai_agents")
    assert Path(module.__file__ or "").resolve() == REPO / "index" / "integrations" / (
        "openai_agents.py"
    )
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert not name.startswith("leanreplay.index.integrations"), (
                    f"{path}:{node.lineno} imports {name}; use leanreplay.integrations"
                )


@pytest.mark.parametrize(
    "name", ["leanreplay.integrations.openai_agents", "leanreplay.integrations.langchain"], ids=str
)
def test_integrations_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for n in module.__all__:
        assert getattr(module, n).__module__ == name
