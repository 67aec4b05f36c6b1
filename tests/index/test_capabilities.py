"""The capability index: one line per tool, search by what a tool does, sticky activation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import Tool

from leanreplay.index import InvalidArgumentError, Workspace
from leanreplay.index.search._capabilities import (
    CapabilityIndex,
    summary_line,
    tool_problem,
    tool_words,
)


def mcp_tool(name: str, description: str = "", **props: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
        },
    }


BROWSER = [
    mcp_tool("browser_navigate", "Navigate to a URL.", url="The URL to open"),
    mcp_tool("browser_takeScreenshot", "Capture the current page as an image."),
    mcp_tool("browser_click", "Perform a click on a web page element.", ref="Element reference"),
]
GIT = [
    mcp_tool("git_log", "Show the commit history of a repository.", max_count="How many commits"),
    mcp_tool("git_diff", "Show changes between the working tree and a commit."),
]


def test_render_is_one_line_per_tool_grouped_by_server() -> None:
    index = CapabilityIndex(BROWSER, server="browser")
    index.add(GIT, server="git")
    lines = index.render().splitlines()
    assert lines == [
        "[browser]",
        "browser_click: Perform a click on a web page element",
        "browser_navigate: Navigate to a URL",
        "browser_takeScreenshot: Capture the current page as an image",
        "[git]",
        "git_diff: Show changes between the working tree",
        "git_log: Show the commit history of a repository",
    ]


def test_render_does_not_depend_on_the_order_a_server_lists_its_tools() -> None:
    assert (
        CapabilityIndex(BROWSER, server="b").render()
        == CapabilityIndex(list(reversed(BROWSER)), server="b").render()
    )


tool_names = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)
batches = st.lists(
    st.tuples(
        st.sampled_from(["alpha", "beta", "gamma"]),
        st.lists(tool_names, min_size=1, max_size=5, unique=True),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(batches)
def test_the_rendered_index_only_ever_grows_at_its_end(plan: list[tuple[str, list[str]]]) -> None:
    index = CapabilityIndex()
    before = index.render()
    names_before: list[str] = []
    for server, names in plan:
        index.add([mcp_tool(n, f"Does {n}.") for n in names], server=server)
        after = index.render()
        assert after.startswith(before), "a new tool moved an earlier line"
        now = [c.name for c in index.capabilities]
        assert now[: len(names_before)] == names_before, "an exposed name changed"
        assert len(set(now)) == len(now), "two tools share an exposed name"
        before, names_before = after, now


def test_a_colliding_name_is_prefixed_with_its_server_and_the_first_keeps_its_own() -> None:
    index = CapabilityIndex([mcp_tool("read_file", "Read a file from disk.")], server="fs")
    exposed = index.add([mcp_tool("read_file", "Read a file from a GitHub repo.")], server="gh")
    assert exposed == ["gh_read_file"]
    assert index.get("read_file").server == "fs"
    assert index.get("gh_read_file").original_name == "read_file"
    assert index.get("gh_read_file").schema("mcp")["name"] == "gh_read_file"


def test_adding_the_same_server_tool_twice_keeps_one() -> None:
    index = CapabilityIndex(GIT, server="git")
    assert index.add(GIT, server="git") == ["git_diff", "git_log"]
    assert len(index) == 2


def test_the_three_forms_give_the_same_capability_and_convert_back() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    forms = [
        {"name": "find", "description": "Find things.", "inputSchema": schema},
        {"name": "find", "description": "Find things.", "input_schema": schema},
        {
            "type": "function",
            "function": {"name": "find", "description": "Find things.", "parameters": schema},
        },
        Tool(name="find", description="Find things.", input_schema=schema),
    ]
    for form in forms:
        cap = CapabilityIndex([form], server="s").get("find")
        assert (cap.description, dict(cap.input_schema)) == ("Find things.", schema)
    cap = CapabilityIndex([forms[0]], server="s").get("find")
    assert cap.schema("anthropic") == forms[1]
    assert cap.schema("openai") == forms[2]
    assert cap.schema("mcp") == forms[0]
    with pytest.raises(
        InvalidArgumentError, match="one of openai, openai-responses, anthropic, mcp, got"
    ):
        cap.schema("gemini")


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({"name": "x"}, "^a tool definition needs MCP `inputSchema`"),
        # `parameters` is the Responses form only with its type.
        ({"name": "x", "parameters": {}}, "needs MCP `inputSchema`"),
        ({"name": "has space", "inputSchema": {}}, "is not 1-64 letters"),
        ({"name": "x" * 65, "inputSchema": {}}, "is not 1-64 letters"),
        ({"name": "x", "inputSchema": []}, "input schema must be an object"),
        ("read_file", "must be an object, got str"),
    ],
    ids=["no-schema", "parameters-untyped", "space", "too-long", "schema-list", "string"],
)
def test_bad_definitions_are_refused_with_the_reason(definition: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        CapabilityIndex([definition])


@pytest.mark.parametrize(
    ("description", "headline"),
    [
        ("Read a file.  Then more\ntext.", "Read a file"),
        # A long sentence ends where a clause does: what the tool does, not where or how.
        (
            "Returns all environment variables, helpful for debugging",
            "Returns all environment variables",
        ),
        (
            "Add new observations to existing entities in the knowledge graph",
            "Add new observations",
        ),
        # A comma inside parentheses is no clause end.
        (
            "Read a document's parts (paragraphs, slides, chapters) with headings",
            "Read a document's parts",
        ),
        # No clause end in reach: whole words, no dangling "of", and an ellipsis.
        (
            "Retrieve numbered records of extraordinarily voluminous datasets",
            "Retrieve numbered records…",
        ),
        # A punctuation clause end (a comma, " - ") wins over a later word one ("as", "with").
        (
            "Fetch the page contents, returning it as markdown text for the model",
            "Fetch the page contents",
        ),
        (
            "Search the web index - results as a list with links to pages",
            "Search the web index",
        ),
        # The cut drops the punctuation before it, and only that.
        (
            "Returns every open pull request: (title, author, state)",
            "Returns every open pull request",
        ),
        (
            "Convert the given file to LaTeX, keeping its formatting intact",
            "Convert the given file to LaTeX",
        ),
        ("Converts a document to LaTeX.", "Converts a document to LaTeX"),
        # Balanced parentheses before a clause end do not hide it.
        (
            "Read the file (UTF-8) in pages of lines, bounded",
            "Read the file (UTF-8) in pages of lines",
        ),
        # The bounds are inclusive: a 40-char sentence stays whole, and a clause end at char
        # 18 or at char 40 is used.
        ("Show every commit of the main repository", "Show every commit of the main repository"),
        ("Read the long file, one page at a time each day", "Read the long file"),
        (
            "Show every recent change of the big repo, newest first",
            "Show every recent change of the big repo",
        ),
        # Whole words: the last one is kept when the limit falls just after it, dropped when
        # the limit cuts it; a word ending in punctuation loses it before the ellipsis.
        (
            "Retrieve numbered records of many files extraordinarily voluminous",
            "Retrieve numbered records of many files…",
        ),
        (
            "Retrieve numbered records of LaTeX extraordinarily voluminous",
            "Retrieve numbered records of LaTeX…",
        ),
        (
            "Get (many numbered records, extraordinarily voluminous data)",
            "Get (many numbered records…",
        ),
        # Dangling words go, but never the first word; one long word is cut to fit.
        ("Retrieve of the " + "x" * 60, "Retrieve…"),
        ("The " + "x" * 60, "The…"),
        ("x" * 100, "x" * 39 + "…"),
    ],
)
def test_the_summary_is_a_headline(description: str, headline: str) -> None:
    assert summary_line(description, limit=40) == headline


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("abc de,(). \n"), max_size=300))
def test_a_headline_is_one_bounded_line_made_of_the_descriptions_words(text: str) -> None:
    headline = summary_line(text, limit=40)
    assert "\n" not in headline
    assert len(headline) <= 40
    words = " ".join(text.split())
    assert words.startswith(headline.removesuffix("…").rstrip("."))


def test_tool_words_split_snake_and_camel_case() -> None:
    assert tool_words("browser_takeScreenshot") == "browser_takeScreenshot browser take screenshot"
    assert tool_words("get-HTTPResponse") == "get-HTTPResponse get http response"


@pytest.fixture
def catalogue() -> CapabilityIndex:
    index = CapabilityIndex(BROWSER, server="browser")
    index.add(GIT, server="git")
    return index


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("take a screenshot of the page", "browser_takeScreenshot"),
        ("takeScreenshot", "browser_takeScreenshot"),
        ("open this url", "browser_navigate"),
        ("commit history", "git_log"),
        ("how many commits", "git_log"),  # found through a parameter's description
        ("clicking", "browser_click"),  # stemmed
    ],
)
def test_search_finds_a_tool_by_what_it_does(
    catalogue: CapabilityIndex, query: str, expected: str
) -> None:
    assert catalogue.search(query, limit=1)[0]["name"] == expected


def test_search_by_server_name(catalogue: CapabilityIndex) -> None:
    names = {hit["name"] for hit in catalogue.search("git", limit=5)}
    assert names == {"git_log", "git_diff"}


@pytest.mark.parametrize("query", ["foo:bar", '"unbalanced', "a AND", "url)(", "NOT OR"])
def test_hostile_queries_search_their_words(catalogue: CapabilityIndex, query: str) -> None:
    assert isinstance(catalogue.search(query), list)


def test_search_validates_its_arguments(catalogue: CapabilityIndex) -> None:
    with pytest.raises(InvalidArgumentError, match="non-empty"):
        catalogue.search("  ")
    with pytest.raises(InvalidArgumentError, match="no searchable words"):
        catalogue.search(":::")
    with pytest.raises(InvalidArgumentError, match="limit must be an int, got bool"):
        catalogue.search("url", limit=True)
    with pytest.raises(InvalidArgumentError, match="limit must be from 1 to 50, got 51"):
        catalogue.search("url", limit=51)


def test_search_sees_tools_added_after_the_first_search(catalogue: CapabilityIndex) -> None:
    assert catalogue.search("weather forecast")[:1] == []
    catalogue.add([mcp_tool("forecast", "Weather forecast for a city.")], server="weather")
    assert catalogue.search("weather forecast")[0]["name"] == "forecast"


# -- through the Workspace ---------------------------------------------------------------


def test_our_own_tools_are_in_the_index_but_not_the_meta_tools(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    rendered = ws.capabilities.render()
    assert rendered.splitlines()[0] == "[leanreplay]"
    assert "\nfile_read: " in rendered
    assert "tool_search" not in rendered
    assert "tool_activate" not in rendered


def test_activation_is_sticky_per_conversation_and_appends(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.register_tools("browser", BROWSER)
    first = ws.call("tool_activate", {"names": ["browser_click"]}, conversation_id="c1")
    assert first["activated"] == ["browser_click"]
    assert first["tools"][0]["inputSchema"]["properties"]["ref"]["type"] == "string"
    ws.call("tool_activate", {"names": ["file_read", "browser_click"]}, conversation_id="c1")
    names = [t["name"] for t in ws.request_tools("c1", "anthropic")]
    assert names == ["tool_search", "tool_activate", "tool_call", "browser_click", "file_read"]
    assert [t["name"] for t in ws.request_tools("c2")] == [
        "tool_search",
        "tool_activate",
        "tool_call",
    ]
    # A later process (same home) still has c1's activations, once the server is back.
    again = Workspace(tmp_path)
    again.register_tools("browser", BROWSER)
    openai = again.request_tools("c1", "openai")
    assert [t["function"]["name"] for t in openai][3:] == ["browser_click", "file_read"]
    assert json.loads(json.dumps(openai)) == openai


def test_activating_an_unknown_tool_changes_nothing(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    with pytest.raises(
        InvalidArgumentError,
        match=r"^no tool named 'nope'; find one with tool_search, then activate it by the exact "
        "name it shows$",
    ):
        ws.call("tool_activate", {"names": ["file_read", "nope"]}, conversation_id="c1")
    assert len(ws.request_tools("c1")) == 3
    with pytest.raises(InvalidArgumentError, match="bad arguments for tool_activate"):
        ws.call("tool_activate", {"names": []})


def test_tool_search_through_call(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.register_tools("git", GIT)
    hits = ws.call("tool_search", {"query": "show the commit history", "limit": 2})["tools"]
    assert hits[0] == {
        "name": "git_log",
        "server": "git",
        "summary": "Show the commit history of a repository",
        "score": hits[0]["score"],
    }


# -- the labelled catalogue of bench/bench_lean_start.py ------------------------------------

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lean_start"


def _bench_catalogue() -> CapabilityIndex:
    from leanreplay.index import tool_schemas
    from leanreplay.index._workspace import META_TOOLS

    index = CapabilityIndex([t for t in tool_schemas("mcp") if t["name"] not in META_TOOLS])
    for server in json.loads((BENCH / "catalogue.json").read_text())["servers"]:
        index.add(server["tools"], server=server["server"])
    return index


@pytest.mark.parametrize("subset", ["requests", "heldout"])
def test_tool_search_finds_the_labelled_tool_in_the_top_5(subset: str) -> None:
    # Real servers' descriptions (npm snapshot) and requests written from them; the held-out
    # set was written before the search was tuned. A regression in the vocabulary or the
    # boosts shows here as a recall drop.
    index = _bench_catalogue()
    labelled = json.loads((BENCH / "requests.json").read_text())[subset]
    assert len({r["tool"] for r in labelled}) == len(
        {r["tool"] for r in labelled} & {c.name for c in index.capabilities}
    ), "a label names a tool the catalogue does not have"
    found = sum(r["tool"] in [h["name"] for h in index.search(r["request"], 5)] for r in labelled)
    assert found / len(labelled) >= 0.9


def test_tool_call_runs_an_activated_tool_of_the_conversation(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    ws = Workspace(tmp_path / "home", roots=[tmp_path])
    ws.register_tools("browser", BROWSER)
    arguments = {"path": str(tmp_path / "notes.txt"), "end_line": 1}
    with pytest.raises(
        InvalidArgumentError, match=r"call tool_activate with names=\['file_read'\]"
    ):
        ws.call("tool_call", {"name": "file_read", "arguments": arguments}, conversation_id="c1")
    ws.call("tool_activate", {"names": ["file_read", "browser_click"]}, conversation_id="c1")
    called = ws.call(
        "tool_call", {"name": "file_read", "arguments": arguments}, conversation_id="c1"
    )
    assert called == ws.call("file_read", arguments)
    assert called["content"] == "1\tfirst line"
    with pytest.raises(InvalidArgumentError, match="not active yet"):  # c2 activated nothing
        ws.call("tool_call", {"name": "file_read", "arguments": arguments}, conversation_id="c2")
    with pytest.raises(InvalidArgumentError, match="a tool of server 'browser'"):
        ws.call("tool_call", {"name": "browser_click", "arguments": {}}, conversation_id="c1")
    with pytest.raises(InvalidArgumentError, match="bad arguments for file_read"):
        ws.call("tool_call", {"name": "file_read", "arguments": {}}, conversation_id="c1")
    with pytest.raises(InvalidArgumentError, match="bad arguments for tool_call"):
        ws.call("tool_call", {"name": "file_read"}, conversation_id="c1")


# One word per index field, found in that field only (a field left out of the index loses it).
# Built per test: the index is built at the first search, so a shared one would be checked
# only by whichever test searched it first.
@pytest.fixture
def fields() -> CapabilityIndex:
    index = CapabilityIndex(
        [
            mcp_tool("frobnicate_widget", "Adjusts a thing."),
            mcp_tool("other", "Lists entries.\n\nIn detail: the zeppelin hangar entries."),
            mcp_tool("third", "Moves a record.", target="The glorp destination"),
            mcp_tool("fourth", "Copies a record.", zyzzyva_level="How deep"),
        ],
        server="main",
    )
    index.add([mcp_tool("fifth", "Renames a record.")], server="quuxcorp")
    return index


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("frobnicate", "frobnicate_widget"),  # name
        ("zeppelin", "other"),  # description, past the headline
        ("glorp", "third"),  # a parameter's description
        ("zyzzyva", "fourth"),  # a parameter's name
        ("quuxcorp", "fifth"),  # server
    ],
    ids=["name", "description", "param-description", "param-name", "server"],
)
def test_each_index_field_is_searched(fields: CapabilityIndex, query: str, expected: str) -> None:
    assert [hit["name"] for hit in fields.search(query)] == [expected]


def test_the_headline_and_the_name_weigh_more_than_the_rest() -> None:
    # The same word once in each tool, the same length of text: where it stands decides.
    index = CapabilityIndex(
        [
            mcp_tool("a_tool", "Tidies folders.\n\nAlso plonk the mail."),
            mcp_tool("b_tool", "Plonk the mail.\n\nAlso tidies folders."),
            mcp_tool("c_tool", "Tidies folders.\n\nAlso sorts the mail.", x="plonk the mail"),
            mcp_tool("plonk_tool", "Tidies folders.\n\nAlso sorts the mail."),
        ],
        server="s",
    )
    ranked = [hit["name"] for hit in index.search("plonk", limit=4)]
    assert ranked == ["plonk_tool", "b_tool", "a_tool", "c_tool"]


def test_a_headline_shows_unprintable_characters_as_escapes() -> None:
    # Another server's text goes into the system prompt and onto terminals: a BEL, a bidi
    # override, a noncharacter and a tag character beyond the BMP are written out.
    assert summary_line("Beep\x07 and \u202e now") == "Beep\\u0007 and \\u202e now"
    assert summary_line("Tag \U000e0001 here \uffff") == "Tag \\U000e0001 here \\uffff"


def test_tool_problem_names_the_reason_or_none() -> None:
    assert tool_problem(mcp_tool("fine")) is None
    assert tool_problem({"name": "has space", "inputSchema": {}}) == (
        "tool name 'has space' is not 1-64 letters, digits, '_', '-' or '.'"
    )


def test_the_refusal_names_at_most_eight_keys() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        CapabilityIndex([{f"k{i}": i for i in range(10)}])
    assert str(caught.value).endswith("got keys ['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7']")


def test_the_responses_form_and_a_missing_schema() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    responses = {"type": "function", "name": "find", "description": "Find.", "parameters": schema}
    cap = CapabilityIndex([responses]).get("find")
    assert (cap.description, dict(cap.input_schema)) == ("Find.", schema)
    # No parameters at all: a tool that takes none.
    bare = {"type": "function", "function": {"name": "ping", "description": "Ping."}}
    assert CapabilityIndex([bare]).get("ping").schema() == {
        "name": "ping",
        "description": "Ping.",
        "inputSchema": {"type": "object", "properties": {}},
    }


def test_a_tool_without_a_description_renders_as_its_name() -> None:
    index = CapabilityIndex([{"name": "ping", "inputSchema": {}, "description": None}], server="s")
    assert index.get("ping").description == ""
    assert index.render() == "[s]\nping"


def test_mcp_annotations_are_kept_and_a_non_object_is_dropped() -> None:
    hints = {"readOnlyHint": True, "title": "Read"}
    index = CapabilityIndex(
        [
            {"name": "read", "inputSchema": {}, "annotations": hints},
            {"name": "odd", "inputSchema": {}, "annotations": "read-only"},
        ]
    )
    assert index.schemas(["read", "odd"]) == [
        {"name": "read", "description": "", "inputSchema": {}, "annotations": hints},
        {"name": "odd", "description": "", "inputSchema": {}},
    ]
    assert index.get("read").schema() == index.schemas(["read"])[0]


def test_an_sdk_object_becomes_plain_json_by_its_wire_names() -> None:
    from mcp_types import ToolAnnotations

    tool = Tool(
        name="find",
        input_schema={"type": "object", "required": ("q",)},
        annotations=ToolAnnotations(read_only_hint=True),
    )
    schema = CapabilityIndex([tool]).get("find").schema("mcp")
    assert schema == {
        "name": "find",
        "description": "",
        "inputSchema": {"type": "object", "required": ["q"]},
        "annotations": {"readOnlyHint": True},
    }
    assert type(schema["inputSchema"]["required"]) is list


def test_the_server_name_keeps_its_letters_digits_and_inner_dashes() -> None:
    index = CapabilityIndex([mcp_tool("scan")], server="(X-Ray)")
    assert index.get("scan").server == "X-Ray"
    with pytest.raises(InvalidArgumentError, match="^server name '!!!' has no letters or digits$"):
        index.add([mcp_tool("scan")], server="!!!")
    assert list(index.tools) == []  # the definitions given at construction are not held twice


def test_a_name_listed_twice_by_one_server_keeps_the_first() -> None:
    index = CapabilityIndex(
        [
            {"name": "x", "description": "Same.", "inputSchema": {"type": "object"}},
            {"name": "x", "description": "Same.", "inputSchema": {"properties": {}}},
        ],
        server="s",
    )
    assert index.add([mcp_tool("x", "Zebra."), mcp_tool("x", "Apple.")], server="t") == [
        "t_x",
        "t_x",
    ]
    assert index.get("x").input_schema == {"type": "object"}
    assert index.get("t_x").description == "Zebra."
    assert len(index) == 2


def test_a_taken_prefixed_name_gets_the_next_free_number() -> None:
    index = CapabilityIndex([mcp_tool("read")], server="fs")
    assert index.add([mcp_tool("read"), mcp_tool("gh_read")], server="gh") == [
        "gh_read",
        "gh_read_2",
    ]
    index.add([mcp_tool("read"), mcp_tool("gl_read"), mcp_tool("gl_read_2")], server="x")
    assert index.add([mcp_tool("read")], server="gl") == ["gl_read_3"]


def test_a_prefixed_name_is_cut_to_64_chars_with_room_for_its_number() -> None:
    name = "a" * 62
    index = CapabilityIndex([mcp_tool(name)], server="fs")
    assert index.add([mcp_tool(name)], server="gh") == ["gh_" + "a" * 61]
    index = CapabilityIndex([mcp_tool(name), mcp_tool("gh_" + "a" * 61)], server="fs")
    assert index.add([mcp_tool(name)], server="gh") == ["gh_" + "a" * 58 + "_2"]


def test_the_index_holds_at_most_max_tools() -> None:
    from leanreplay.index.search._capabilities import MAX_TOOLS

    index = CapabilityIndex([mcp_tool(f"t{i}") for i in range(MAX_TOOLS)], server="s")
    with pytest.raises(
        InvalidArgumentError, match=f"^the capability index holds at most {MAX_TOOLS} tools$"
    ):
        index.add([mcp_tool("one_more")], server="s")
    assert len(index) == MAX_TOOLS


def test_search_returns_at_most_limit_hits_with_scores_to_three_places() -> None:
    index = CapabilityIndex(
        [mcp_tool(f"tool_{i}", "Read a file. " + "More words here. " * i) for i in range(8)],
        server="s",
    )
    hits = index.search("read file")
    assert len(hits) == 5  # the default limit
    assert len(index.search("read file", limit=2)) == 2
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) == len(scores)
    assert all(score == round(score, 3) and score != round(score, 2) for score in scores)


def test_a_number_finds_only_tools_that_mention_it(catalogue: CapabilityIndex) -> None:
    assert catalogue.search("2") == []


def test_search_splits_camel_case_and_keeps_phrases_whole(catalogue: CapabilityIndex) -> None:
    assert [hit["name"] for hit in catalogue.search("commitHistory", limit=1)] == ["git_log"]
    # git_diff says "commit" too, but not the phrase.
    assert [hit["name"] for hit in catalogue.search('"commit history"')] == ["git_log"]
    assert [hit["name"] for hit in catalogue.search('"commit history" zzz')] == ["git_log"]


def test_an_all_filler_query_still_searches_its_words() -> None:
    index = CapabilityIndex([mcp_tool("a_tool", "Read this."), mcp_tool("b_tool", "Read that.")])
    assert {hit["name"] for hit in index.search("this and that")} == {"a_tool", "b_tool"}
