"""`kata set export`: package a problem set as the autograder of a platform.

- gradescope: `autograder.zip` with `setup.sh` (installs attnkata at this version and its pinned
  CPU build of torch in a virtual environment) and an executable `run_autograder` at the root;
  `run_autograder` reads `$AUTOGRADER_ROOT` (default /autograder), so it runs locally too.
- prairielearn: the question's `info.json` `externalGradingOptions` snippet, the
  `serverFilesCourse/attnkata/` folder (the set and a `run.sh` entrypoint honouring
  `$GRADE_ROOT`, default /grade) and a Dockerfile for the grader image.
- github-classroom: `.github/workflows/classroom.yml` (one step per kata, then the reporter)
  and the set under `.github/attnkata/`.

Every export holds a verified copy of the set (never its grading results).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from importlib import metadata
from pathlib import Path

from attnkata.checker.errors import UsageError
from attnkata.checker.sets.manifest import Manifest, verify_bundle
from attnkata.checker.version import __version__

TARGETS = ("gradescope", "prairielearn", "github-classroom")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PL_IMAGE = "attnkata-grader"


def torch_pin() -> str:
    """The torch this attnkata runs with, as a CPU-wheel requirement (`torch==2.5.1`)."""
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:  # pragma: no cover - attnkata depends on torch
        return "torch"
    return f"torch=={version.split('+')[0]}"


def _install_lines(python: str, wheel_glob: str) -> str:
    """Shell lines that install torch (CPU) and attnkata: the shipped wheel if any, else PyPI."""
    return (f'"{python}" -m pip install --no-cache-dir "{torch_pin()}" --index-url {TORCH_CPU_INDEX}\n'
            f'if ls {wheel_glob} >/dev/null 2>&1; then\n'
            f'  "{python}" -m pip install --no-cache-dir {wheel_glob}\n'
            f'else\n'
            f'  "{python}" -m pip install --no-cache-dir "attnkata=={__version__}"\n'
            f'fi\n')


def _copy_set(bundle: Path, dest: Path) -> None:
    """The bundle without its grading results (they hold other students' work)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        skip = {n for n in names if n in ("__pycache__", ".DS_Store")}
        if here == (bundle / "instructor").resolve():
            skip.add("results")
        return skip

    shutil.copytree(bundle, dest, ignore=ignore)


# -- Gradescope ------------------------------------------------------------------------------------
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image: attnkata {version} and the
# CPU build of torch it was tested with, in a virtual environment (newer Ubuntu images refuse
# system-wide pip installs). attnkata needs Python >= 3.11 (Gradescope's Ubuntu 24.04 image).
set -euo pipefail
cd "$(dirname "$0")"
PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY="$candidate"; break
  fi
done
if [ -z "$PY" ]; then
  apt-get update && apt-get install -y python3.11 python3.11-venv
  PY=python3.11
fi
apt-get install -y python3-venv >/dev/null 2>&1 || true
"$PY" -m venv /opt/attnkata
{install}ln -sf /opt/attnkata/bin/kata /usr/local/bin/kata
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. $AUTOGRADER_ROOT (default /autograder) holds
# source/ (this zip), submission/ (the student's files) and results/ (results.json goes there).
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
KATA="${ATTNKATA_KATA:-kata}"
"$KATA" set autograde "$ROOT/source/set" "$ROOT/submission" --format gradescope \\
  --out "$ROOT/results/results.json"
code=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  # No result means attnkata itself failed (a changed set, a broken install): say so, score 0.
  printf '{"score": 0, "output": "The autograder could not grade this submission (attnkata exit code %s). This is not your fault: please tell your instructor.", "tests": []}\\n' "$code" > "$ROOT/results/results.json"
fi
exit 0
"""


def _zip_add(z: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    z.writestr(info, data)


def export_gradescope(bundle: Path, out: Path, wheel: Path | None) -> Path:
    if out.is_dir() or out.suffix != ".zip":
        out = out / "autograder.zip"  # a folder (existing or not) gets Gradescope's usual name
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    with zipfile.ZipFile(tmp, "w") as z:
        _zip_add(z, "setup.sh", SETUP_SH.format(version=__version__,
                                                install=_install_lines("/opt/attnkata/bin/python",
                                                                       "wheels/attnkata-*.whl")).encode(),
                 executable=True)
        _zip_add(z, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
        if wheel is not None:
            _zip_add(z, f"wheels/{wheel.name}", wheel.read_bytes())
        for p in sorted(bundle.rglob("*")):
            rel = p.relative_to(bundle)
            if p.is_file() and not rel.as_posix().startswith("instructor/results/") and "__pycache__" not in rel.parts:
                _zip_add(z, f"set/{rel.as_posix()}", p.read_bytes())
    os.replace(tmp, out)
    return out


# -- PrairieLearn ----------------------------------------------------------------------------------
RUN_SH = """#!/usr/bin/env bash
# PrairieLearn's external grader entrypoint. $GRADE_ROOT (default /grade) holds student/ (the
# submitted files), serverFilesCourse/attnkata/ (this folder) and results/ (results.json).
set -uo pipefail
ROOT="${GRADE_ROOT:-/grade}"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
KATA="${ATTNKATA_KATA:-kata}"
"$KATA" set autograde "$HERE/set" "$ROOT/student" --format prairielearn --out "$ROOT/results/results.json"
code=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  printf '{"gradable": false, "score": 0, "message": "The autograder failed (attnkata exit code %s); this attempt does not count.", "format_errors": ["attnkata could not grade this submission"], "tests": []}\\n' "$code" > "$ROOT/results/results.json"
fi
exit 0
"""

DOCKERFILE = """# The grader image for PrairieLearn: build and push it, then name it in info.json.
#   docker build -t {image}:{version} .
FROM python:3.12-slim
COPY wheels/ /tmp/wheels/
RUN set -e; PY=python; \\
{install}    rm -rf /tmp/wheels
"""


def export_prairielearn(bundle: Path, out: Path, wheel: Path | None, manifest: Manifest) -> Path:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty folder", "export into a new folder")
    files = out / "serverFilesCourse" / "attnkata"
    _copy_set(bundle, files / "set")
    (files / "run.sh").write_text(RUN_SH, encoding="utf-8")
    (files / "run.sh").chmod(0o755)
    (out / "wheels").mkdir()
    if wheel is not None:
        shutil.copy2(wheel, out / "wheels" / wheel.name)
    install = _shell_join(_install_lines("$PY", "/tmp/wheels/attnkata-*.whl"))
    (out / "Dockerfile").write_text(DOCKERFILE.format(image=PL_IMAGE, version=__version__, install=install),
                                    encoding="utf-8")
    # Candidates get the set's time per file; the container a little more for start-up.
    timeout = int(manifest.grading.timeout * len(manifest.katas) + 120)
    info = {"externalGradingOptions": {"enabled": True, "image": f"{PL_IMAGE}:{__version__}",
                                       "entrypoint": "/grade/serverFilesCourse/attnkata/run.sh",
                                       "serverFilesCourse": ["attnkata/"], "timeout": timeout}}
    (out / "info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out


def _shell_join(script: str) -> str:
    """A multi-line shell snippet as one Dockerfile RUN continuation."""
    parts = [ln.strip() for ln in script.strip().splitlines()]
    joined = []
    for ln in parts:
        sep = " " if ln.endswith(("then", "else")) or ln in ("then", "else") else "; "
        joined.append(ln + sep)
    return "    " + "".join(joined).rstrip("; ") + "; \\\n"


# -- GitHub Classroom ------------------------------------------------------------------------------
def workflow(manifest: Manifest, set_path: str = ".github/attnkata/set") -> str:
    """`.github/workflows/classroom.yml`: one step per kata, then the grading reporter."""
    steps = []
    for k in manifest.katas:
        minutes = max(2, int(manifest.grading.timeout // 60) + 5)
        steps.append(f"""      - name: {k.id}
        id: {k.id}
        timeout-minutes: {minutes}
        run: kata set autograde {set_path} . --kata {k.id} --format github-classroom --github-output >> "$GITHUB_OUTPUT"
""")
    env = "".join(f"          {k.id.upper()}_RESULTS: \"${{{{ steps.{k.id}.outputs.result }}}}\"\n" for k in manifest.katas)
    runners = ",".join(manifest.kata_ids)
    install = "".join(f"          {ln}\n" for ln in _install_lines("python", "wheels/attnkata-*.whl").splitlines())
    return f"""# attnkata {__version__}: {manifest.title}
name: Autograding Tests
'on':
  - push
  - repository_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Checkout code
        uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: '3.12'
      - name: Install attnkata
        run: |
{install}{''.join(steps)}      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
{env}        with:
          runners: {runners}
"""


def export_github(bundle: Path, out: Path, manifest: Manifest) -> Path:
    wf = out / ".github" / "workflows" / "classroom.yml"
    dest = out / ".github" / "attnkata" / "set"
    if wf.exists() or dest.exists():
        raise UsageError(f"{out} already has an attnkata workflow or set", "export into a fresh template repository")
    _copy_set(bundle, dest)
    wf.parent.mkdir(parents=True, exist_ok=True)
    wf.write_text(workflow(manifest), encoding="utf-8")
    return wf


def export_set(bundle: Path, target: str, out: Path, wheel: Path | None = None) -> Path:
    """Export the verified set in `bundle` for `target`; returns the main file written."""
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}", f"use one of: {', '.join(TARGETS)}")
    if wheel is not None and not (wheel.is_file() and wheel.name.startswith("attnkata-") and wheel.suffix == ".whl"):
        raise UsageError(f"{wheel} is not an attnkata wheel", "build one with `python -m pip wheel --no-deps .`")
    bundle, out = Path(bundle), Path(out)
    manifest, _warnings = verify_bundle(bundle)
    if target == "gradescope":
        return export_gradescope(bundle, out, wheel)
    if target == "prairielearn":
        return export_prairielearn(bundle, out, wheel, manifest)
    return export_github(bundle, out, manifest)
