"""The shape of the Deck's page script, read from its files (no browser): native ES modules
under ``deck/static/js/``, one per panel plus a few shared ones, each at most about 400
lines, loaded from one ``<script type="module">``; imports are relative (so the Deck works
mounted under a prefix), reach every module and run in one direction (panels tell each other
of changes through the store, not by importing each other both ways); user text reaches the
page through text nodes only; and every module is served as JavaScript under a prefix."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

import httpx
from starlette.applications import Starlette
from starlette.routing import Mount

import chokaq.deck
from chokaq.app import App
from chokaq.deck import Principal, Role, create_deck

DECK = Path(chokaq.deck.__file__).parent
JS = DECK / "static" / "js"
MAX_LINES = 400
IMPORT = re.compile(r"^import\s[^;]*?\sfrom\s\"([^\"]+)\";$", re.M)
# Ways to write markup (user text would be parsed as HTML) or to run a string as code (which
# the Content-Security-Policy refuses anyway, so it could only fail in front of an operator).
FORBIDDEN = (
    "innerHTML",
    "outerHTML",
    "insertAdjacentHTML",
    "document.write",
    "createContextualFragment",
    "eval(",
    "new Function",
)


def modules() -> dict[str, str]:
    found = {path.name: path.read_text("utf-8") for path in sorted(JS.glob("*.js"))}
    assert "main.js" in found and "store.js" in found and "api.js" in found, sorted(found)
    return found


def imports(text: str) -> list[str]:
    return IMPORT.findall(text)


def test_every_module_is_at_most_about_400_lines() -> None:
    sizes = {name: text.count("\n") for name, text in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}, sizes
    assert not list((DECK / "static").glob("deck.js")), "the one-file script is gone"


def test_the_page_loads_one_module_and_no_inline_script() -> None:
    page = (DECK / "templates" / "index.html").read_text("utf-8")
    tags = re.findall(r"<script\b[^>]*>", page)
    assert tags == [
        '<script src="{{ base }}/static/theme.js">',  # the theme, before the first paint
        '<script type="module" src="{{ base }}/static/js/main.js">',
    ]
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", page, flags=re.S) == ["", ""]


def test_imports_are_relative_reach_every_module_and_run_one_way() -> None:
    found = modules()
    graph: dict[str, list[str]] = {}
    for name, text in found.items():
        specs = imports(text)
        assert all(re.fullmatch(r"\./[a-z-]+\.js", s) for s in specs), (name, specs)
        graph[name] = [s[2:] for s in specs]
        assert set(graph[name]) <= set(found), (name, graph[name])
        # Every import is a whole static statement, which the regex sees.
        assert len(re.findall(r"^import\b", text, re.M)) == len(specs), name
        assert "import(" not in text, name

    reached: set[str] = set()
    todo = ["main.js"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += graph[name]
    assert reached == set(found), set(found) - reached

    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, "import cycle: " + " -> ".join((*path, name))
        if name in done:
            return
        for dep in graph[name]:
            visit(dep, (*path, name))
        done.add(name)

    visit("main.js", ())


def test_each_panel_module_exports_init_and_main_starts_it() -> None:
    found = modules()
    main = found["main.js"]
    shared = {"main.js", "store.js", "api.js", "config.js", "dom.js", "format.js", "link.js"}
    shared |= {"actions.js"}  # the actions on jobs by id, used by the table, bulk bar and inspector
    for name, text in found.items():
        if name in shared:
            continue
        assert re.search(r"^export function init\(\)", text, re.M), name
        assert f'from "./{name}"' in main, name


def test_no_module_writes_markup_or_runs_strings() -> None:
    for name, text in modules().items():
        code = re.sub(r"//[^\n]*", "", text)  # comments may name what the code must not do
        assert [word for word in FORBIDDEN if word in code] == [], name


async def test_every_module_is_served_as_javascript_under_a_prefix(tmp_path: Path) -> None:
    deck = create_deck(
        App(f"sqlite:///{tmp_path / 'unused.db'}"),
        authorizer=lambda request: Principal("ops", Role.ADMIN),
    )
    host = Starlette(routes=[Mount("/ops/chokaq", app=deck)])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=host), base_url="http://host.test"
    ) as c:
        page = await c.get("/ops/chokaq/")
        entry = re.search(r'<script type="module" src="([^"]+)"', page.text)
        assert entry and entry.group(1) == "/ops/chokaq/static/js/main.js"
        # Follow the imports as the browser does: each resolved against its module's URL.
        seen: set[str] = set()
        todo = [urljoin(str(c.base_url), entry.group(1))]
        while todo:
            url = todo.pop()
            if url in seen:
                continue
            seen.add(url)
            r = await c.get(url)
            # A module script needs a JavaScript MIME type (the Deck also sends nosniff).
            assert r.status_code == 200, url
            assert r.headers["content-type"].split(";")[0] in (
                "text/javascript",
                "application/javascript",
            ), (url, r.headers["content-type"])
            assert "'self'" in r.headers["content-security-policy"]
            todo += [urljoin(url, spec) for spec in imports(r.text)]
    assert {url.rsplit("/", 1)[1] for url in seen} == set(modules())
    assert all(url.startswith("http://host.test/ops/chokaq/static/js/") for url in seen)
    # The head names every module for preloading (all fetched at once, not one level of
    # imports after another), under the mount, and no file that is not a module.
    preloaded = re.findall(r'<link rel="modulepreload" href="([^"]+)">', page.text)
    assert sorted(preloaded) == sorted(f"/ops/chokaq/static/js/{name}" for name in modules())
