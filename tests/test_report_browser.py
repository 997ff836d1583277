"""The HTML report in a real headless browser (Debian's chromium, driven by playwright):
the report of a real grading run shows each group, each quote highlighted inside its
turn, and the chart; a report of hostile candidate text runs nothing and loads nothing.
Each test saves a full-page screenshot (into ``$GG_SCREENSHOT_DIR`` when set)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from group_grade import demo, report
from group_grade.results import GradeResult, read_results
from tests.grading import write_rows
from tests.test_reference import calc_rows
from tests.test_report import HOSTILE_QUOTE, JS_LINK, SCRIPT, TEXTAREA, hostile_trace

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MARK_BACKGROUND = "rgb(255, 224, 102)"
"""``mark.quote`` in the report's stylesheet: seen only if the page's policy let it apply."""


def chromium() -> str | None:
    for name in (os.environ.get("GG_CHROMIUM"), "chromium", "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    executable = chromium()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium on this CI machine (.ci/run installs Debian's)")
        pytest.skip("no chromium here (apt-get install chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright_api.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def screenshot(page: object, tmp_path: Path, name: str) -> Path:
    folder = Path(os.environ.get("GG_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    print(f"screenshot: {path}")
    return path


def open_page(context: object, path: Path) -> tuple[object, list[str], list[str]]:
    """The page at ``path``, with every request it made and every dialog it opened."""
    page = context.new_page()
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    return page, requests, dialogs


def flat(text: str) -> str:
    return " ".join(text.split())


def standing_quotes(result: GradeResult) -> list[tuple[str, str]]:
    """(mark id, quote) of every quote of the verdict that the citation check kept."""
    failed = {(f.label, f.turn, f.quote) for f in result.citations.failures}
    assert result.verdict is not None
    return [
        (f"{entry.label}-{number}", evidence.quote)
        for entry in result.verdict.candidates
        for number, evidence in enumerate(entry.evidence, start=1)
        if (entry.label, evidence.turn, evidence.quote) not in failed
    ]


def check_quote(section: object, mark_id: str, quote: str) -> None:
    marks = section.locator(f"mark[data-quote='{mark_id}']")
    assert marks.count() >= 1, mark_id
    assert flat(" ".join(marks.all_inner_texts())) == flat(quote)
    first = marks.first
    first.scroll_into_view_if_needed()
    assert first.is_visible()
    background = first.evaluate("m => getComputedStyle(m).backgroundColor")
    assert background == MARK_BACKGROUND


@pytest.fixture
def demo_run(boxes: Path, tmp_path: Path) -> Path:
    """The demo over the calc rows, run in a thread of its own: playwright's sync API keeps
    an event loop running in this one."""

    def run() -> int:
        rows = write_rows(tmp_path / "rows.jsonl", *asyncio.run(calc_rows(tmp_path)))
        return demo.main(["--source", str(rows), "--output-dir", str(folder)])

    folder = tmp_path / "runs" / "demo"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(run).result() == 0
    return folder


def test_the_report_of_a_real_run_shows_each_group_each_quote_and_the_chart(
    browser: object, demo_run: Path, tmp_path: Path
) -> None:
    results = read_results(demo_run)
    assert len(results) == 2
    page, requests, dialogs = open_page(browser, demo_run / "report.html")
    assert page.title().startswith("group-grade: reference on ")
    for number, result in enumerate(results, start=1):
        link = page.locator(f"table.index a[href='#g{number}']")
        assert link.inner_text() == result.group_id
        section = page.locator(f"section#g{number}")
        assert section.is_visible()
        assert result.group_id in section.locator("h2").inner_text()
        verdict = section.locator("dd.verdict")
        assert verdict.is_visible() and section.locator("dd.truth").is_visible()
        assert [flat(t) for t in verdict.locator(".chip").all_inner_texts()] == [
            *(label for tier in result.verdict.ranking for label in tier),
            *result.confirmed,
            *(result.verdict_line().failed + result.verdict_line().unranked),
        ]
        # The chart: one GAR bar per candidate, as long as its advantage.
        chart = section.locator("svg.chart")
        chart.scroll_into_view_if_needed()
        assert chart.is_visible() and chart.bounding_box()["width"] > 300
        bars = chart.locator("rect.gar")
        assert bars.count() == len(result.row.candidates)
        widths = {
            label: float(chart.locator(f"rect.gar[data-label='{label}']").get_attribute("width"))
            for label in result.records
        }
        biggest = max(abs(r.advantage) for r in result.records.values())
        for label, record in result.records.items():
            assert widths[label] == pytest.approx(abs(record.advantage) / biggest * 200, abs=0.1)
        # Every quote that stood, highlighted inside the candidate's own turn.
        quotes = standing_quotes(result)
        assert quotes, result.group_id
        for mark_id, quote in quotes:
            check_quote(section, f"g{number}-{mark_id}", quote)
        # The grader's tool calls: collapsed until opened.
        calls = section.locator("details.calls")
        first_call = calls.locator("ol.calls > li").first
        assert not first_call.is_visible()
        calls.locator("summary").first.click()
        assert first_call.is_visible()
    screenshot(page, tmp_path, "report-demo-run.png")
    assert dialogs == []
    assert all(url.startswith("file://") for url in requests), requests


def test_hostile_candidate_text_is_shown_and_never_run(browser: object, tmp_path: Path) -> None:
    path = tmp_path / "hostile.html"
    path.write_text(report.render_report([GradeResult.of(hostile_trace())], title=SCRIPT))
    page, requests, dialogs = open_page(browser, path)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.scripts.length") == 0
    planted = "img, iframe, textarea, object, embed, form, svg:not(.chart), a:not([href^='#'])"
    assert page.evaluate(f'document.querySelectorAll("{planted}").length') == 0
    body = page.inner_text("body")
    for text in (SCRIPT, TEXTAREA, JS_LINK):
        assert text in body or flat(text) in flat(body), text
    assert page.title() == SCRIPT
    section = page.locator("section#g1")
    assert "evil/<b>bold</b>" in section.locator("h2").inner_text()
    check_quote(section, "g1-c02-1", HOSTILE_QUOTE)
    check_quote(section, "g1-c02-2", f"command: echo '{TEXTAREA}'")
    before = page.url
    page.get_by_text("click for the fix").first.click()
    section.locator("details.calls summary").first.click()
    section.locator("ol.calls details summary").first.click()
    assert page.url == before and page.evaluate("typeof window.__pwned") == "undefined"
    screenshot(page, tmp_path, "report-hostile.png")
    assert dialogs == []
    assert requests == [path.as_uri()], requests
