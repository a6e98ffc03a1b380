"""The wheel carries everything a normal (non-editable) install needs: built here, installed in
a fresh virtual environment (its third-party dependencies from this interpreter's site
packages, attnkata itself only from the wheel), it grades a kata with the per-call limit
measured for it in katas/timings.toml, not the 10 s fallback of a missing file."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from attnkata.checker import timing

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_installs_and_grades_with_the_measured_limits(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(REPO),
            "-w",
            str(wheels),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("attnkata-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    where = subprocess.run(
        [str(python), "-c", "import attnkata, sys; print(attnkata.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert where.startswith(str(env_dir)), where  # the wheel's copy, not this checkout
    proc = subprocess.run(
        [
            str(env_dir / "bin" / "kata"),
            "check",
            "sdpa",
            str(REPO / "reference" / "sdpa.py"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KATA_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    measured = tomllib.loads((REPO / "katas" / "timings.toml").read_text())[
        "reference_call_seconds"
    ]["sdpa"]
    assert result["status"] == "pass"
    assert result["limits"]["call_timeout"] == pytest.approx(timing.call_limit(measured))
    assert result["limits"]["call_timeout"] != timing.CEILING_S
