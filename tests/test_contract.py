"""The packages' contracts: sorted, complete __all__; import direction; CLI help everywhere."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest
from click.testing import CliRunner

from tests.conftest import REPO

PACKAGES = ["cards", "placeholders", "index"]


@pytest.mark.parametrize("name", PACKAGES, ids=str)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    public = {n for n in vars(module) if not n.startswith("_")}
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


def _imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (REPO / package).rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {(path.name, a.name) for a in node.names}  # type: ignore[arg-type]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add((path.name, node.module))  # type: ignore[arg-type]
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("cards", {"placeholders", "index"}), ("placeholders", {"cards", "index"})],
    ids=str,
)
def test_leaf_packages_import_no_sibling(package: str, forbidden: set[str]) -> None:
    for filename, module in _imports(package):  # type: ignore[misc]
        assert module.split(".")[0] not in forbidden, f"{package}/{filename} imports {module}"


def test_nothing_imports_the_cli_or_the_server() -> None:
    for package in PACKAGES:
        for filename, module in _imports(package):  # type: ignore[misc]
            assert module not in {"index.cli", "index.server"}, (
                f"{package}/{filename} imports {module}"
            )


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
    cli = importlib.import_module("index.cli").cli
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
    assert 'leanreplay = "index.cli:main"' in text


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
