"""`kata web` over HTTP, without a browser: the guard (token, Host, same origin, body size),
bad input answered with clear messages while the server keeps serving, the page and the CLI
on one file, and Ctrl-C ending every process it started. One server for the module."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from web_support import WebServer

from attnkata.checker.catalog import get_kata
from attnkata.checker.static import MAX_SOURCE_BYTES

MUTANTS = Path(__file__).parent / "fixtures" / "mistakes"

pytestmark = pytest.mark.slow


def graded_set(root):
    """A one-kata problem set graded for three students (one the copy of another, one wrong)."""
    from attnkata.checker.skeleton import reference_path

    right = reference_path("sdpa").read_text()
    students = {
        "alice": right,
        "bob": right.replace("scores", "logits"),  # a copy with renamed variables
        "carol": right.replace(
            "scale = 1.0 / math.sqrt(d) if scale is None else scale", "scale = 1.0"
        ),
    }
    assert students["carol"] != right
    env = {**os.environ, "KATA_HOME": str(root / "set-home")}
    bundle, subs, grades = root / "set", root / "submissions", root / "grades"
    for name, source in students.items():
        (subs / name).mkdir(parents=True)
        (subs / name / "sdpa.py").write_text(source)
    for args in (
        ["set", "create", "--katas", "sdpa", "--out", bundle, "--public-tests", "0"],
        ["set", "grade", bundle, subs, "--jobs", "1", "--timeout", "4", "--quiet", "--out", grades],
    ):
        res = subprocess.run(
            [sys.executable, "-m", "attnkata", *map(str, args)],
            env=env,
            capture_output=True,
            text=True,
        )
        assert res.returncode in (0, 1), res.stderr
    return bundle, grades


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("web")
    bundle, grades = graded_set(root)
    s = WebServer(root, "--set", str(bundle), "--grades", str(grades))
    yield s
    code, left = s.stop()
    assert code == 130 and not left, (code, left)  # 130: stopped by Ctrl-C, as every command


def test_without_the_token_every_page_and_endpoint_is_403(server):
    for method, path in [
        ("GET", "/"),
        ("GET", "/kata/gqa"),
        ("GET", "/static/app.css"),
        ("GET", "/api/kata/gqa/file"),
        ("POST", "/api/kata/gqa/check"),
        ("PUT", "/api/kata/gqa/file"),
        ("GET", "/mock"),
        ("GET", "/instructor"),
    ]:
        status, body, _ = server.request(method, path, {}, token=False)
        assert status == 403, (method, path)
        assert "token" in body["error"]
    status, _, _ = server.request("GET", "/", token=False, headers={"Authorization": "token wrong"})
    assert status == 403


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_address_bar(server):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", f"/kata/gqa?token={server.token}&lang=zh")
    res = conn.getresponse()
    assert res.status == 303
    assert res.getheader("Location") == "/kata/gqa?lang=zh"
    cookie = res.getheader("Set-Cookie")
    assert f"attnkata-token-{server.port}={server.token}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    res.read()
    conn.request("GET", "/kata/gqa?lang=zh", headers={"Cookie": cookie.split(";")[0]})
    page = conn.getresponse()
    assert page.status == 200
    text = page.read().decode()
    assert get_kata("gqa").title.zh in text and 'lang="zh-CN"' in text


def test_a_foreign_host_header_is_refused(server):
    # DNS rebinding: a name of another site re-pointed at 127.0.0.1 sends its own Host.
    status, body, _ = server.request("GET", "/", headers={"Host": "evil.example:80"})
    assert status == 403 and "127.0.0.1" in body["error"]
    status, _, _ = server.request("GET", "/", headers={"Host": f"localhost:{server.port}"})
    assert status == 200


def test_a_cross_origin_post_is_refused_even_with_the_token(server):
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{server.port + 1}"},
        {"Origin": "null"},
    ):
        status, body, _ = server.request("POST", "/api/kata/gqa/hint", {}, headers=headers)
        assert status == 403 and "cross-origin" in body["error"], headers
    # No Origin and no Referer: not a page of this server either.
    status, _, _ = server.request(
        "PUT", "/api/kata/sdpa/file", {"text": "x"}, headers={"Origin": ""}
    )
    assert status == 403
    assert not (server.workspace / "sdpa" / "sdpa.py").exists()


def test_every_answer_forbids_loading_anything_from_elsewhere(server):
    status, page, headers = server.request("GET", "/kata/gqa")
    assert status == 200
    csp = headers["content-security-policy"]
    assert (
        "default-src 'self'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    )
    assert headers["x-frame-options"] == "DENY"
    assert "http://" not in page.replace(server.origin, "").split("<main>")[0]


def test_the_server_listens_on_127_0_0_1_only(server):
    out = (
        subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
        if sys.platform == "linux"
        else ""
    )
    lines = [line for line in out.splitlines() if f":{server.port} " in line]
    if not lines:
        pytest.skip("ss is not available")
    assert all("127.0.0.1:" in line for line in lines), lines


def test_an_unknown_kata_is_a_clear_404_with_the_closest_ids(server):
    status, page, _ = server.request("GET", "/kata/gqaa")
    assert status == 404
    assert "unknown kata" in page and "gqa" in page and "Traceback" not in page
    status, body, _ = server.request("POST", "/api/kata/nope/check", {"text": "x"})
    assert status == 404 and "unknown kata" in body["error"]


def test_a_5_mb_paste_is_refused_and_the_file_is_untouched(server):
    path = server.workspace / "sdpa" / "sdpa.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# mine\n")
    status, body, _ = server.request("PUT", "/api/kata/sdpa/file", {"text": "x" * (5 << 20)})
    assert status == 413 and "MiB" in body["error"]
    status, body, _ = server.request(
        "PUT", "/api/kata/sdpa/file", {"text": "y" * (MAX_SOURCE_BYTES + 10)}
    )
    assert status == 413 and "unchanged" in body["error"]
    assert path.read_text() == "# mine\n"
    status, _, _ = server.request("GET", "/")
    assert status == 200


def test_a_file_that_is_not_utf8_is_shown_read_only_and_never_overwritten(server):
    path = server.workspace / "mha" / "mha.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "# caf\xe9\n".encode("latin-1")
    path.write_bytes(data)
    status, body, _ = server.request("GET", "/api/kata/mha/file")
    assert status == 200 and body["utf8"] is False
    status, body, _ = server.request(
        "PUT", "/api/kata/mha/file", {"text": "x", "base": body["sha"]}
    )
    assert status == 409 and "UTF-8" in body["error"]
    status, body, _ = server.request("POST", "/api/kata/mha/check", {})
    assert status == 200 and "UTF-8" in body["error"]
    assert path.read_bytes() == data
    status, page, _ = server.request("GET", "/kata/mha")
    assert status == 200 and "not UTF-8" in page


def test_bad_json_is_a_message_not_a_traceback(server):
    status, body, _ = server.request("POST", "/api/kata/gqa/check", raw=b"{nope")
    assert status == 400 and "JSON" in body["error"]
    status, body, _ = server.request("POST", "/api/mock/start", {"katas": ["nope"]})
    assert status == 404 and "unknown kata" in body["error"]


def test_a_save_over_a_version_the_page_never_saw_keeps_it_as_a_backup(server):
    path = server.workspace / "mqa" / "mqa.py"
    status, body, _ = server.request("PUT", "/api/kata/mqa/file", {"text": "v1\n", "base": None})
    assert status == 200 and path.read_text() == "v1\n"
    first = body["sha"]
    path.write_text("from another editor\n")
    status, body, _ = server.request("PUT", "/api/kata/mqa/file", {"text": "v2\n", "base": first})
    assert status == 200 and body["backup"]
    assert path.read_text() == "v2\n"
    assert open(body["backup"]).read() == "from another editor\n"


def test_the_page_and_kata_check_grade_the_same_file_and_share_the_history(server):
    from attnkata.checker.skeleton import reference_path

    source = reference_path("sdpa").read_text()
    status, body, _ = server.request("POST", "/api/kata/sdpa/check", {"text": source, "base": None})
    assert status == 200 and body["status"] == "pass", body
    path = server.workspace / "sdpa" / "sdpa.py"
    assert path.read_text() == source
    cli = subprocess.run(
        [sys.executable, "-m", "attnkata", "check", "sdpa", "--json"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    hist = subprocess.run(
        [sys.executable, "-m", "attnkata", "history", "sdpa", "--json"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    import json

    modes = [r["mode"] for r in json.loads(hist.stdout)]
    assert modes.count("web") == 1 and modes.count("practice") == 1, modes


def test_kata_web_refuses_a_set_without_its_grades():
    res = subprocess.run(
        [sys.executable, "-m", "attnkata", "web", "--no-browser", "--set", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "--grades" in res.stderr and "Traceback" not in res.stderr


def test_the_instructor_page_is_the_class_report_live(server):
    status, page, _ = server.request("GET", "/instructor")
    assert status == 200, page
    for part in (
        'class="students"',
        'class="mistakes"',
        'data-testid="students-code"',
        "side-by-side",
    ):
        assert part in page, part
    assert page.count('class="student-code"') == 3
    assert "def scaled_dot_product_attention" in page  # each student's code
    assert 'src="/static/instructor.js' in page  # sortable, and drawn again when grades change
    status, first, _ = server.request("GET", "/api/instructor/stamp")
    results = server.home.parent / "grades" / "results.json"
    os.utime(results, (results.stat().st_atime, results.stat().st_mtime + 5))
    status, second, _ = server.request("GET", "/api/instructor/stamp")
    assert second["stamp"] > first["stamp"]


def test_the_web_stack_stays_out_of_the_other_commands():
    code = (
        "import sys; from attnkata.cli.app import app; from attnkata.cli.commands import practice, mock;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'jinja2')"
        " or m.startswith('attnkata.cli.web')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_everything_the_pages_load_ships_in_the_wheel():
    import fnmatch
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["attnkata.cli.web"]
    web = root / "cli" / "web"
    shipped = [
        p for p in web.rglob("*") if p.is_file() and p.parent.name in ("templates", "static", "ace")
    ]
    assert len(shipped) > 20
    for path in shipped:
        rel = path.relative_to(web).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), rel


def test_a_newer_check_of_the_same_file_cancels_the_running_one(server):
    from concurrent.futures import ThreadPoolExecutor

    from attnkata.checker.skeleton import reference_path

    loop = "def scaled_dot_product_attention(q, k, v, mask=None, scale=None):\n    while True:\n        pass\n"
    right = reference_path("sdpa").read_text()
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(server.request, "POST", "/api/kata/sdpa/check", {"text": loop})
        time.sleep(1.5)  # the loop is running in the sandbox
        second = pool.submit(server.request, "POST", "/api/kata/sdpa/check", {"text": right})
        (s1, b1, _), (s2, b2, _) = first.result(), second.result()
    assert s1 == 200 and b1.get("cancelled") and "newer check" in b1["message"], b1
    assert s2 == 200 and b2["status"] == "pass", b2
    assert (server.workspace / "sdpa" / "sdpa.py").read_text() == right


def test_hint_climbs_the_ladder_for_the_mistake_the_page_diagnosed(server):
    # The ladder's rungs may grade the file and verify a fix: that happens in the grading
    # process, and the page shows rung 1 (the property, no code), then rung 2 (where).
    source = (MUTANTS / "gqa" / "kv-repeat-instead-of-interleave.py").read_text()
    status, body, _ = server.request("POST", "/api/kata/gqa/check", {"text": source, "base": None})
    assert status == 200 and body["status"] == "fail", body
    status, one, _ = server.request("POST", "/api/kata/gqa/hint", {})
    assert status == 200, one
    assert "kv-repeat-instead-of-interleave" in one["label"] and "1" in one["label"]
    assert "<code>" not in one["html"]  # rung 1: in words
    status, two, _ = server.request("POST", "/api/kata/gqa/hint", {})
    assert status == 200 and "2" in two["label"] and two["html"] != one["html"], two
