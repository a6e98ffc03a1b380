"""`kata web` in a real headless Chromium (the OS's, driven by Selenium through its
chromedriver): practise gqa from the list to a diagnosed mistake marked in the gutter and then
a pass; a save from another editor shows up; two tabs check at once; a mock interview from the
start to the scorecard and the replay; and no request leaves for any host but the server.
One server and one browser for the module; skipped, with the reason, without a browser."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from web_support import WebServer, browser_missing, chromium, requested_urls, until, wait_for

from attnkata.checker.skeleton import reference_path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(browser_missing() is not None, reason=browser_missing() or ""),
]

# The classic mistake: tile the KV heads (h -> h % Hkv) instead of interleaving them (h -> h // g).
GQA_WRONG = (FIXTURES / "mistakes" / "gqa" / "kv-repeat-instead-of-interleave.py").read_text()
GQA_RIGHT = GQA_WRONG.replace(".repeat(1, n_rep, 1, 1)", ".repeat_interleave(n_rep, dim=1)")
assert GQA_RIGHT.count("repeat_interleave") == 2
SDPA_RIGHT = reference_path("sdpa").read_text()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory):
    server = WebServer(tmp_path_factory.mktemp("webui"))
    driver = chromium()
    driver.get(server.url)  # the token becomes this browser's cookie
    seen: list[str] = []
    try:
        yield server, driver, seen
    finally:
        seen += requested_urls(driver)
        driver.quit()
        server.stop()


def by(driver, css):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def all_by(driver, css):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def check_and_wait(driver, timeout=120):
    """Click Check; the new verdict's text (pass / fail / timeout / error)."""
    driver.execute_script("document.getElementById('result').innerHTML = ''")
    by(driver, "[data-testid=check]").click()
    return wait_for(driver, "[data-testid=verdict]", timeout).text.lower()


def test_practise_gqa_from_the_list_to_the_diagnosis_and_a_pass(web):
    server, driver, seen = web
    driver.get(server.url)
    listing = wait_for(driver, "[data-testid=kata-list]")
    assert "gqa" in listing.text
    assert "token" not in driver.current_url  # into the cookie, out of the address bar
    by(driver, "[data-testid=kata-link-gqa]").click()
    wait_for(driver, "[data-testid=editor] .ace_content")
    assert "GroupedQueryAttention" in driver.execute_script(
        "return window.attnkataEditor.getValue()"
    )
    driver.execute_script("window.attnkataEditor.setValue(arguments[0])", GQA_WRONG)
    assert "fail" in check_and_wait(driver)
    cards = all_by(driver, "[data-testid=diagnosis]")
    card = next(
        c for c in cards if c.get_attribute("data-mistake") == "kv-repeat-instead-of-interleave"
    )
    line = int(card.get_attribute("data-lines").split(",")[0])
    assert "repeat(" in GQA_WRONG.splitlines()[line - 1]
    assert line in driver.execute_script("return window.attnkataEditor.markedLines()")
    gutter = [c.text for c in all_by(driver, ".ace_gutter-cell.attnkata-mark")]
    assert str(line) in gutter
    # The failing tests are collapsed: the diagnosis explains them.
    assert by(driver, "[data-testid=failing]").get_attribute("open") is None
    # The page's file is the CLI's file.
    path = server.workspace / "gqa" / "gqa.py"
    assert path.read_text() == GQA_WRONG
    driver.execute_script("window.attnkataEditor.setValue(arguments[0])", GQA_RIGHT)
    assert "pass" in check_and_wait(driver)
    assert not driver.execute_script("return window.attnkataEditor.markedLines()")
    assert path.read_text() == GQA_RIGHT
    by(driver, "[data-testid=hint-button]").click()
    assert until(lambda: by(driver, "[data-testid=hint]").text.strip())
    by(driver, "[data-testid=history-button]").click()
    history = until(lambda: by(driver, "[data-testid=history]").text)
    assert history.count("(web)") == 2


def test_a_save_from_another_editor_shows_up_within_a_second(web):
    server, driver, _ = web
    driver.get(f"{server.origin}/kata/gqa")
    wait_for(driver, "[data-testid=editor] .ace_content")
    time.sleep(0.6)  # the page has loaded the file and polls it
    path = server.workspace / "gqa" / "gqa.py"
    text = GQA_RIGHT + "\n# saved from vim\n"
    t0 = time.monotonic()
    path.write_text(text)
    assert until(
        lambda: driver.execute_script("return window.attnkataEditor.getValue()") == text, 3
    )
    assert time.monotonic() - t0 < 1.0


def test_an_infinite_loop_is_a_verdict_and_the_server_keeps_serving(web):
    server, driver, _ = web
    driver.get(f"{server.origin}/kata/sdpa")
    wait_for(driver, "[data-testid=editor] .ace_content")
    loop = "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n"
    driver.execute_script("window.attnkataEditor.setValue(arguments[0])", loop)
    assert "timeout" in check_and_wait(driver, 180)
    driver.get(server.origin + "/")
    assert wait_for(driver, "[data-testid=kata-list]")


def test_two_tabs_checking_at_once_both_get_an_answer(web):
    server, driver, _ = web
    driver.get(f"{server.origin}/kata/gqa")
    wait_for(driver, "[data-testid=editor] .ace_content")
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(f"{server.origin}/kata/gqa")
    wait_for(driver, "[data-testid=editor] .ace_content")
    second = driver.current_window_handle
    for handle in (first, second):
        driver.switch_to.window(handle)
        driver.execute_script("document.getElementById('result').innerHTML = ''")
        by(driver, "[data-testid=check]").click()
    answers = []
    for handle in (first, second):
        driver.switch_to.window(handle)

        def answered():
            verdicts = all_by(driver, "[data-testid=verdict]")
            if verdicts:
                return verdicts[0].text
            status = by(driver, "[data-testid=status]").text
            return status if "newer check" in status else None

        answers.append(until(answered, 120))
    # The same text from both tabs is graded once and both tabs get its verdict (a different
    # text would cancel the older check, whose tab says so).
    assert all(a.lower() in ("pass", "fail") or "newer check" in a for a in answers), answers
    driver.close()
    driver.switch_to.window(first)


def test_a_mock_interview_from_start_to_scorecard_and_replay(web):
    server, driver, _ = web
    driver.get(f"{server.origin}/mock")
    by(driver, "[data-testid=mock-kata-sdpa]").click()
    by(driver, "[data-testid=mock-minutes]").send_keys("30")
    by(driver, "[data-testid=mock-start]").click()
    clock = wait_for(driver, "[data-testid=clock]", 60)
    assert until(lambda: re.fullmatch(r"(29|30):\d\d", clock.text))
    before = clock.text
    # The plain editor: completion extensions told to stay off, no spell checking.
    assert all_by(driver, "meta[name='codeium:type'][content=none]")
    assert by(driver, ".ace_text-input").get_attribute("spellcheck") == "false"
    wait_for(driver, "[data-testid=editor] .ace_content")
    driver.execute_script("window.attnkataEditor.setValue(arguments[0])", SDPA_RIGHT)
    driver.execute_script("window.attnkataEditor.ace.onPaste('# pasted from my notes\\n')")
    by(driver, "[data-testid=run]").click()
    run = wait_for(driver, "[data-testid=run-result]", 180)
    assert run.get_attribute("data-status") == "pass", run.text
    assert until(lambda: clock.text != before, 3)
    # Leaving and coming back resumes the session, the clock still running.
    driver.get(f"{server.origin}/mock")
    wait_for(driver, "[data-testid=clock]", 30)
    assert "pasted from my notes" in driver.execute_script(
        "return window.attnkataEditor.getValue()"
    )
    by(driver, "[data-testid=submit]").click()
    assert wait_for(driver, "[data-testid=verdict]", 180).text.lower() == "pass"
    finish = by(driver, "[data-testid=finish]")
    finish.click()
    finish.click()  # the second click confirms
    wait_for(driver, "[data-testid=followup]", 180)
    assert not all_by(driver, ".rate:not([hidden])")  # no model answer before the answers
    for fieldset in all_by(driver, "fieldset.question"):
        kind = fieldset.get_attribute("data-kind")
        if kind == "choice":
            all_by(fieldset, "input[type=radio]")[0].click()
        elif kind == "open":
            all_by(fieldset, "textarea")[0].send_keys("Softmax over keys, scaled by 1/sqrt(d).")
        elif kind == "order":
            n = len(all_by(fieldset, ".order-items li"))
            all_by(fieldset, "input")[0].send_keys(" ".join("abcdefgh"[:n]))
        else:
            all_by(fieldset, "input")[0].send_keys("42")
    by(driver, "[data-testid=followup-submit]").click()
    if all_by(driver, "fieldset.question[data-kind=open]"):
        # The model answers appear only now, to rate yourself against.
        rate = wait_for(driver, "fieldset.question[data-kind=open] .rate:not([hidden]) .model")
        assert rate.text.strip()
        for fieldset in all_by(driver, "fieldset.question[data-kind=open]"):
            all_by(fieldset, ".rate input[type=radio]")[1].click()
        by(driver, "[data-testid=followup-submit]").click()
    card = wait_for(driver, "[data-testid=scorecard]", 60)
    assert "sdpa" in card.text
    assert "1 paste" in card.text
    by(driver, "[data-testid=replay-link]").click()
    slider = wait_for(driver, "[data-testid=replay]")
    frames = int(slider.get_attribute("max")) + 1
    assert frames >= 4  # save(s), the paste, the run, the submit
    marks = [m.text for m in all_by(driver, "#marks li")]
    assert any("paste" in m for m in marks) and any("run" in m and "pass" in m for m in marks)
    assert any("submit" in m and "pass" in m for m in marks)
    driver.execute_script(
        "arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'))", slider
    )
    assert "1/" in by(driver, "[data-testid=replay-info]").text


def test_no_request_ever_leaves_for_another_host(web):
    server, driver, seen = web
    seen += requested_urls(driver)
    assert len(seen) > 20
    foreign = [
        u for u in seen if not u.startswith((server.origin + "/", "data:", "blob:", "about:"))
    ]
    assert not foreign, foreign
