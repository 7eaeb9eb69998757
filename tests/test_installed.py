"""The package works outside the checkout: a wheel built from it carries the embedded sessions, the
notebooks and the experiment specs, and ``workbench demo`` and ``workbench notebooks`` run from another
folder against that installed copy (the checkout is not on the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the checkout, unpacked as site-packages would hold it."""
    wheels = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("workbench-*.whl")
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _cli(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "WORKBENCH_CACHE_DIR": str(cwd / "cache")}
    code = "import sys, workbench.cli; assert 'site' in workbench.cli.__file__; workbench.cli.main()"
    return subprocess.run(
        [sys.executable, "-c", code.replace("'site'", repr(str(site))), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_wheel_carries_the_embedded_folders(installed: Path) -> None:
    embedded = installed / "workbench" / "_embedded"
    for name in ("data", "notebooks", "experiments"):
        shipped = sorted(p.relative_to(embedded / name) for p in (embedded / name).rglob("*") if p.is_file())
        source = sorted(p.relative_to(ROOT / name) for p in (ROOT / name).rglob("*") if p.is_file())
        assert shipped and shipped == [p for p in source if "__pycache__" not in p.parts], name


def test_demo_and_notebooks_run_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    demo = _cli(installed, tmp_path, "demo", "--out", str(tmp_path / "demo"), "--workers", "1", "--json")
    assert demo.returncode == 0, demo.stderr[-3000:]
    result = json.loads(demo.stdout)
    assert result["cells_total"] == 60  # the shipped smoke.yaml over the six embedded sessions
    assert (tmp_path / "demo" / "summary.md").is_file()
    copied = _cli(installed, tmp_path, "notebooks", str(tmp_path / "nb"), "--json")
    assert copied.returncode == 0, copied.stderr
    names = {Path(p).name for p in json.loads(copied.stdout)["notebooks"]}
    assert {"01_quickstart.ipynb", "02_tune_keep_window.ipynb"} <= names
    assert json.loads(copied.stdout)["data"].startswith(str(installed))
