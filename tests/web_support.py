"""What the `kata web` tests share: a server started as a user starts it (`kata web
--no-browser`, its own history and workspace), and a headless Chromium from the OS's packages
driven through its chromedriver (Selenium), with its network log."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
CHROMEDRIVER = shutil.which("chromedriver")


def browser_missing() -> str | None:
    """Why no browser test can run here (None: they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None:
        return "no Chromium (apt-get install chromium chromium-driver)"
    if CHROMEDRIVER is None:
        return "no chromedriver (apt-get install chromium-driver)"
    return None


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class WebServer:
    """`kata web --no-browser` in a process of its own; `url` carries the token."""

    def __init__(self, root: Path, *args: str, lang: str = "en") -> None:
        self.home = root / "home"
        self.workspace = root / "workspace"
        self.env = {
            **os.environ,
            "KATA_HOME": str(self.home),
            "KATA_WORKSPACE": str(self.workspace),
            "KATA_LANG": lang,
        }
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnkata", "web", "--no-browser", "--port", "0", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
        if found is None:
            self.proc.kill()
            raise AssertionError(f"kata web did not start: {line!r} {self.proc.stderr.read()}")
        self.port, self.token = int(found[1]), found[2]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.origin}/?token={self.token}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: bool = True,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON or text, headers) of one request, as a page of this server makes it."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        h = {"Origin": self.origin} if method not in ("GET", "HEAD") else {}
        if token:
            h["Authorization"] = f"token {self.token}"
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        req = urllib.request.Request(self.origin + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=300) as res:
                status, text, got = res.status, res.read().decode(), dict(res.headers)
        except urllib.error.HTTPError as exc:
            status, text, got = exc.code, exc.read().decode(), dict(exc.headers)
        with contextlib.suppress(json.JSONDecodeError):
            return status, json.loads(text), got
        return status, text, got

    def stop(self) -> tuple[int, set[int]]:
        """Ctrl-C, as a user stops it: (exit status, its processes still alive after)."""
        family = _descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(alive(p) for p in family):
            time.sleep(0.1)
        return code, {p for p in family if alive(p)}


def chromium(width: int = 1400, height: int = 1000) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def requested_urls(driver: Any) -> list[str]:
    """Every URL the browser asked for since the last call (Chromium's network log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def wait_for(driver: Any, css: str, timeout: float = 60.0) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css))
    )


def until(predicate: Any, timeout: float = 60.0, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)
