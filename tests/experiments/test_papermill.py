from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from .conftest import REPO, write_spec

SPEC = """\
name: pm
corpus: ["DATA"]
metrics: [savings, validity]
strategies:
  - name: none
  - name: sm-compact
    grid:
      trigger.pct_of_window: [40, 80]
"""

FAKE_KEY = "sk-ant-fake-0123456789-do-not-leak"


def test_papermill_sweep_keeps_notebooks_and_aggregates_without_secrets(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    out = tmp_path / "nb"
    code = "from workbench.cli import main\n\nif __name__ == '__main__':\n    main()\n"
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY, "WORKBENCH_CODE_VERSION": "test"}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "sweep",
            str(spec),
            "--papermill",
            str(out),
            "--store",
            str(tmp_path / "store"),
            "--workers",
            "2",
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(run.stdout)
    notebooks = data["papermill"]["notebooks"]
    assert len(notebooks) == 3
    for path in notebooks:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        params = nb["metadata"]["papermill"]["parameters"]
        assert set(params) == {"spec_path", "strategy", "config_json", "corpus", "store", "output_dir"}
        assert all(cell.get("execution_count") for cell in nb["cells"] if cell["cell_type"] == "code")
        assert any(
            o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
            for cell in nb["cells"]
            for o in cell.get("outputs", [])
        )
    aggregated = pd.read_parquet(out / "aggregated.parquet")
    assert len(aggregated) == 3 and set(aggregated["strategy"]) == {"none", "sm-compact"}
    assert sorted(aggregated["cfg.trigger.pct_of_window"].dropna()) == [40, 80]
    assert data["stored_cells"] == 3 * 6
    for path in [p for p in out.rglob("*") if p.is_file()] + [
        p for p in (tmp_path / "store").rglob("*") if p.is_file()
    ]:
        assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in run.stdout + run.stderr
