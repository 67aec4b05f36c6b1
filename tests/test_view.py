"""`leanreplay view` in a real browser: Debian's Chromium driven by Playwright, against the
real command serving a home built from the shared transcripts.

One server and one browser per module. Every page is screenshotted into a temporary folder
(printed at the end of the module; set LEANREPLAY_VIEW_SHOTS to keep them somewhere)."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.index.faces.view import SERIES_POINTS

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails under CI) with the reason
    expect = None
from leanreplay.placeholders import (
    CHARS_PER_TOKEN,
    ReplayPolicy,
    content_chars,
    for_provider,
    is_placeholder,
    result_slots,
)
from tests.conftest import REPO, SAMPLES, in_ci, require_transcripts

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
XSS = [
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'onerror'\">",
    "[a link](javascript:window.__pwned='markdown') and "
    "<a href=\"javascript:window.__pwned='href'\">a link</a>",
]
XSS_ID = 'xss"><img src=x onerror=alert(1)>'


def playwright_or_skip() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the test extra installs it
        if in_ci():
            pytest.fail("CI=true but playwright is not installed (the test extra)")
        pytest.skip("needs playwright (pip install -e '.[test]')")
    if not CHROMIUM.exists():
        if in_ci():
            pytest.fail(f"CI=true but {CHROMIUM} is missing (.ci/run installs chromium)")
        pytest.skip(f"needs Chromium at {CHROMIUM}: apt-get install chromium")
    return sync_playwright


def log_facts(path: Path) -> tuple[str, str, str]:
    """The oracle for a Claude Code log: its first user request (whitespace collapsed, at
    most 120 chars) and its first and last record times, as the list shows them."""
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    times = [r["timestamp"] for r in records if isinstance(r, dict) and "timestamp" in r]
    request = next(
        r["message"]["content"]
        for r in records
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str)
    )
    title = " ".join(request.split())
    title = title if len(title) <= 120 else title[:119] + "…"

    def shown(stamp: str) -> str:
        return datetime.fromisoformat(stamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    return title, shown(times[0]), shown(times[-1])


def largest_claude_session(transcripts: Path) -> Path:
    return max(
        (transcripts / "claude-code-m-claude").glob("*.jsonl"), key=lambda p: p.stat().st_size
    )


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    transcripts = require_transcripts()
    folder = Path(tempfile.mkdtemp(prefix="leanreplay-view-"))
    with Workspace(folder, [SAMPLES]) as ws:
        (claude,) = ws.ingest(largest_claude_session(transcripts), conversation_id="claude")
        ws.fold(claude)  # ingest may have folded it already
        assert ws.fold_state(claude) is not None
        ws.ingest(
            transcripts / "claude-code-m-claude" / "554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl",
            conversation_id="unfolded",
        )
        swe = max(
            (transcripts / "mini-swe-agent-pr816").rglob("*.traj.json"),
            key=lambda p: p.stat().st_size,
        )
        ws.ingest(swe, conversation_id="swe")
        ws.ingest(transcripts / "tau-bench" / "gpt-4o-airline.json")
        ws.ingest(SAMPLES / "conversation_with_pdf.jsonl", conversation_id="with-pdf")
        png = base64.b64encode((SAMPLES / "red_64x48.png").read_bytes()).decode()
        ws.append(
            "with-image",
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What color is this?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": png},
                    },
                ],
            },
        )
        ws.append("with-image", {"role": "assistant", "content": "Red."})
        for text in XSS:
            ws.append(XSS_ID, {"role": "user", "content": text})
            ws.append(XSS_ID, {"role": "assistant", "content": text})
        ws.replay("claude", snapshot=True, budget_tokens=192_000)
        ws.replay("claude", snapshot=True, budget_tokens=192_000)
        lean = ws.replay("claude").messages
        window = int(sum(content_chars(m) for m in lean) / CHARS_PER_TOKEN)  # full to the brim
        ws.compact_turn(  # forced, as after a provider's overflow error
            lean, context_window=window, output_reserve=0, conversation_id="claude", force=True
        )
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def digest(home: Path) -> str:
    """Everything the store holds, and the event logs: what the view must never change."""
    db = sqlite3.connect(f"file:{home / 'store.sqlite3'}?mode=ro", uri=True)
    h = hashlib.sha256()
    for table in ("conversations", "messages", "folds", "attachments", "snapshots"):
        for row in db.execute(f"SELECT * FROM {table} ORDER BY rowid"):
            h.update(repr(row).encode())
    db.close()
    for log in sorted((home / "logs").glob("*.jsonl")):
        h.update(log.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[dict[str, Any]]:
    before = digest(home)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LEANREPLAY_TOKEN", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(home),
            "--root",
            str(SAMPLES),
            "view",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the URL to open is the one line on stdout
    found = re.search(r"(http://127\.0\.0\.1:(\d+)/)\?token=(\S+)", line)
    assert found, f"no URL in {line!r}"
    info = {"base": found.group(1), "port": int(found.group(2)), "token": found.group(3)}
    info["url"] = f"{info['base']}?token={info['token']}"
    try:
        yield info
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
    assert digest(home) == before, "the view changed the store or the event log"


@pytest.fixture(scope="module")
def shots() -> Iterator[Path]:
    folder = Path(os.environ.get("LEANREPLAY_VIEW_SHOTS") or tempfile.mkdtemp(prefix="view-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    print(f"\nscreenshots of the view: {folder}")


@pytest.fixture(scope="module")
def browser(server: dict[str, Any]) -> Iterator[Any]:
    sync_playwright = playwright_or_skip()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = chromium.new_context(viewport={"width": 1300, "height": 900})
        page = context.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
        page.goto(server["url"])  # the token once; the cookie from then on
        yield page
        context.close()
        chromium.close()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def request(
    server: dict[str, Any],
    path: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", server["port"], timeout=30)
    try:
        connection.request(
            method, path, headers={"Host": f"127.0.0.1:{server['port']}", **(headers or {})}
        )
        response = connection.getresponse()
        return Answer(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        )
    finally:
        connection.close()


def test_the_token_is_required_then_kept_in_a_cookie(server: dict[str, Any]) -> None:
    assert request(server, "/").status == 401
    assert request(server, "/?token=wrong").status == 401
    assert (
        request(server, "/api/conversation_read?conversation_id=claude&message_id=m1").status == 401
    )
    first = request(server, f"/c?id=claude&token={server['token']}")
    assert first.status == 303
    assert first.getheader("location") == "/c?id=claude"
    cookie = first.getheader("set-cookie") or ""
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    pair = cookie.split(";")[0]
    ok = request(server, "/", headers={"Cookie": pair})
    assert ok.status == 200
    assert "script-src 'self'" in (ok.getheader("content-security-policy") or "")
    bearer = request(server, "/", headers={"Authorization": f"Bearer {server['token']}"})
    assert bearer.status == 200
    # read-only, same host, same origin
    assert request(server, "/", method="POST", headers={"Cookie": pair}).status == 405
    assert request(server, "/", method="DELETE", headers={"Cookie": pair}).status == 405
    # The HTTP faces' one Host rule (faces/_net.HttpPolicy): 421, not this server's address.
    evil_host = request(server, "/", headers={"Cookie": pair, "Host": "evil.example:80"})
    assert evil_host.status == 421
    assert "content-security-policy" in evil_host.headers
    evil_origin = request(server, "/", headers={"Cookie": pair, "Origin": "http://evil.example"})
    assert evil_origin.status == 403
    cross = request(server, "/", headers={"Cookie": pair, "Sec-Fetch-Site": "cross-site"})
    assert cross.status == 403


def test_the_conversation_list_sorts_searches_and_links_to_the_message(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    page.goto(server["base"])
    assert "token=" not in page.url, "the token leaves the address bar"
    with Workspace(home) as ws:
        stats = {s.id: s.messages for s in ws.conversation_stats()}
        replayed = ws.replay("claude")
        hit = ws.conversation_search("sqlfluff", limit=1)["hits"][0]
    rows = page.locator("table.conversations tbody tr")
    assert rows.count() == 50 < len(stats), "a page of 50"
    assert f"page 1 of {-(-len(stats) // 50)}" in page.locator(".pager").inner_text()
    cells = page.locator("table.conversations tbody td:first-child a.cid").all_inner_texts()
    counts = page.locator("table.conversations tbody td:nth-child(2)").all_inner_texts()
    assert {c: int(n.replace(",", "")) for c, n in zip(cells, counts, strict=True)} == {
        c: stats[c] for c in cells
    }
    page.goto(f"{server['base']}?sort=id&dir=asc")
    claude_row = page.locator("table.conversations tbody tr").first
    assert claude_row.locator("td a.cid").first.inner_text() == "claude"
    # Titled by its first request, with the first and last times its log records.
    title, first, last = log_facts(largest_claude_session(require_transcripts()))
    assert claude_row.locator("td .title").inner_text() == title
    assert claude_row.locator("td.when").all_inner_texts() == [first, last]
    heads = page.locator("table.conversations thead th").all_inner_texts()
    assert heads[-2:] == ["first message", "last message"]
    # replay sizes not computed yet arrive after the page, through /api/replay_stats
    expect(claude_row.locator("td.replay")).to_have_text(f"{replayed.chars_out:,}", timeout=60_000)
    expect(claude_row.locator("td.placeholders")).to_have_text(str(replayed.placeholders))
    expect(page.locator("td[data-lazy]")).to_have_count(0, timeout=60_000)
    page.screenshot(path=str(shots / "1-conversations.png"), full_page=True)

    page.click("th >> text=messages")
    counts = [
        int(rows.nth(i).locator("td").nth(1).inner_text().replace(",", ""))
        for i in range(rows.count())
    ]
    assert counts == sorted(counts, reverse=True)
    page.click("th >> text=messages")
    counts = [
        int(rows.nth(i).locator("td").nth(1).inner_text().replace(",", ""))
        for i in range(rows.count())
    ]
    assert counts == sorted(counts)

    page.fill("input[name=q]", "sqlfluff")
    page.click("form.search button")
    first = page.locator("ul.hits li a").first
    assert first.inner_text() == f"{hit['conversation_id']} · {hit['message_id']}"
    page.screenshot(path=str(shots / "2-search.png"), full_page=True)
    first.click()
    target = page.locator("#target")
    assert target.get_attribute("data-id") == hit["message_id"]

    # A conversation appended through the library has no log: no first time, its last write.
    page.goto(f"{server['base']}?sort=id&dir=desc")
    appended = rows.filter(has=page.locator("a.cid", has_text=re.compile("^with-image$")))
    assert appended.locator("td .title").inner_text() == "What color is this?"
    assert appended.locator("td.when").first.inner_text() == "–"
    assert appended.locator("td.when").last.inner_text().endswith(" UTC")


def test_history_shows_originals_the_fold_boundary_and_raw_bytes(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        fold = ws.fold_state("claude")
        assert fold is not None
        total = ws.conversation_stats("claude")[0].messages
        last_id = ws.messages("claude")[-1]["id"]
    page.goto(f"{server['base']}c?id=claude")
    articles = page.locator("article.msg")
    assert articles.last.get_attribute("data-id") == last_id, "the tail comes first"
    assert f"of {total:,}" in page.locator(".pager").first.inner_text()
    page.screenshot(path=str(shots / "3-history.png"))
    page.goto(f"{server['base']}c?id=claude&at={fold['summarized_through_message_id']}#target")
    boundary = page.locator("#fold-boundary")
    assert fold["summarized_through_message_id"] in boundary.inner_text()
    after = page.locator("#fold-boundary + article.msg")
    assert after.get_attribute("id") == f"msg-{fold['summarized_through_message'] + 1}"
    boundary.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "4-history-fold-boundary.png"))
    # the raw link returns the stored bytes
    mid = fold["summarized_through_message_id"]
    with Workspace(home) as ws:
        stored = ws.raw_message("claude", mid)
        original = next(m for m in ws.messages("claude") if m["id"] == mid)
    raw = page.request.get(f"{server['base']}c/raw?id=claude&mid={mid}")
    assert raw.text() == stored
    assert json.loads(raw.text()) == original


def test_an_inline_image_is_shown_with_its_card(
    browser: Any, server: dict[str, Any], shots: Path
) -> None:
    page = browser
    page.goto(f"{server['base']}c?id=with-image")
    image = page.locator("article.msg img.inline")
    assert image.evaluate("img => [img.complete, img.naturalWidth, img.naturalHeight]") == [
        True,
        64,
        48,
    ]
    assert "image/png" in page.locator("article.msg .card").inner_text()
    page.screenshot(path=str(shots / "5b-image.png"))


def test_home_wide_snapshots_and_compactions(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        snaps = ws.snapshots()
        events = ws.compaction_events()
    page.click("header.top >> text=Prompt snapshots")
    assert page.locator("table.snapshots tbody tr").count() == len(snaps)
    page.screenshot(path=str(shots / "13-home-snapshots.png"))
    page.click("header.top >> text=Compactions")
    ids = {e["compaction_id"] for e in events}
    assert page.locator("section.compaction").count() == len(ids)
    page.screenshot(path=str(shots / "14-home-compactions.png"))


def test_an_attachment_shows_as_image_or_card(
    browser: Any, server: dict[str, Any], shots: Path
) -> None:
    page = browser
    page.goto(f"{server['base']}c?id=with-pdf")
    card = page.locator(".card").first
    assert "application/pdf" in card.inner_text()
    page.screenshot(path=str(shots / "5-attachment-card.png"), full_page=True)


def test_a_placeholder_expands_to_what_conversation_read_returns(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        result = ws.replay("unfolded")
    first = next(
        i
        for i, m in enumerate(result.messages)
        for s in result_slots(m)
        if is_placeholder(s.content)
    )
    end = min(len(result.messages), first + 25)  # a page of the replay with placeholders in it
    page.goto(f"{server['base']}c?id=unfolded&tab=replay&end={end}")
    buttons = page.locator("button.placeholder")
    expected = sum(
        1
        for m in result.messages[max(0, end - 50) : end]
        for s in result_slots(m)
        if is_placeholder(s.content)
    )
    assert buttons.count() == expected > 0
    button = buttons.first
    mid = button.get_attribute("data-mid")
    call = button.get_attribute("data-call") or None
    page.screenshot(path=str(shots / "6-replay.png"))
    button.click()
    with Workspace(home) as ws:
        read = ws.conversation_read("unfolded", mid, call)
    label = page.locator(".revealed .label").first
    # the text arrives through fetch: wait for the label that says it came
    expect(label).to_contain_text(f"{len(read['content']):,} of {read['total_chars']:,} chars")
    revealed = page.locator(".revealed pre.original").first
    assert revealed.text_content() == read["content"]
    revealed.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "7-replay-placeholder-opened.png"))
    page.goto(f"{server['base']}c?id=unfolded&tab=replay&provider=anthropic")
    body = json.loads(page.locator("pre.text").first.text_content() or "")
    assert body == for_provider(result.messages, "anthropic")[-50:]


def test_an_agent_loop_ages_its_results_by_assistant_turns(
    browser: Any, server: dict[str, Any], home: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        by_exchange = ws.replay("swe")
        by_turn = ws.replay("swe", ReplayPolicy(age_unit="assistant_turn"))
    assert by_turn.placeholders > 0, "an agent loop's old results age out by assistant turns"
    page.goto(f"{server['base']}c?id=swe&tab=replay")
    facts = page.locator("p.facts", has_text="The model").inner_text()
    assert (
        f"{by_exchange.placeholders} placeholders stand for {by_exchange.elided_chars:,}" in facts
    )
    page.click("text=assistant turns")
    assert "age=assistant_turn" in page.url
    facts = page.locator("p.facts", has_text="The model").inner_text()
    assert f"{by_turn.placeholders} placeholders stand for {by_turn.elided_chars:,}" in facts


def test_the_size_chart_draws_the_fold_series(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        series = [p.to_dict() for p in ws.size_series("claude", max_points=SERIES_POINTS)]
        snaps = ws.snapshots("claude")
    page.goto(f"{server['base']}c?id=claude&tab=size")
    points = page.locator("svg.chart circle.pt")
    drawn = [
        {
            "turn": int(points.nth(i).get_attribute("data-turn") or 0),
            "replay_chars": int(points.nth(i).get_attribute("data-replay") or 0),
            "replay_chars_fold_only": int(points.nth(i).get_attribute("data-fold-only") or 0),
            "stored_chars": int(points.nth(i).get_attribute("data-stored") or 0),
        }
        for i in range(points.count())
    ]
    assert drawn == [{k: p[k] for k in drawn[0]} for p in series]
    assert any(p["folds"] for p in series), "the transcript folds as it grows"
    assert page.locator("svg.chart rect.snap[data-chars]").count() == len(snaps)
    page.screenshot(path=str(shots / "8-size.png"), full_page=True)
    # "what did the model see at turn 10?": a point opens that turn's replay
    points.nth(9).click()
    assert "after turn 10 " in page.locator(".when").inner_text()
    with Workspace(home) as ws:
        then, point = ws.replay_at_turn("claude", 10)
    assert point.turn == 10
    shown = page.locator("article.msg").evaluate_all("els => els.map(e => e.dataset.id)")
    assert shown == [str(m.get("id")) for m in then.messages[-50:]]
    assert f"{then.chars_out:,}</b> chars" in page.content()
    page.screenshot(path=str(shots / "8b-replay-at-turn-10.png"))


def test_summary_compaction_and_snapshot_tabs(
    browser: Any, server: dict[str, Any], home: Path, shots: Path
) -> None:
    page = browser
    with Workspace(home) as ws:
        fold = ws.fold_state("claude")
        events = ws.compaction_events("claude")
        snaps = ws.snapshots("claude")
    assert fold is not None
    page.goto(f"{server['base']}c?id=claude&tab=summary")
    assert page.locator("pre.summary").text_content() == fold["summary"]
    assert fold["summarized_through_message_id"] in page.locator("dl.kv").inner_text()
    page.screenshot(path=str(shots / "9-summary.png"))

    page.goto(f"{server['base']}c?id=claude&tab=compactions")
    (applied,) = [e for e in events if e["event"] == "compaction.applied"]
    card = page.locator("section.compaction")
    assert card.count() == 1
    text = card.inner_text()
    assert f"saved {applied['tokens_saved']:,}" in text
    assert f"saved {applied['chars_saved']:,}" in text
    assert card.locator("tbody tr").count() == len(applied["targets"]) > 0
    page.screenshot(path=str(shots / "10-compactions.png"), full_page=True)

    page.goto(f"{server['base']}c?id=claude&tab=snapshots")
    assert page.locator("table.snapshots tbody tr").count() == len(snaps) == 2
    page.screenshot(path=str(shots / "11-snapshots.png"))


def test_message_text_is_escaped_everywhere(
    browser: Any, server: dict[str, Any], shots: Path
) -> None:
    page = browser
    page.goto(server["base"])
    page.locator("table.conversations a", has_text="xss").click()
    for tab in ("history", "replay"):
        if tab == "replay":
            page.click(".tabs >> text=Replay")
        texts = page.locator("article.msg pre.text").all_text_contents()
        for attack in XSS:
            assert texts.count(attack) == 2, f"{attack!r} is shown as text on {tab}"
        assert page.evaluate("window.__pwned") is None
        assert (
            page.locator("article.msg script, article.msg img, article.msg [onerror]").count() == 0
        )
        links = page.locator("article.msg a").all()
        assert all((a.get_attribute("href") or "").startswith("/c/raw?") for a in links)
        assert page.locator("h1").inner_text() == XSS_ID
        page.screenshot(path=str(shots / f"12-xss-{tab}.png"))
    page.goto(f"{server['base']}?q=pwned")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("ul.hits li").count() > 0
    for link in page.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().startswith("javascript:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "0.0.0.0 is not a loopback address"),
        (["--host", "0.0.0.0", "--allow-remote", "--no-auth"], "allowed only on a loopback"),
        (["--token", "short"], "the token has 5 chars, fewer than 32"),
    ],
)
def test_view_refuses_unsafe_settings(tmp_path: Path, args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from leanreplay.index.faces.cli import cli

    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "view", *args])
    assert result.exit_code == 1
    assert message in result.output
