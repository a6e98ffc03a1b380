"""The exported Gradescope autograder builds and grades from its zip alone.

An instructor whose attnkata was installed from a wheel (in a virtual environment of its own)
exports a set; the zip is unpacked into a fresh `$AUTOGRADER_ROOT/source`, its `setup.sh`
builds the grading environment in a scratch virtual environment as Gradescope's image build
does, with no package index at all (`PIP_NO_INDEX`, no pip configuration): attnkata can only
come from the wheel the zip carries. The third-party dependencies (torch & co., which the
platform gets from the index at the versions of the zip's constraints.txt) are this
interpreter's, offered to both environments through a folder of links that leaves attnkata
out. `run_autograder` then grades a correct and a wrong submission, and each `results.json`
is validated against Gradescope's results format (tests/fixtures/platforms/).

The publishing check builds the sdist and the wheel as `python -m build` does and runs
`twine check` on them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "reference" / "sdpa.py").read_text()
NO_SCALE = REFERENCE.replace(
    "scale = 1.0 / math.sqrt(d) if scale is None else scale",
    "scale = 1.0 if scale is None else scale",
)
SCHEMA = json.loads(
    (REPO / "tests" / "fixtures" / "platforms" / "gradescope_results.schema.json").read_text()
)


def _third_party(tmp: Path) -> Path:
    """A folder of links to this interpreter's site packages, attnkata's own entries left out."""
    farm = tmp / "third-party"
    farm.mkdir()
    for site in (p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()):
        for entry in Path(site).iterdir():
            name = entry.name.lower()
            if (
                name.startswith(("attnkata", "__editable__"))
                or name.endswith(".pth")
                or (farm / entry.name).exists()
            ):
                continue
            (farm / entry.name).symlink_to(entry)
    return farm


def _venv(where: Path, farm: Path) -> Path:
    venv.create(where, with_pip=False)
    purelib = subprocess.run(
        [
            str(where / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "third-party.pth").write_text(f"{farm}\n", encoding="utf-8")
    return where / "bin" / "python"


def _clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    # No pip configuration (this machine's find-links and extra indexes) and no index at all.
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp),
        "KATA_HOME": str(tmp / "kata-home"),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **extra,
    }


@pytest.mark.slow
def test_gradescope_zip_alone_builds_and_grades(tmp_path: Path) -> None:
    from attnkata.checker.sets.package import build_wheel

    farm = _third_party(tmp_path)
    # The instructor: attnkata installed from a wheel, so the export packs that install again.
    wheel = build_wheel(tmp_path / "dist")
    teacher = _venv(tmp_path / "teacher", farm)
    subprocess.run(
        [str(teacher), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        env=_clean_env(tmp_path),
        timeout=120,
    )
    kata = tmp_path / "teacher" / "bin" / "kata"
    env = _clean_env(tmp_path)
    made = subprocess.run(
        [
            str(kata),
            "set",
            "create",
            "--katas",
            "sdpa",
            "--out",
            str(tmp_path / "set"),
            "--public-tests",
            "0",
            "--lang",
            "en",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    exported = subprocess.run(
        [
            str(kata),
            "set",
            "export",
            str(tmp_path / "set"),
            "--to",
            "gradescope",
            "--out",
            str(tmp_path / "gs"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert "built from this installation" in " ".join(exported.stderr.split())

    # The platform: the zip alone, unpacked with its modes (as Gradescope's unzip keeps them).
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tmp_path / "gs" / "autograder.zip") as z:
        z.extractall(root / "source")
        for info in z.infolist():
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
        carried = [n for n in z.namelist() if n.startswith("wheels/")]
    assert carried == [f"wheels/{wheel.name}"]
    image = tmp_path / "image-venv"
    python = _venv(image, farm)
    setup = subprocess.run(
        [str(root / "source" / "setup.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(tmp_path, ATTNKATA_VENV=str(image)),
    )
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
    where = subprocess.run(
        [str(python), "-c", "import attnkata; print(attnkata.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(image)), where  # the carried wheel's copy

    def grade(source: str) -> dict:
        shutil.rmtree(root / "submission", ignore_errors=True)
        (root / "submission").mkdir()
        (root / "submission" / "sdpa.py").write_text(source)
        proc = subprocess.run(
            [str(root / "source" / "run_autograder")],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=root,
            env=_clean_env(tmp_path, AUTOGRADER_ROOT=str(root), ATTNKATA_VENV=str(image)),
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        data = json.loads((root / "results" / "results.json").read_text())
        jsonschema.validate(data, SCHEMA)
        return data

    right = grade(REFERENCE)
    assert (
        right["score"] == 10
        and right["tests"]
        and all(t["status"] == "passed" for t in right["tests"])
    )
    wrong = grade(NO_SCALE)
    assert 0 <= wrong["score"] < 10 and any(t["status"] == "failed" for t in wrong["tests"])
    assert any("missing-scale" in t["output"] for t in wrong["tests"])


def test_the_gradescope_schema_refuses_what_gradescope_would_not_read() -> None:
    ok = {
        "score": 1.0,
        "output": "x",
        "output_format": "md",
        "tests": [
            {
                "name": "a",
                "score": 1,
                "max_score": 1,
                "status": "passed",
                "visibility": "after_published",
            }
        ],
    }
    jsonschema.validate(ok, SCHEMA)
    for bad in (
        {**ok, "tests": [{**ok["tests"][0], "visibility": "later"}]},
        {**ok, "output_format": "markdown"},
        {**ok, "tests": [{**ok["tests"][0], "status": "error"}]},
        {"tests": [{"name": "a"}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


@pytest.mark.slow
def test_the_package_builds_an_sdist_and_a_wheel_that_pass_twine_check(tmp_path: Path) -> None:
    # From a copy of what git tracks (never this checkout's build/ or other people's edits of
    # untracked files), as a clean clone would be.
    src = tmp_path / "src"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    sdist, wheel = sorted(dist.glob("attnkata-*.tar.gz")), sorted(dist.glob("attnkata-*.whl"))
    assert len(sdist) == 1 and len(wheel) == 1
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, sdist + wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with zipfile.ZipFile(wheel[0]) as z:
        info = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = z.read(info).decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in z.namelist())
    assert "License-Expression: MIT" in meta and "Classifier: " in meta
    with tarfile.open(sdist[0]) as t:
        assert any(n.endswith("/LICENSE") for n in t.getnames())
