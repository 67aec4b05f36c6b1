"""One way to add a tool: a method marked `@tool`. The listing order, the schemas in every
format, the MCP server's tools and instructions, and what cards name all come from it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from anthropic.types import ToolParam
from click.testing import CliRunner
from mcp import Client
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import Field

from leanreplay.cards import CARD_TOOLS, card_for
from leanreplay.index import TOOL_NAMES, InvalidArgumentError, Workspace, tool, tool_schemas
from leanreplay.index._limits import MAX_ANSWER_CHARS
from leanreplay.index._workspace import META_TOOLS
from leanreplay.index.faces.cli import cli
from leanreplay.index.faces.server import INSTRUCTIONS, build_server
from leanreplay.index.tools._paths import open_confined
from tests.conftest import REPO, SAMPLES
from tests.sdk_types import problems

# The order every face lists the tools in: the order of their definitions in `Workspace`.
LISTED = (
    "pdf_info",
    "pdf_search",
    "pdf_read",
    "file_read",
    "file_search",
    "image_view",
    "table_read",
    "table_query",
    "doc_read",
    "doc_search",
    "archive_list",
    "file_list",
    "conversation_read",
    "conversation_search",
    "tool_search",
    "tool_activate",
    "tool_call",
)


def test_tool_names_are_the_decorated_methods_in_definition_order() -> None:
    assert TOOL_NAMES == LISTED
    assert {"tool_search", "tool_activate", "tool_call"} == META_TOOLS
    assert [s["name"] for s in tool_schemas("mcp")] == list(LISTED)


def test_the_registry_does_not_import_the_workspace() -> None:
    # The registry used to look tools up by name on Workspace, and the two imported each
    # other; now the workspace imports the registry and never the other way round.
    tree = ast.parse((REPO / "index" / "_tools.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    assert not any("_workspace" in name for name in imported), imported


def test_every_tool_a_card_names_is_registered() -> None:
    assert set(TOOL_NAMES) >= CARD_TOOLS, CARD_TOOLS - set(TOOL_NAMES)
    named: set[str] = set()
    for path in sorted(SAMPLES.iterdir()):
        if path.is_file():
            named |= set(card_for(path).tools)
    assert named <= CARD_TOOLS, named - CARD_TOOLS
    # the samples exercise every kind a card can send to a tool
    assert named == CARD_TOOLS


def test_every_answer_budget_a_description_quotes_is_the_one_constant() -> None:
    # The 40,000-char answer budget has one name; the model reads it in three descriptions.
    quoted = {
        spec["name"]: re.findall(r"([\d,]+) chars", spec["description"])
        for spec in tool_schemas("mcp")
    }
    assert {n for n, q in quoted.items() if q} >= {"pdf_read", "doc_read", "conversation_read"}
    for name, numbers in quoted.items():
        for number in numbers:
            assert int(number.replace(",", "")) == MAX_ANSWER_CHARS, (name, number)


def test_the_server_instructions_list_the_tools_cards_name_in_listing_order() -> None:
    listed = INSTRUCTIONS.split("cards name the tool that reads the file (")[1].split(")")[0]
    assert listed.split(", ") == [n for n in TOOL_NAMES if n in CARD_TOOLS]


# The shape each format must have, as the providers' SDKs define the request parameter.
SDK_TYPES: dict[str, Any] = {
    "openai": ChatCompletionToolParam,
    "openai-responses": FunctionToolParam,
    "anthropic": ToolParam,
}


@pytest.mark.parametrize("format", sorted(SDK_TYPES), ids=str)
def test_schemas_fit_the_providers_sdk_types(format: str) -> None:
    exported = tool_schemas(format)
    assert len(exported) == len(TOOL_NAMES)
    for schema in exported:
        assert problems(schema, SDK_TYPES[format]) == [], schema


def test_responses_schemas_are_flat_function_tools() -> None:
    (read,) = [s for s in tool_schemas("openai-responses") if s["name"] == "file_read"]
    (chat,) = [s for s in tool_schemas("openai") if s["function"]["name"] == "file_read"]
    assert read == {
        "type": "function",
        "name": "file_read",
        "description": chat["function"]["description"],
        "parameters": chat["function"]["parameters"],
        "strict": False,
    }


def test_the_cli_prints_the_responses_schemas() -> None:
    result = CliRunner().invoke(cli, ["tools", "--format", "openai-responses"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == tool_schemas("openai-responses")


def test_an_unknown_schema_format_names_the_formats() -> None:
    with pytest.raises(
        InvalidArgumentError, match="one of openai, openai-responses, anthropic, mcp, got"
    ):
        tool_schemas("gemini")


class CountingWorkspace(Workspace):
    """A workspace with one tool of its own: the one decorated method below is all it takes."""

    @tool
    def word_count(
        self,
        path: Annotated[str, Field(description="Text file, absolute or relative to a root.")],
        word: Annotated[str, Field(min_length=1, description="The word to count.")],
    ) -> dict[str, Any]:
        """Count how often a word occurs in a text file."""
        with open_confined(path, self.roots) as f, open(f.fd, closefd=False) as text:
            return {"path": f.path, "count": text.read().split().count(word)}


@pytest.fixture
def counting(tmp_path: Path) -> CountingWorkspace:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("to be or not to be\n")
    return CountingWorkspace(tmp_path / "home", [root])


def test_a_decorated_method_is_a_tool_everywhere(counting: CountingWorkspace) -> None:
    # called by name, validated against its signature
    assert counting.call("word_count", {"path": "a.txt", "word": "be"})["count"] == 2
    with pytest.raises(InvalidArgumentError, match="bad arguments for word_count: word"):
        counting.call("word_count", {"path": "a.txt", "word": ""})
    # listed after the workspace's own tools, in every schema format
    for format in ("openai", "openai-responses", "anthropic", "mcp"):
        exported = tool_schemas(format, workspace=counting)
        assert len(exported) == len(TOOL_NAMES) + 1
        assert "word_count" in json.dumps(exported[-1])
    (mcp,) = tool_schemas("mcp", workspace=CountingWorkspace)[-1:]
    assert mcp["description"] == "Count how often a word occurs in a text file."
    assert mcp["inputSchema"]["required"] == ["path", "word"]
    # in the capability index, so tool_search finds it
    assert counting.call("tool_search", {"query": "count words"})["tools"][0]["name"] == (
        "word_count"
    )


def test_a_decorated_method_is_served_over_mcp(counting: CountingWorkspace) -> None:
    async def main() -> tuple[list[str], str]:
        async with Client(build_server(counting)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("word_count", {"path": "a.txt", "word": "to"})
            return listed, "".join(c.text for c in result.content if c.type == "text")

    listed, text = anyio.run(main)
    assert listed == [*TOOL_NAMES, "word_count"]
    assert json.loads(text)["count"] == 2


def test_a_subclass_tool_stays_out_of_the_base_workspace(tmp_path: Path) -> None:
    with Workspace(tmp_path) as ws, pytest.raises(InvalidArgumentError, match="unknown tool"):
        ws.call("word_count", {"path": "a.txt", "word": "be"})
    assert "word_count" not in TOOL_NAMES


def test_upstream_tools_come_and_go_in_the_responses_form(tmp_path: Path) -> None:
    weather = {
        "type": "function",
        "name": "forecast",
        "description": "Weather forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
    with Workspace(tmp_path) as ws:
        assert ws.register_tools("weather", [weather]) == ["forecast"]
        ws.call("tool_activate", {"names": ["forecast"]}, conversation_id="c1")
        sent = ws.request_tools("c1", "openai-responses")
    assert [t["name"] for t in sent] == ["tool_search", "tool_activate", "tool_call", "forecast"]
    assert sent[-1] == weather
    for schema in sent:
        assert problems(schema, FunctionToolParam) == [], schema
