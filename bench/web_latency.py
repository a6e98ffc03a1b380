"""`kata web`: from the click on Check to the verdict on the page, beside `kata check` from the
CLI, measured in the same run; the first page's time and the page's own assets.

For a passing gqa file (a correct solution) and a failing one (a mistake fixture, diagnosed):
  cli    wall time of `kata check gqa --json` on the workspace file (a fresh process each time);
  cold   the first Check after `kata web` starts (its grading process still loading torch and
         the sandbox), measured in the page: click -> the verdict element appears;
  warm   later Checks of a changed text (a new comment line each time), the median.
And:
  first page  from starting `kata web` to the first page answered (HTTP 200);
  assets      bytes a kata's page and a mock interview's page load from the server (HTML,
              scripts, styles, the editor), by the browser's resource timing.
Goals: cold <= 1.3x cli; warm <= 0.15x cli; first page <= 1 s; assets <= 2 MB.
Needs the `web` and `dev` extras and a Chromium with its chromedriver (Debian: chromium,
chromium-driver).

    python bench/web_latency.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from installed import kata_script

REPO = Path(__file__).resolve().parent.parent
WRONG = REPO / "tests/fixtures/mistakes/gqa/kv-repeat-instead-of-interleave.py"
GOALS = {"cold": 1.3, "warm": 0.15, "first_page": 1.0, "assets_mb": 2.0}

CLICK_TO_VERDICT = """
const [text, done] = [arguments[0], arguments[arguments.length - 1]];
const result = document.getElementById("result"), status = document.getElementById("status");
result.innerHTML = "";
window.attnkataEditor.setValue(text);
const t0 = performance.now();
const seen = new MutationObserver(() => {
  const verdict = result.querySelector("[data-testid=verdict]");
  if (verdict) { seen.disconnect(); done({ms: performance.now() - t0, status: verdict.dataset.status}); }
  else if (status.className.includes("bad")) { seen.disconnect(); done({error: status.textContent}); }
});
seen.observe(result, {childList: true, subtree: true});
seen.observe(status, {childList: true, subtree: true, attributes: true});
document.querySelector("[data-testid=check]").click();
"""

ASSETS = """
const entries = [performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")];
return entries.map(e => [e.name, e.decodedBodySize || e.encodedBodySize || 0]);
"""


def cli_check(kata_bin: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([kata_bin, "check", "gqa", "--json"], env=env, capture_output=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"kata check exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def start_server(kata_bin: str, env: dict[str, str]) -> tuple[subprocess.Popen, str, float]:
    """`kata web`, and the seconds from its start to its first page answered."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [kata_bin, "web", "--no-browser", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", proc.stdout.readline())
    if found is None:
        sys.exit("kata web did not start")
    url = found[0]
    token = url.split("token=")[1]
    while True:
        req = urllib.request.Request(url.split("?")[0], headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                if res.status == 200:
                    return proc, url, time.perf_counter() - t0
        except OSError:
            time.sleep(0.005)


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.binary_location = shutil.which("chromium") or shutil.which("google-chrome")
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    driver.set_script_timeout(600)
    return driver


def click(driver, text: str) -> tuple[float, str]:
    got = driver.execute_async_script(CLICK_TO_VERDICT, text)
    if "error" in got:
        sys.exit(f"the page said: {got['error']}")
    return got["ms"] / 1000, got["status"]


def assets(driver, url: str) -> int:
    driver.get(url)
    time.sleep(0.5)
    return sum(int(size) for _, size in driver.execute_script(ASSETS))


def mock_session(url: str) -> str:
    """Start a mock interview of gqa through the page's own endpoint; its page's path."""
    import json

    origin, token = url.split("/?token=")
    req = urllib.request.Request(
        origin + "/api/mock/start",
        data=json.dumps({"katas": ["gqa"], "minutes": 30}).encode(),
        method="POST",
        headers={
            "Authorization": f"token {token}",
            "Origin": origin,
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(req, timeout=60) as res:
        return json.loads(res.read())["url"].lstrip("/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    kata_bin = kata_script()
    work = Path(tempfile.mkdtemp(prefix="attnkata-web-bench-"))
    env = {**os.environ, "KATA_HOME": str(work / "home"), "KATA_WORKSPACE": str(work / "ws")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    wrong = WRONG.read_text(encoding="utf-8")
    cases = {
        "passing": wrong.replace(".repeat(1, n_rep, 1, 1)", ".repeat_interleave(n_rep, dim=1)"),
        "failing": wrong,
    }
    file = work / "ws" / "gqa" / "gqa.py"
    file.parent.mkdir(parents=True)
    print(f"gqa: {args.runs} runs each, on {os.cpu_count()} cores")
    cli: dict[str, float] = {}
    for name, text in cases.items():
        file.write_text(text, encoding="utf-8")
        cli_check(kata_bin, env)  # page cache
        cli[name] = statistics.median(cli_check(kata_bin, env) for _ in range(args.runs))

    verdict = {}
    colds: dict[str, list[float]] = {n: [] for n in cases}
    warms: dict[str, list[float]] = {n: [] for n in cases}
    first_pages: list[float] = []
    driver = browser()
    try:
        # Cold: a fresh server for each run, the Check clicked as soon as the page is there.
        for i in range(args.runs):
            for name, text in cases.items():
                proc, url, first = start_server(kata_bin, env)
                first_pages.append(first)
                try:
                    driver.get(url)
                    driver.get(url.split("?")[0] + "kata/gqa")
                    seconds, verdict[name] = click(driver, text + f"\n# cold {i}\n")
                    colds[name].append(seconds)
                    if i == 0:  # warm: the same server, later checks
                        for j in range(args.runs + 1):
                            seconds, _ = click(driver, text + f"\n# warm {j}\n")
                            if j:
                                warms[name].append(seconds)
                    if i == 0 and name == "passing":
                        kata_page = assets(driver, url.split("?")[0] + "kata/gqa")
                        mock_page = assets(driver, url.split("?")[0] + mock_session(url))
                finally:
                    proc.send_signal(signal.SIGINT)
                    proc.wait(30)
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)

    over = []

    def line(label: str, value: float, unit: str, goal: float, against: str = "") -> None:
        ok = value <= goal
        over.extend([] if ok else [label])
        print(
            f"  {label:28s} {value:8.3f} {unit:3s} {against:32s} goal <= {goal:g}  {'OK' if ok else 'OVER'}"
        )

    for name in cases:
        c, w, base = statistics.median(colds[name]), statistics.median(warms[name]), cli[name]
        print(
            f"{name} ({verdict[name]}): kata check (CLI) median {base:.3f} s; page cold median {c:.3f} s "
            f"(min {min(colds[name]):.3f}, max {max(colds[name]):.3f}); page warm median {w:.3f} s "
            f"(min {min(warms[name]):.3f}, max {max(warms[name]):.3f})"
        )
        line(f"{name}: cold / cli", c / base, "x", GOALS["cold"])
        line(f"{name}: warm / cli", w / base, "x", GOALS["warm"])
    fp = statistics.median(first_pages)
    line("first page", fp, "s", GOALS["first_page"], f"(max {max(first_pages):.3f} s)")
    line("assets, kata page", kata_page / 1e6, "MB", GOALS["assets_mb"])
    line("assets, mock page", mock_page / 1e6, "MB", GOALS["assets_mb"])
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
