"""The exhibit (and the example) in the URL (design 0084): the address bar follows the exhibit
tabs, so a pasted link, a reload and Back/Forward land on the exhibit the user chose; an unknown
exhibit in a link gives way to the default with no error. Nothing here runs a snippet: the
exhibit titles come from the registry and the examples' text from their files."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from e2e.browser import editor_text, open_exhibit, set_code
from exhibits.registry import EXHIBITS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = next(iter(EXHIBITS))
REMAT_LAYERS = (ROOT / "exhibits" / "partial_eval" / "examples" / "remat_layers.py").read_text()


def place(page: Page) -> tuple[str | None, str | None]:
    """The exhibit and the example the URL's fragment names."""
    fragment = page.url.partition("#")[2]
    fields = dict(part.partition("=")[::2] for part in fragment.split("&") if "=" in part)
    return fields.get("e"), fields.get("x")


def title_is(page: Page, exhibit: str) -> None:
    expect(page.get_by_test_id("exhibit-title")).to_have_text(EXHIBITS[exhibit].title)


def test_tabs_are_history_entries_and_the_url_names_the_exhibit(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "transpose")
    expect(page).to_have_url(re.compile(r"#e=transpose(&|$)"))
    page.get_by_test_id("exhibit-jvp").click()
    title_is(page, "jvp")
    assert place(page)[0] == "jvp"
    # Back returns to the exhibit before (not out of the app), Forward comes back.
    page.go_back()
    title_is(page, "transpose")
    assert place(page)[0] == "transpose"
    page.go_back()
    title_is(page, DEFAULT)
    page.go_forward()
    title_is(page, "transpose")
    page.go_forward()
    title_is(page, "jvp")
    # A reload stays on it, with the editor's text (the draft) as it was (the lines CodeMirror
    # renders: a long example is drawn in part).
    typed = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.cos(x) * x\n\nargs = (2.0,)\n"
    set_code(page, typed)
    # The draft is saved 300 ms after the last edit: wait until it is (a busy machine's timers
    # fire late), not for a fixed time.
    page.wait_for_function(
        "t => (localStorage.getItem('jaxscope:draft:editor') || '').includes(t)",
        arg="jnp.cos(x) * x",
    )
    page.reload()
    title_is(page, "jvp")
    expect(page.get_by_test_id("editor").locator(".cm-line").nth(3)).to_be_attached()
    assert editor_text(page).strip() == typed.strip()
    assert place(page) == ("jvp", None)
    page.screenshot(path=str(screenshots / "url-place-back.png"))
    assert console_errors == []


def test_a_pasted_link_opens_its_exhibit_and_example_in_a_fresh_browser(
    browser: Browser, base_url: str
) -> None:
    """A fresh context (no localStorage): only the link says where to go."""
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.goto("/#e=partial_eval&x=remat_layers")
    title_is(page, "partial_eval")
    expect(page.get_by_test_id("example-select")).to_have_value("remat_layers")
    expect(page.get_by_test_id("editor")).to_contain_text("checkpoint_name")
    assert editor_text(page).strip() == REMAT_LAYERS.strip()
    assert place(page) == ("partial_eval", "remat_layers")
    # Editing the example makes it the user's code: the URL stops naming the example.
    set_code(page, "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x)\n\nargs = (1.0,)\n")
    expect(page.get_by_test_id("example-select")).to_have_value("")
    expect(page).to_have_url(re.compile(r"#e=partial_eval$"))
    # Picking an example names it again.
    page.get_by_test_id("example-select").select_option("sin_times_x")
    expect(page).to_have_url(re.compile(r"#e=partial_eval&x=sin_times_x$"))
    context.close()

    # An unknown exhibit (or example) falls back to the default, silently, and the URL says so.
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.goto("/#e=no_such_exhibit&x=nope")
    title_is(page, DEFAULT)
    expect(page.get_by_test_id("example-select")).not_to_have_value("")
    expect(page).to_have_url(re.compile(rf"#e={DEFAULT}(&x=\w+)?$"))
    assert page.get_by_test_id("catalogue-error").count() == 0
    # An unknown example of a known exhibit: the exhibit, with its default example.
    page.goto("/#e=transpose&x=nope")
    title_is(page, "transpose")
    expect(page.get_by_test_id("example-select")).not_to_have_value("")
    context.close()
    assert errors == []


def test_a_link_keeps_its_example_when_the_catalogue_fails_to_load(
    browser: Browser, base_url: str
) -> None:
    """The example a link names is loaded once the catalogue arrives; when it does not (a server
    restarting), the address bar keeps naming it, so that a reload still opens it."""
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    page.route("**/api/exhibits*", lambda route: route.abort())
    page.goto("/#e=partial_eval&x=remat_layers")
    expect(page.get_by_test_id("catalogue-error")).to_be_visible()
    assert place(page) == ("partial_eval", "remat_layers")
    page.unroute("**/api/exhibits*")
    page.reload()
    expect(page.get_by_test_id("example-select")).to_have_value("remat_layers")
    assert place(page) == ("partial_eval", "remat_layers")
    context.close()
