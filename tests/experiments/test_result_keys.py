"""Every stored result is keyed by everything that changes it: the code version covers every result-deciding
source and data file (an edit of an editable install, an upgrade), and `wb.tune`'s default store is per
spec name and corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import workbench as wb
from workbench.experiments.cells import code_digest

ROOT = Path(__file__).resolve().parents[2]


def test_the_code_digest_covers_metrics_data_and_the_engine_not_the_widgets(tmp_path: Path) -> None:
    package = tmp_path / "workbench"
    shutil.copytree(ROOT / "workbench", package, ignore=shutil.ignore_patterns("__pycache__"))
    base = code_digest(package)
    assert code_digest(package) == base
    for edited, changes in (
        ("metrics/cost.py", True),  # a metric read back from stored steps
        ("data/pricing.csv", True),  # the prices
        ("experiments/tables.py", True),  # the tables built from the store
        ("replay/engine.py", True),
        ("widgets/__init__.py", False),  # presentation only
        ("reporting/plots.py", False),
        ("reporting/render.py", False),
        ("reporting/report.py", True),
    ):
        path = package / edited
        original = path.read_bytes()
        path.write_bytes(original + b"\n# edited\n")
        assert (code_digest(package) != base) is changes, edited
        path.write_bytes(original)
    assert code_digest(package) == base


def test_the_default_tune_store_is_per_corpus(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    data = ROOT / "data"
    one = wb.load([data / "short-bugfix-d95bafc8.jsonl"], progress=False)
    two = wb.load([data / "short-question-21636369.jsonl"], progress=False)
    space = {"min_tokens": [5_000]}
    first = wb.tune(one, "sm-compact", space=space, name="same", executor="inline", progress=False)
    second = wb.tune(two, "sm-compact", space=space, name="same", executor="inline", progress=False)
    stores = sorted(p.parent.name for p in (tmp_path / "cache" / "tune").glob("*/store"))
    assert len(stores) == 2 and all(name.startswith("same-") for name in stores)
    assert set(first.per_session["session_id"]).isdisjoint(second.per_session["session_id"])


def test_the_code_digest_reads_no_file_while_the_files_keep_their_stamps(tmp_path: Path, monkeypatch) -> None:
    """The digest is remembered with the files' stamps: a second process-like call reads nothing, a touched
    file is read again (and gives the same digest), an edited one a new digest; without a usable cache
    folder every call hashes."""
    from workbench.util import code_version

    package = tmp_path / "workbench"
    shutil.copytree(ROOT / "workbench" / "metrics", package / "metrics", ignore=shutil.ignore_patterns("__pycache__"))
    reads: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    base = code_digest(package)
    files = len(reads)
    assert files > 10
    assert code_digest(package) == base and len(reads) == files
    cost = package / "metrics" / "cost.py"
    text = real(cost)
    cost.write_bytes(text)  # the same bytes, a new stamp
    assert code_digest(package) == base and len(reads) == 2 * files
    cost.write_bytes(text + b"\n")
    assert code_digest(package) != base
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cost))  # a file: no cache folder
    before = len(reads)
    assert code_digest(package) == code_digest(package) and len(reads) == before + 2 * files
    assert code_version._memo_path() is None
