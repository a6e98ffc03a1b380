"""A built (non-editable) wheel works as well as the editable checkout, and installs everything
under the one `attnkata` namespace (never bare `cli`/`checker` modules)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools leaves build/ and *.egg-info/ next to the sources.
    src = tmp_path_factory.mktemp("src") / "attnkata"
    shutil.copytree(
        REPO, src, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return next(out.glob("attnkata-*.whl"))


def test_wheel_has_one_namespace_and_the_kata_data(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"attnkata", next(t for t in tops if t.endswith(".dist-info"))}
    for needed in (
        "attnkata/katas/sdpa/kata.toml",
        "attnkata/katas/sdpa/statement.zh.md",
        "attnkata/katas/sdpa/test_sdpa.py",
        "attnkata/katas/sdpa/skeleton.py",
        "attnkata/katas/conventions.md",
        "attnkata/reference/sdpa.py",
        "attnkata/checker/proxy.py",
        "attnkata/cli/app.py",
        "attnkata/__main__.py",
    ):
        assert needed in names, needed
    assert not any(n.startswith("attnkata/tests/") for n in names)


def test_installed_wheel_grades(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    # torch & co. come from the environment running these tests, which may itself be a virtual
    # environment (system_site_packages would only reach the base interpreter's, without them).
    # A .pth line only appends the folder: its own .pth files (the checkout's editable install)
    # are not run, and the wheel installed below comes first on sys.path.
    nested = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = [p for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    (Path(nested) / "outer-environment.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    where = subprocess.run(
        [str(py), "-c", "import attnkata, sys; print(attnkata.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert str(env_dir) in where, where
    kata = env_dir / "bin" / "kata"
    ok = subprocess.run(
        [str(kata), "check", "sdpa", str(REPO / "reference" / "sdpa.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"KATA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(
        [
            str(py),
            "-m",
            "attnkata",
            "check",
            "sdpa",
            str(
                env_dir
                / "lib"
                / f"python{sys.version_info.major}.{sys.version_info.minor}"
                / "site-packages"
                / "attnkata"
                / "katas"
                / "sdpa"
                / "skeleton.py"
            ),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"KATA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    # A library that lives only in this venv (made under the temp dir, as CI and throwaway venvs
    # are) loads in the sandbox although every candidate gets a fresh /tmp.
    (Path(nested) / "venv_only_helper.py").write_text("SCALE_NAME = 'scale'\n", encoding="utf-8")
    own = tmp_path / "sdpa.py"
    own.write_text(
        (REPO / "reference" / "sdpa.py").read_text()
        + "\nimport venv_only_helper  # noqa: E402, F401\n",
        encoding="utf-8",
    )
    lib = subprocess.run(
        [str(kata), "check", "sdpa", str(own), "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={"KATA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert lib.returncode == 0, lib.stdout[-2000:] + lib.stderr
