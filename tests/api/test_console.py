"""The console at `/ui`, end to end: a real API on the real Redis and broker, driven in headless Chromium.

Each test checks what the user sees against what REST says, and takes a screenshot that is checked
(a real PNG of a rendered page, not blank). Set `STREAMJOIN_UI_SCREENSHOTS=<dir>` to keep them.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from streamjoin.engine import JoinPlan

from .publish import WINDOWLESS_QUERY
from .server import TOKEN, ApiServer
from .test_results import produce

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
MakeTopic = Callable[..., str]
CQL = "SELECT * FROM a [RANGE 100], b [ROWS 50], c [RANGE 10] WHERE a.src = b.src AND b.src = c.src"
BAD_CQL = "SELECT * FROM a [RANGE 1], b [ROWS 1] WHERE a.x = b.src OR"

sync_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():  # scripts/lib.sh installs Debian's chromium
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium", allow_module_level=True)


def png_check(path: Path, min_width: int, min_height: int) -> None:
    """Assert `path` is a PNG at least this large whose pixels are not all one colour."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= min_width and height >= min_height, (width, height)
    idat, at = b"", 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if data[at + 4 : at + 8] == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    pixels = zlib.decompress(idat)
    assert len(set(pixels)) > 20, "the screenshot is blank"


def keep(path: Path) -> None:
    target = os.environ.get("STREAMJOIN_UI_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


@pytest.fixture
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def console(streams: ApiServer, browser: Any, make_topic: MakeTopic) -> Iterator[Any]:
    """The console open on an API with streams a, b, c and query `flows` (not claimed by any joiner)."""
    body = {"name": "flows", "cql": CQL, "output": {"topic": make_topic("console")}}
    assert streams.client.post("/v1/queries", json=body).status_code == 201
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    thrown: list[str] = []
    page.on("pageerror", lambda e: thrown.append(str(e)))
    response = page.goto(streams.url + "/ui")
    assert response is not None and response.status == 200
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    page.fill("#token", TOKEN)
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("#queries tr[data-query=flows]")
    yield page
    page.close()
    assert not [e for e in errors if "Content Security Policy" in e], errors
    assert thrown == []  # the script never threw


def test_lists_streams_and_queries_with_status_and_why(
    console: Any, streams: ApiServer, tmp_path: Path
) -> None:
    row = console.locator("#queries tr[data-query=flows]")
    public = streams.client.get("/v1/queries/flows").json()
    assert row.locator(".status").inner_text() == public["status"] == "pending"
    assert "no joiner has claimed it" in row.locator(".why").inner_text()
    names = console.locator("#streams tbody tr").evaluate_all("rows => rows.map(r => r.dataset.stream)")
    assert names == [s["name"] for s in streams.client.get("/v1/streams").json()] == ["a", "b", "c"]
    shot = tmp_path / "console-overview.png"
    console.screenshot(path=shot, full_page=True)
    png_check(shot, 1400, 600)
    keep(shot)


def test_plan_picture_has_one_node_per_stream_and_each_origins_order(
    console: Any, streams: ApiServer, tmp_path: Path
) -> None:
    plan = JoinPlan.from_global(["b", "a", "c"], 42.0)
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread: publish from another
        pool.submit(streams.call, "write_plan", "flows", plan, statistics={}).result()
    console.click("#queries tr[data-query=flows] td.name")
    svg = console.locator("#plan svg.plan")
    svg.wait_for()
    assert svg.get_attribute("data-query") == "flows"
    nodes = svg.locator(".stream-node").evaluate_all("g => g.map(n => n.dataset.stream)")
    assert nodes == ["a", "b", "c"]
    plan = streams.client.get("/v1/queries/flows/plan").json()
    for origin, order in plan["local_orders"].items():
        drawn = svg.locator(f".probe-row[data-origin={origin}] .step").evaluate_all(
            "g => g.map(n => n.dataset.stream)"
        )
        assert drawn == [origin, *[s for s in order if s != origin]]
    assert svg.locator(".cost-estimated").text_content().endswith("42")
    shot = tmp_path / "console-plan.png"
    svg.screenshot(path=shot)
    png_check(shot, 300, 150)
    keep(shot)


def test_editor_shows_the_parsers_message_and_registers_nothing(
    console: Any, streams: ApiServer, tmp_path: Path
) -> None:
    before = streams.dump()
    console.select_option("#q-lang", "cql")
    console.fill("#q-text", BAD_CQL)
    console.wait_for_selector("#validation.error")
    rest = streams.client.post(
        "/v1/queries:validate", json={"name": "my_query", "cql": BAD_CQL, "output": {"topic": "my_query.out"}}
    )
    assert rest.status_code == 422
    assert rest.json()["detail"] in console.inner_text("#validation")
    position = rest.json()["position"]
    assert console.inner_text("#validation").splitlines()[-2:] == [BAD_CQL, " " * position + "^"]
    shot = tmp_path / "console-editor-error.png"
    console.locator("#editor-section").screenshot(path=shot)
    png_check(shot, 300, 100)
    keep(shot)
    console.fill("#q-text", "SELECT * FROM a [RANGE 1], c [ROWS 1] WHERE a.k = c.k")
    console.wait_for_selector("#validation.ok")
    assert console.inner_text("#validation") == "valid: reads a, c"
    assert streams.dump() == before  # validating stored nothing
    shot = tmp_path / "console-editor.png"
    console.locator("#editor-section").screenshot(path=shot)
    png_check(shot, 300, 100)
    keep(shot)


def test_the_caret_points_at_the_error_in_a_line_too_long_to_fit(console: Any, streams: ApiServer) -> None:
    """A wrapped line would put the caret under the wrong character: the excerpt never wraps."""
    padding = " AND ".join(f"x.src = y.src{n}" for n in range(12))  # a line wider than the editor
    text = f"SELECT * FROM a [RANGE 5] AS x\nJOIN b [ROWS 2] AS y ON {padding} AND x.q = y.q JION c"
    console.select_option("#q-lang", "sql")
    console.fill("#q-text", text)
    console.wait_for_selector("#validation.error pre.excerpt")
    body = {"name": "my_query", "sql": text, "output": {"topic": "my_query.out"}}
    rest = streams.client.post("/v1/queries:validate", json=body).json()
    assert rest["position"] == text.index("JION") and "did you mean JOIN?" in rest["detail"]
    column = rest["position"] - text.index("\n") - 1
    geometry = console.evaluate(
        """column => {
            const pre = document.querySelector("#validation pre.excerpt");
            const at = (span, i) => {
                const range = document.createRange();
                range.setStart(span.firstChild, i);
                range.setEnd(span.firstChild, i + 1);
                return range.getBoundingClientRect();
            };
            const line = pre.querySelector(".line"), caret = pre.querySelector(".caret");
            const char = at(line, column), mark = at(caret, caret.textContent.length - 1);
            const box = pre.getBoundingClientRect();
            return {text: line.textContent, lines: line.getClientRects().length, charX: char.left,
                    markX: mark.left, visible: mark.left >= box.left && mark.right <= box.right,
                    scrolls: pre.scrollWidth > pre.clientWidth};
        }""",
        column,
    )
    assert geometry["text"] == text.splitlines()[1] and geometry["lines"] == 1  # one line, unwrapped
    assert geometry["scrolls"] and geometry["visible"]  # wider than the box, scrolled to the caret
    assert abs(geometry["charX"] - geometry["markX"]) < 1, geometry  # the caret under the J of JION


def test_the_query_list_refreshes_by_itself(console: Any, streams: ApiServer) -> None:
    body = {"name": "later", "cql": "SELECT * FROM a [RANGE 5], c [ROWS 1] WHERE a.k = c.k"}
    response = streams.client.post("/v1/queries", json={**body, "output": {"topic": "later.out"}})
    assert response.status_code == 201
    console.wait_for_selector("#queries tr[data-query=later]", timeout=10_000)  # nobody clicked Refresh
    assert console.locator("#queries tr[data-query=flows]").count() == 1
    streams.client.delete("/v1/queries/later")
    console.wait_for_selector("#queries tr[data-query=later]", state="detached", timeout=10_000)


def test_patch_from_the_console_changes_the_control(console: Any, streams: ApiServer) -> None:
    url = "/v1/control/queries/flows"
    assert streams.client.get(url).json()["attributes"]["order"] == "auto"
    console.fill("input[data-control='flows.order']", '["c", "b", "a"]')
    console.click("button[data-apply='flows.order']")
    console.wait_for_function(
        '() => document.querySelector("input[data-control=\'flows.order\']").value === \'["c","b","a"]\''
    )
    assert streams.client.get(url).json()["attributes"]["order"] == ["c", "b", "a"]
    console.fill("input[data-control='flows.order']", '["c", "zz"]')  # the API's 422 is shown
    console.click("button[data-apply='flows.order']")
    console.wait_for_selector("#notice:not([hidden])")
    assert console.inner_text("#notice").startswith("order: ")
    assert streams.client.get(url).json()["attributes"]["order"] == ["c", "b", "a"]


def test_writes_without_the_token_are_refused(console: Any, streams: ApiServer) -> None:
    console.click("#token-clear")
    console.fill("input[data-control='flows.paused']", "true")
    console.click("button[data-apply='flows.paused']")
    console.wait_for_selector("#notice:not([hidden])")
    assert "bearer token is required" in console.inner_text("#notice")
    assert streams.client.get("/v1/control/queries/flows").json()["attributes"]["paused"] is False
    assert console.evaluate("() => sessionStorage.getItem('streamjoin.token')") is None


def test_live_results(console: Any, streams: ApiServer, kafka_broker: str) -> None:
    console.click("#queries tr[data-query=flows] td.name")
    console.wait_for_selector("#results-state:has-text('positioned')")
    topic = streams.client.get("/v1/queries/flows").json()["definition"]["output"]["topic"]
    values = [{"query": "flows", "ts": n, "id": f"r{n}<b>"} for n in range(3)]
    produce(kafka_broker, topic, values)
    console.wait_for_selector("#results-state:has-text('3 result(s)')")
    text = console.inner_text("#results")
    assert [v["id"] for v in values] == [f"r{n}<b>" for n in range(3)] and all(
        f"r{n}<b>" in text for n in range(3)
    )
    assert console.locator("#results b").count() == 0  # shown as text, never as HTML


def test_control_tables_show_a_windowless_input(console: Any, streams: ApiServer) -> None:
    assert streams.client.post("/v1/queries", json=WINDOWLESS_QUERY).status_code == 201
    console.click("#refresh")
    table = console.locator("#control .control-table[data-name='w.c']")
    table.wait_for()
    rows = table.locator("tr").evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert ["window", "null"] in rows and ["stream", "c"] in rows
    assert console.locator("#control .control-table[data-name='flows.a']").count() == 1
    assert console.locator("#notice").is_hidden()


def _offline(page: Any, url: str) -> list[tuple[str, str]]:
    """Close `page`'s network except to `url`; return the list of refused (resource type, URL)."""
    refused: list[tuple[str, str]] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(url + "/"):
            r.continue_()
        else:
            refused.append((r.request.resource_type, r.request.url))
            r.abort()

    page.route("**/*", route)
    return refused


def test_api_reference_pages_load_their_assets_from_the_app(api: ApiServer) -> None:
    for page in ("/docs", "/redoc"):
        html = api.anon.get(page)
        assert html.status_code == 200, html.text
        assets = re.findall(r'(?:src|href)="([^"]+)"', html.text)
        assert assets and all(a.startswith("/docs/static/") for a in assets), assets
        for asset in assets:
            answer = api.anon.get(asset)
            assert answer.status_code == 200 and len(answer.content) > 1000, asset
    assert api.anon.get("/docs/static/nope.js").status_code == 404


def test_swagger_ui_and_redoc_render_the_operations_offline(api: ApiServer, browser: Any) -> None:
    spec = api.anon.get("/openapi.json").json()
    operations = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    refused = _offline(page, api.url)
    page.goto(api.url + "/docs")
    page.wait_for_selector(".opblock-summary-path")
    shown = page.locator(".opblock").evaluate_all(
        "bs => bs.map(b => [b.querySelector('.opblock-summary-method').textContent,"
        " b.querySelector('.opblock-summary-path').dataset.path])"
    )
    assert {tuple(s) for s in shown} == operations
    page.goto(api.url + "/redoc")
    page.wait_for_selector("[data-section-id^='operation/']")
    assert page.locator("[data-section-id^='operation/']").count() == len(operations)
    # Nothing the pages need comes from elsewhere: ReDoc's "by Redocly" logo, an image, is all it asks.
    assert [url for kind, url in refused if kind != "image"] == [], refused
    page.close()
