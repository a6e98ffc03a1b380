"""What an exported autograder installs: the wheel of the attnkata that exports it, and the
versions of its third-party dependencies that this attnkata runs with (a pip constraints file).

attnkata is not on a package index an autograder image can count on, so an export carries its
own wheel. It is made from what is installed, never downloaded:

- a source checkout (an editable install: the package folder holds `pyproject.toml`) is built
  with `pip wheel` from a clean copy of its packaged files (the checkout is left untouched);
- an install from a wheel or an sdist is packed again from the files its RECORD lists (the
  console scripts, which pip writes at install time, left out), so the result installs the
  same files as the original.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from attnkata.checker.errors import KataError
from attnkata.checker.version import __version__

DIST = "attnkata"
# Files of an installed distribution that belong to that installation, not to the wheel.
_INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
# What a source checkout holds besides the package: never part of the wheel.
_NOT_PACKAGED = (
    "tests",
    "bench",
    "examples",
    "build",
    "dist",
    ".git",
    ".venv",
    ".ruff_cache",
    ".pytest_cache",
    "__pycache__",
    "*.egg-info",
    "*.pyc",
)


class WheelError(KataError):
    """The installed attnkata cannot be packed into a wheel (exit 3: the install is broken)."""

    exit_code = 3


def package_root() -> Path:
    """The folder `attnkata` is imported from (a checkout's root, or site-packages/attnkata)."""
    return Path(__file__).resolve().parents[2]  # <root>/checker/sets/package.py


def build_wheel(dest: Path) -> Path:
    """The wheel of the installed attnkata, written into `dest` (a folder); returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    root = package_root()
    if (root / "pyproject.toml").is_file():
        return _wheel_from_source(root, dest)
    return _wheel_from_record(dest)


def _wheel_from_source(root: Path, dest: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="attnkata-wheel-") as tmp:
        # A copy: setuptools writes build/ and *.egg-info/ beside the sources it builds.
        src = Path(tmp) / "src"
        shutil.copytree(root, src, ignore=shutil.ignore_patterns(*_NOT_PACKAGED), symlinks=False)
        out = Path(tmp) / "out"
        # With this environment's setuptools and no network first; an environment without a
        # recent enough setuptools (an editable install made with build isolation) gets one
        # from the index, as `pip install -e .` did.
        for isolation in (["--no-build-isolation", "--no-index"], []):
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    *isolation,
                    "-q",
                    "-w",
                    str(out),
                    str(src),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            built = sorted(out.glob(f"{DIST}-{__version__}-*.whl")) if proc.returncode == 0 else []
            if built:
                break
        if not built:
            raise WheelError(
                f"could not build the attnkata wheel from {root}: "
                f"{(proc.stderr or proc.stdout).strip()[-800:]}"
            )
        target = dest / built[0].name
        shutil.copy2(built[0], target)
        return target


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _wheel_from_record(dest: Path) -> Path:
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise WheelError("attnkata is importable but not installed as a distribution") from None
    files = [
        f
        for f in (dist.files or [])
        if ".." not in f.parts and "__pycache__" not in f.parts and f.suffix != ".pyc"
    ]
    info = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info")), None)
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = re.findall(r"^Tag:\s*(\S+)", wheel_meta, re.MULTILINE) or ["py3-none-any"]
    if info is None or not any(f.parts[0] == DIST for f in files):
        raise WheelError(
            "the installed attnkata lists no files (RECORD); reinstall it, or pass --wheel"
        )
    name = dest / f"{DIST}-{dist.version}-{tags[0]}.whl"
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(files, key=lambda p: (p.parts[0] == info, str(p))):
            if f.parts[0] == info and f.name in _INSTALL_ONLY:
                continue
            data = Path(dist.locate_file(f)).read_bytes()
            z.writestr(f.as_posix(), data)
            writer.writerow(_record_line(f.as_posix(), data))
        writer.writerow([f"{info}/RECORD", "", ""])
        z.writestr(f"{info}/RECORD", record.getvalue())
    return name


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """The names of `dist`'s requirements that apply here, extras left out."""
    from packaging.requirements import InvalidRequirement, Requirement

    names = []
    for text in dist.requires or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(req.name)
    return names


def constraints() -> str:
    """`name==version` for every third-party distribution attnkata needs (the closure of its
    requirements, extras left out), as installed here: the autograder gets the versions this
    attnkata was tested with. Local labels (`+cpu`, `+cu121`) are dropped: `torch==2.5.1` also
    matches the CPU index's `2.5.1+cpu`."""
    seen: dict[str, str] = {}
    todo = _requirement_names(metadata.distribution(DIST))
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen or key == DIST:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional platform dependency that does not apply here
        seen[key] = f"{dist.metadata['Name']}=={dist.version.split('+')[0]}"
        todo += _requirement_names(dist)
    head = f"# The versions attnkata {__version__} was exported with (pip -c constraints.txt).\n"
    return head + "".join(line + "\n" for _key, line in sorted(seen.items()))
