"""The ``leanreplay`` command: a thin click shell over the library. Only this module prints."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

import cards

F = TypeVar("F", bound=Callable[..., Any])


def default_home() -> str:
    """``$LEANREPLAY_HOME``, else the user data dir (``$XDG_DATA_HOME/leanreplay``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(base, "leanreplay")


@dataclass
class Settings:
    home: str
    roots: tuple[str, ...]


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="leanreplay")
@click.option(
    "--home",
    envvar="LEANREPLAY_HOME",
    default=default_home,
    show_default="$LEANREPLAY_HOME or the user data dir",
    type=click.Path(file_okay=False),
    help="Where the store, indexes and logs live.",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A folder the file tools may read (repeatable; default: the current directory).",
)
@click.pass_context
def cli(ctx: click.Context, home: str, roots: tuple[str, ...]) -> None:
    """Keep what an agent replays to its model lean, without losing a byte."""
    ctx.obj = Settings(home=home, roots=roots or (os.getcwd(),))


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=True))
@json_option
def card(paths: tuple[str, ...], as_json: bool) -> None:
    """Print the one-line card of each file in PATHS."""
    results: list[dict[str, Any]] = []
    failed = False
    for path in paths:
        try:
            c = cards.card_for(path)
        except cards.CardError as exc:
            click.echo(f"Error: {exc}", err=True)
            failed = True
            continue
        if as_json:
            results.append(c.to_dict())
        else:
            click.echo(c.render())
    if as_json:
        emit_json(results)
    if failed:
        sys.exit(1)


def sample_dir() -> Path:
    """The bundled samples: inside the installed package, else next to the source tree."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "sample_files", here.parent / "sample_files"):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise click.ClickException("sample_files/ not found; run the demo from a leanreplay checkout")


@cli.command()
def demo() -> None:
    """Run the pipeline on the bundled sample files and show what it saved."""
    samples = sample_dir()
    click.echo(f"== cards of {samples} (content never injected) ==")
    total = 0
    card_chars = 0
    for path in sorted(samples.iterdir()):
        if path.name == "manifest.json":
            continue
        line = cards.card_for(path).render()
        click.echo(line)
        total += path.stat().st_size
        card_chars += len(line)
    click.echo(f"-- {total:,} bytes of attachments became {card_chars:,} chars of cards")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
