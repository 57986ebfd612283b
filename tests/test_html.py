"""``isrcheck show --format html``: the page is written by the console script, then loaded in headless
Chromium (Debian's ``chromium``; ``.ci/run`` installs it), stepped with the keyboard, and its screenshot
inspected. Without Chromium these tests are skipped, saying how to install it; under ``CI=true`` they fail."""
import colorsys
import json
import os
import re
import subprocess

import numpy as np
import pytest

from browser import Browser, chromium_binary, read_png
from isrcheck.checker.traces.html import to_html
from isrcheck.checker.traces.trace import load, spec_for
from isrcheck.model.present import step_label

KIP101 = "counterexamples/kip-101/no-committed-loss.itf.json"
TLA = "counterexamples/tla-kip320-first-try/weak-isr.itf.json"
RED = (217, 45, 32)                      # the lost record's outline


def epoch_rgb(epoch):
    """The page's colour for a leader epoch (hsl((e*137.5+200) mod 360, 70%, 80%)) in RGB."""
    r, g, b = colorsys.hls_to_rgb(((epoch * 137.5 + 200) % 360) / 360, 0.8, 0.7)
    return round(r * 255), round(g * 255), round(b * 255)


NO_BROWSER = ("headless Chromium is needed for the HTML viewer's test: install it with `apt-get install -y chromium` "
              "(Debian, Ubuntu) or `brew install --cask chromium` (macOS); .ci/run installs it")


@pytest.fixture(scope="module")
def browser():
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":          # CI never passes a browser test it did not run
            pytest.fail(f"{NO_BROWSER} (CI=true: not skipped)")
        pytest.skip(NO_BROWSER)
    b = Browser(binary)
    yield b
    b.close()


def write_page(tmp_path, trace):
    page = tmp_path / "trace.html"
    run = subprocess.run(["isrcheck", "show", trace, "--format", "html", "--output", str(page)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and f"wrote {page}" in run.stderr
    return page


def step(browser):
    return int(browser.eval("document.body.dataset.step"))


def test_kafka_trace_steps_with_the_keyboard_and_shows_the_lost_record(tmp_path, browser):
    page = write_page(tmp_path, KIP101)
    text = page.read_text()
    # self-contained: nothing fetched, and the policy forbids fetching anything
    assert not re.search(r"""(src|href)\s*=|@import|url\(|https?://""", text)
    assert "default-src 'none'" in text
    trace = load(KIP101)
    spec = spec_for(trace)
    present = spec.presentation
    last = len(trace.steps) - 1
    lost_at = next(line.step for line in present.explain(trace) if line.kind == "lost")
    before, after = trace.steps[lost_at - 1][2], trace.steps[lost_at][2]
    gone = [str(m) for r in range(present.R) for o, m, _ in present.log_cells(before, r)
            if (o, m) not in {(o2, m2) for o2, m2, _ in present.log_cells(after, r)}]
    record, offset = present.lost(trace)

    browser.open(f"file://{page}")
    assert step(browser) == 0
    assert browser.eval("document.getElementById('action').textContent") == "0. initial state"
    browser.press("End")
    assert step(browser) == last
    assert browser.eval("document.querySelectorAll('#rows tr').length") == present.R
    assert "violated" in browser.eval("[...document.querySelectorAll('#notes li')].map(li => li.className)")
    browser.press("Home")
    for _ in range(lost_at):
        browser.press("ArrowRight")
    assert step(browser) == lost_at
    # the step that loses the record: what it removes is drawn struck through, the lost record outlined
    name, params, _ = trace.steps[lost_at]
    assert browser.eval("document.getElementById('action').textContent") == f"{lost_at}. {step_label(name, params)}"
    assert browser.eval("[...document.querySelectorAll('.cell.gone')].map(c => c.firstChild.textContent)") == gone
    assert browser.eval("[...document.querySelectorAll('.cell.lost')].map(c => c.firstChild.textContent)") \
        and str(record) in browser.eval("[...document.querySelectorAll('.cell.lost')].map(c => c.firstChild.textContent)")
    assert browser.eval("document.querySelector('#notes li.lost .kind').textContent") == "lost"
    assert browser.eval("[...document.querySelectorAll('#rows td.name')].map(td => td.textContent)") == [
        f"r{r}" + ("believes it leads" if present.believes_leads(after, r) else "") for r in range(present.R)]
    assert browser.eval("[...document.querySelectorAll('#rows td.changed')].length") >= 1
    assert "HW" in browser.eval("document.querySelector('.mark').textContent")
    shot = read_png(browser.screenshot())
    assert shot.shape[:2] == (800, 1280)
    pixels = shot.reshape(-1, shot.shape[2])[:, :3].astype(int)
    assert len(np.unique(pixels, axis=0)) > 200                  # not blank: text, cells, colours
    assert (np.abs(pixels - RED).max(axis=1) <= 2).sum() > 500    # the lost record's red outline
    epoch = next(e for r in range(present.R) for _, _, e in present.log_cells(after, r))
    assert (np.abs(pixels - epoch_rgb(epoch)).max(axis=1) <= 2).sum() > 500   # a log cell in its epoch's colour
    browser.press("Home")
    assert step(browser) == 0
    browser.press("ArrowLeft")
    assert step(browser) == 0                                    # stays at the first step
    browser.press("ArrowRight")
    assert step(browser) == 1
    browser.press("ArrowLeft")
    assert step(browser) == 0


def test_tla_family_renders_from_its_presentation(tmp_path, browser):
    page = write_page(tmp_path, TLA)
    trace = load(TLA)
    browser.open(f"file://{page}#{len(trace.steps) - 1}")
    assert step(browser) == len(trace.steps) - 1
    heads = browser.eval("[...document.querySelectorAll('#head th')].map(th => th.textContent)")
    assert heads[:3] == ["replica", "log (offset:id@epoch)", "LEO"] and "ISR" in heads
    assert browser.eval("document.querySelectorAll('#rows tr').length") == trace.bounds["replicas"]
    cells = browser.eval("[...document.querySelectorAll('.cell:not(.empty):not(.gone)')].length")
    assert cells == sum(trace.steps[-1][2]["log_end_offset"])
    assert "weak-isr breaks here" in browser.eval("document.getElementById('notes').textContent")


def test_hostile_action_name_is_text_not_markup(tmp_path, browser):
    trace = load(TLA)
    spec = spec_for(trace)
    evil = "</script><script>document.title='pwned'</script><img src=x onerror=alert(1)><b id=evil>"
    name, params, state = trace.steps[1]
    trace.steps[1] = (evil, {evil: 1}, state)
    page = tmp_path / "evil.html"
    page.write_text(to_html(spec, trace))
    assert page.read_text().count("<script") == 2 and "</script><script>" not in page.read_text()
    browser.open(f"file://{page}#1")
    assert browser.eval("document.scripts.length") == 2
    assert browser.eval("document.querySelectorAll('img, #evil').length") == 0
    assert browser.eval("document.title") != "pwned"
    assert evil in browser.eval("document.getElementById('action').textContent")


def test_html_needs_an_output_file_and_a_writable_one(tmp_path):
    run = subprocess.run(["isrcheck", "show", KIP101, "--format", "html"], capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip() == "isrcheck: error: --format html writes a page: name the file with --output FILE"
    run = subprocess.run(["isrcheck", "show", KIP101, "--format", "html", "--output",
                          str(tmp_path / "no" / "such" / "dir.html")], capture_output=True, text=True)
    assert run.returncode == 2 and "cannot write" in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_page_data_is_the_traces(tmp_path):
    """The embedded JSON is the trace as the presentation reads it: one entry per state, the lost record."""
    trace = load(KIP101)
    text = to_html(spec_for(trace), trace)
    data = json.loads(re.search(r'id="trace-data">(.*?)</script>', text, re.S).group(1))
    assert len(data["steps"]) == len(trace.steps)
    record, offset = spec_for(trace).presentation.lost(trace)
    assert data["lost"] == {"record": str(record), "offset": offset}
    assert [r["markers"] for r in data["steps"][-1]["replicas"]] == [
        {"LEO": s, "HW": h} for s, h in zip(trace.steps[-1][2]["leo"], trace.steps[-1][2]["hw"])]
