"""`kata set export`: package a problem set as the autograder of a platform.

- gradescope: `autograder.zip` with `setup.sh` (installs attnkata and the CPU build of torch
  in a virtual environment) and an executable `run_autograder` at the root; `run_autograder`
  reads `$AUTOGRADER_ROOT` (default /autograder), so it runs locally too.
- prairielearn: the question's `info.json` `externalGradingOptions` snippet, the
  `serverFilesCourse/attnkata/` folder (the set and a `run.sh` entrypoint honouring
  `$GRADE_ROOT`, default /grade) and a Dockerfile for the grader image.
- github-classroom: `.github/workflows/classroom.yml` (one step per kata, then the reporter)
  and the set, the wheel and the constraints under `.github/attnkata/`.

Every export holds a verified copy of the set (never its grading results), `constraints.txt`
(the versions of attnkata's dependencies it runs with here) and, by default, the wheel of this
attnkata (`package.py`): attnkata is not on PyPI, so an export that installed it from an index
would not build. `--from-index` / `--index-url` install it from an index that has it instead.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.sets.manifest import Manifest, verify_bundle
from attnkata.checker.sets.package import build_wheel, constraints
from attnkata.checker.version import __version__

TARGETS = ("gradescope", "prairielearn", "github-classroom")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYPI = "https://pypi.org/simple"
PL_IMAGE = "attnkata-grader"


def torch_pin() -> str:
    """The torch this attnkata runs with, as a CPU-wheel requirement (`torch==2.5.1`)."""
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:  # pragma: no cover - attnkata depends on torch
        return "torch"
    return f"torch=={version.split('+')[0]}"


@dataclass
class Install:
    """How an exported autograder gets attnkata: the wheel it carries (the default), or
    `attnkata==VERSION` from a package index (`from_index`; `index_url`, default PyPI)."""

    wheel: Path | None = None
    from_index: bool = False
    index_url: str | None = None
    notes: list[str] = field(default_factory=list)

    def lines(self, python: str, where: str) -> list[str]:
        """Shell commands that install torch (CPU) and attnkata with the carried constraints;
        `where`: the folder (in the image) holding `constraints.txt` and `wheels/`."""
        pip = f'"{python}" -m pip install --no-cache-dir -c "{where}/constraints.txt"'
        # The CPU index first (no CUDA wheels in a grading image); PyPI for torch's own
        # dependencies where that index lacks the pinned version.
        out = [f'{pip} "{torch_pin()}" --index-url {TORCH_CPU_INDEX} --extra-index-url {PYPI}']
        if self.wheel is not None:
            out.append(f'{pip} "{where}/wheels/{self.wheel.name}"')
        else:
            index = f" --index-url {self.index_url}" if self.index_url else ""
            out.append(f'{pip}{index} "attnkata=={__version__}"')
        return out

    def carry(self, folder: Path) -> None:
        """Write `constraints.txt` and the wheel (if any) into `folder`."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "constraints.txt").write_text(constraints(), encoding="utf-8")
        if self.wheel is not None:
            (folder / "wheels").mkdir(exist_ok=True)
            shutil.copy2(self.wheel, folder / "wheels" / self.wheel.name)


def _install_text(install: Install, python: str, where: str) -> str:
    return "".join(line + "\n" for line in install.lines(python, where))


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
# Gradescope runs this once when it builds the autograder image: attnkata {version} (from
# {source}) and the CPU build of torch it was tested with, at the versions of
# constraints.txt, in a virtual environment (newer Ubuntu images refuse system-wide pip
# installs). attnkata needs Python >= 3.11 (Gradescope's Ubuntu 24.04 image).
# ATTNKATA_VENV: where the environment goes (default /opt/attnkata; one that exists is reused).
set -euo pipefail
cd "$(dirname "$0")"
HERE="$(pwd)"
VENV="${{ATTNKATA_VENV:-/opt/attnkata}}"
if [ ! -x "$VENV/bin/python" ]; then
  PY=""
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY="$candidate"; break
    fi
  done
  if [ -z "$PY" ]; then
    apt-get update && apt-get install -y python3.11 python3.11-venv
    PY=python3.11
  fi
  "$PY" -m venv "$VENV" 2>/dev/null || {{ apt-get install -y python3-venv >/dev/null 2>&1 || true; "$PY" -m venv "$VENV"; }}
fi
{install}if [ "$VENV" = /opt/attnkata ]; then ln -sf /opt/attnkata/bin/kata /usr/local/bin/kata; fi
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. $AUTOGRADER_ROOT (default /autograder) holds
# source/ (this zip), submission/ (the student's files) and results/ (results.json goes there).
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
mkdir -p "$ROOT/results"
rm -f "$ROOT/results/results.json"
# The kata that setup.sh installed; ATTNKATA_KATA names another.
KATA="${ATTNKATA_KATA:-${ATTNKATA_VENV:-/opt/attnkata}/bin/kata}"
[ -x "$KATA" ] || KATA=kata
"$KATA" set autograde "$ROOT/source/set" "$ROOT/submission" --format gradescope \\
  --out "$ROOT/results/results.json" \\
  $([ -f "$ROOT/submission_metadata.json" ] && echo --student-from "$ROOT/submission_metadata.json")
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


def _source(install: Install) -> str:
    if install.wheel is not None:
        return f"the wheel wheels/{install.wheel.name}"
    return f"the package index {install.index_url or PYPI}"


def export_gradescope(bundle: Path, out: Path, install: Install) -> Path:
    if out.is_dir() or out.suffix != ".zip":
        out = out / "autograder.zip"  # a folder (existing or not) gets Gradescope's usual name
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    setup = SETUP_SH.format(
        version=__version__,
        source=_source(install),
        install=_install_text(install, "$VENV/bin/python", "$HERE"),
    )
    with (
        tempfile.TemporaryDirectory(prefix="attnkata-export-") as carried,
        zipfile.ZipFile(tmp, "w") as z,
    ):
        _zip_add(z, "setup.sh", setup.encode(), executable=True)
        _zip_add(z, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
        install.carry(Path(carried))
        for p in sorted(Path(carried).rglob("*")):
            if p.is_file():
                _zip_add(z, p.relative_to(carried).as_posix(), p.read_bytes())
        for p in sorted(bundle.rglob("*")):
            rel = p.relative_to(bundle)
            if (
                p.is_file()
                and not rel.as_posix().startswith("instructor/results/")
                and "__pycache__" not in rel.parts
            ):
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
"$KATA" set autograde "$HERE/set" "$ROOT/student" --format prairielearn --out "$ROOT/results/results.json" \\
  $([ -f "$ROOT/data/data.json" ] && echo --student-from "$ROOT/data/data.json")
code=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  printf '{"gradable": false, "score": 0, "message": "The autograder failed (attnkata exit code %s); this attempt does not count.", "format_errors": ["attnkata could not grade this submission"], "tests": []}\\n' "$code" > "$ROOT/results/results.json"
fi
exit 0
"""

DOCKERFILE = """# The grader image for PrairieLearn: build and push it, then name it in info.json.
#   docker build -t {image}:{version} .
# attnkata {version} from {source}, at the versions of constraints.txt.
FROM python:3.12-slim
COPY constraints.txt /tmp/attnkata/constraints.txt
COPY wheels/ /tmp/attnkata/wheels/
RUN set -e; \\
{install}    rm -rf /tmp/attnkata
"""


def export_prairielearn(bundle: Path, out: Path, install: Install, manifest: Manifest) -> Path:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty folder", "export into a new folder")
    files = out / "serverFilesCourse" / "attnkata"
    _copy_set(bundle, files / "set")
    (files / "run.sh").write_text(RUN_SH, encoding="utf-8")
    (files / "run.sh").chmod(0o755)
    install.carry(out)
    (out / "wheels").mkdir(exist_ok=True)  # COPY needs the folder even when nothing is carried
    install_lines = "".join(
        f"    {line}; \\\n" for line in install.lines("python", "/tmp/attnkata")
    )
    (out / "Dockerfile").write_text(
        DOCKERFILE.format(
            image=PL_IMAGE, version=__version__, source=_source(install), install=install_lines
        ),
        encoding="utf-8",
    )
    # Candidates get the set's time per file; the container a little more for start-up.
    timeout = int(manifest.grading.timeout * len(manifest.katas) + 120)
    info = {
        "externalGradingOptions": {
            "enabled": True,
            "image": f"{PL_IMAGE}:{__version__}",
            "entrypoint": "/grade/serverFilesCourse/attnkata/run.sh",
            "serverFilesCourse": ["attnkata/"],
            "timeout": timeout,
        }
    }
    (out / "info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    if manifest.options.get("variants", {}).get("pools"):
        write_pl_variants(out, manifest)
    return out


PL_SERVER = """# PrairieLearn question code: each student's variant of the attnkata set, as question params.
# PrairieLearn calls generate() once per question variant it gives a student (and keeps it);
# the external grader reads params["attnkata_variants"] from /grade/data/data.json.
import hashlib
import json

POOLS = json.loads({pools!r})


def generate(data):
    seed = str(data.get("variant_seed", ""))
    chosen, links = {{}}, []
    for kata, pool in POOLS.items():
        i = int(hashlib.sha256(f"{{seed}}:{{kata}}".encode()).hexdigest(), 16) % len(pool)
        chosen[kata] = pool[i]["variant"]
        links.append({{"kata": kata, "variant": pool[i]["key"], "file": pool[i]["file"]}})
    data["params"]["attnkata_variants"] = chosen
    data["params"]["attnkata_statements"] = links
"""

PL_QUESTION = """<pl-question-panel>
  <p>Your variants of the katas (their first section states your conventions):</p>
  <ul>
  {{#params.attnkata_statements}}
    <li><a href="{{options.client_files_question_url}}/{{file}}">{{kata}} ({{variant}})</a></li>
  {{/params.attnkata_statements}}
  </ul>
</pl-question-panel>
"""


def write_pl_variants(out: Path, manifest: Manifest) -> None:
    """A question whose params are each student's variants (server.py), its statements in
    clientFilesQuestion/, and a question.html that links them."""
    from attnkata.checker import variants as vs
    from attnkata.checker.sets.manifest import load_set_kata

    pools: dict[str, list[dict[str, Any]]] = {}
    client = out / "clientFilesQuestion"
    for kata_id, pool in manifest.options["variants"]["pools"].items():
        kata = load_set_kata(kata_id)
        for variant in pool:
            kv = kata.with_variant(variant)
            name = f"{kata_id}/{kv.variant_key.replace(',', '_').replace('=', '-')}.md"
            (client / name).parent.mkdir(parents=True, exist_ok=True)
            (client / name).write_text(
                "\n\n".join(kv.statement(lang) for lang in ("en", "zh")), encoding="utf-8"
            )
            pools.setdefault(kata_id, []).append(
                {
                    "variant": vs.complete(kata.variants, variant),
                    "key": kv.variant_key,
                    "file": name,
                }
            )
    (out / "server.py").write_text(PL_SERVER.format(pools=json.dumps(pools)), encoding="utf-8")
    (out / "question.html").write_text(PL_QUESTION, encoding="utf-8")


# -- GitHub Classroom ------------------------------------------------------------------------------
GITHUB_HOME = ".github/attnkata"


def workflow(
    manifest: Manifest, install: Install | None = None, set_path: str = f"{GITHUB_HOME}/set"
) -> str:
    """`.github/workflows/classroom.yml`: one step per kata, then the grading reporter."""
    install = install or Install(from_index=True)
    # A set with per-student variants: the roster's ids are the students' GitHub logins.
    student = " --student ${{ github.actor }}" if manifest.variants else ""
    steps = []
    for k in manifest.katas:
        minutes = max(2, int(manifest.grading.timeout // 60) + 5)
        steps.append(f"""      - name: {k.id}
        id: {k.id}
        timeout-minutes: {minutes}
        run: kata set autograde {set_path} . --kata {k.id} --format github-classroom --github-output{student} >> "$GITHUB_OUTPUT"
""")
    env = "".join(
        f'          {k.id.upper()}_RESULTS: "${{{{ steps.{k.id}.outputs.result }}}}"\n'
        for k in manifest.katas
    )
    runners = ",".join(manifest.kata_ids)
    lines = "".join(f"          {ln}\n" for ln in install.lines("python", GITHUB_HOME))
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
{lines}{"".join(steps)}      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
{env}        with:
          runners: {runners}
"""


def export_github(bundle: Path, out: Path, install: Install, manifest: Manifest) -> Path:
    wf = out / ".github" / "workflows" / "classroom.yml"
    home = out / GITHUB_HOME
    if wf.exists() or home.exists():
        raise UsageError(
            f"{out} already has an attnkata workflow or set",
            "export into a fresh template repository",
        )
    _copy_set(bundle, home / "set")
    install.carry(home)
    wf.parent.mkdir(parents=True, exist_ok=True)
    wf.write_text(workflow(manifest, install), encoding="utf-8")
    return wf


def resolve_install(
    wheel: Path | None, from_index: bool, index_url: str | None, lang: str = "en"
) -> Install:
    """The given wheel; attnkata from an index (`from_index`, or an `index_url`); else the
    wheel of this attnkata, built now."""
    if wheel is not None and (from_index or index_url):
        raise UsageError(msg("export.wheel_or_index", lang))
    if index_url is not None and not index_url.startswith(("https://", "http://", "file://")):
        raise UsageError(msg("export.bad_index", lang, url=index_url))
    if from_index or index_url:
        return Install(
            from_index=True,
            index_url=index_url,
            notes=[msg("export.note_index", lang, version=__version__, index=index_url or PYPI)],
        )
    if wheel is not None:
        if not (wheel.is_file() and wheel.name.startswith("attnkata-") and wheel.suffix == ".whl"):
            raise UsageError(
                msg("export.not_a_wheel", lang, path=wheel), msg("export.not_a_wheel_hint", lang)
            )
        return Install(wheel=wheel, notes=[msg("export.note_wheel", lang, wheel=wheel.name)])
    return Install(wheel=None)


def export_set(
    bundle: Path,
    target: str,
    out: Path,
    wheel: Path | None = None,
    *,
    from_index: bool = False,
    index_url: str | None = None,
    lang: str = "en",
) -> tuple[Path, list[str]]:
    """Export the verified set in `bundle` for `target`: returns the main file written and
    notes for the instructor (what the autograder installs attnkata from)."""
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}", f"use one of: {', '.join(TARGETS)}")
    install = resolve_install(None if wheel is None else Path(wheel), from_index, index_url, lang)
    bundle, out = Path(bundle), Path(out)
    manifest, _warnings = verify_bundle(bundle)
    with tempfile.TemporaryDirectory(prefix="attnkata-wheel-") as tmp:
        if install.wheel is None and not install.from_index:
            install.wheel = build_wheel(Path(tmp))
            install.notes.append(msg("export.note_built", lang, wheel=install.wheel.name))
        if target == "gradescope":
            written = export_gradescope(bundle, out, install)
        elif target == "prairielearn":
            written = export_prairielearn(bundle, out, install, manifest)
        else:
            written = export_github(bundle, out, install, manifest)
    return written, install.notes
