"""The loaders are imported when a file first needs detecting, and which loader reads an unchanged file is
remembered, so a warm ``workbench ingest`` imports no loader (`registry._load_file`,
`session_cache.remembered_loader`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.transcript import LoadReport, registry
from workbench.transcript import session_cache as sc
from workbench.transcript.registry import file_summaries, load_paths

ROOT = Path(__file__).resolve().parents[2]
LOADER_MODULES = {f"workbench.transcript.{m}" for m in registry._BUILTIN_MODULES}

_RUN = """
import json, sys
from workbench.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
named = ("tempfile", "shutil", "pydantic", "typing", "dataclasses", "inspect", "_hashlib", "pickle")
modules = sorted(m for m in sys.modules if m.startswith(("workbench", "orjson")) or m in named)
print(json.dumps({"code": code, "modules": modules}))
"""


def _cli(cache: Path, *args: str) -> dict:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("WORKBENCH_SESSION_CACHE", None)
    out = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_warm_ingest_imports_no_loader(tmp_path: Path) -> None:
    cold = _cli(tmp_path / "cache", "ingest", str(ROOT / "data"), "--json")
    warm = _cli(tmp_path / "cache", "ingest", str(ROOT / "data"), "--json")
    assert cold["code"] == warm["code"] == 0
    assert "workbench.transcript.claude_code" in cold["modules"]  # the cold run detected and parsed
    assert not LOADER_MODULES & set(warm["modules"]), warm["modules"]
    assert "orjson" not in warm["modules"] and "workbench.transcript.export" not in warm["modules"]
    # nor the record model, nor what only writing the cache needs (tempfile, which imports shutil), nor
    # shutil for argparse's help width (`cli._help_width`)
    assert {"workbench.transcript.model", "tempfile", "shutil"} <= set(cold["modules"])
    assert not {"workbench.transcript.model", "tempfile", "shutil", "pydantic"} & set(warm["modules"]), warm
    # nor OpenSSL's hashlib or pickle (`session_cache`'s BLAKE2b, summaries kept as JSON)
    assert "pickle" in cold["modules"]
    assert not {"_hashlib", "pickle"} & set(warm["modules"]), warm["modules"]


def test_warm_and_cold_ingest_print_the_same_report(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "workbench.cli", "ingest", str(ROOT / "data"), "--json"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and json.loads(runs[0])["records"] > 100


def _fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(sc.CACHE_ENV, raising=False)
    monkeypatch.setattr(sc, "_STATE", {"off": None, "warned_corrupt": False})


def test_a_file_rewritten_in_another_format_is_detected_again(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_cache(tmp_path, monkeypatch)
    path = tmp_path / "session.jsonl"
    shutil.copy(ROOT / "data" / "short-question-21636369.jsonl", path)
    assert sc.remembered_loader(path) is None
    first = [s.format for _, summary in file_summaries([path]) for s in summary.sessions]
    assert sc.remembered_loader(path) == "claude-code" and first
    codex = sorted((corpus / "codex").rglob("*.jsonl"))[0]
    path.write_bytes(codex.read_bytes())  # same path, another agent's format: the stamp moves
    assert sc.remembered_loader(path) is None
    second = [s.format for _, summary in file_summaries([path]) for s in summary.sessions]
    assert sc.remembered_loader(path) == "codex"
    assert [s.format for s in load_paths([path])] == second != first


def test_no_loader_is_remembered_once_another_is_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh_cache(tmp_path, monkeypatch)
    path = tmp_path / "session.jsonl"
    shutil.copy(ROOT / "data" / "tiny-hello-b8a1abcd.jsonl", path)
    list(file_summaries([path]))
    assert sc.remembered_loader(path) == "claude-code"
    monkeypatch.setitem(registry._STATE, "custom", True)  # as `register` of a user's loader leaves it

    def never(path: Path) -> str:
        raise AssertionError("a remembered loader was used beside a user's loader")

    monkeypatch.setattr(sc, "remembered_loader", never)
    report = LoadReport()
    assert [s.records for s in load_paths([path], report=report)] and report.files == [str(path)]


def test_detection_order_is_the_builtin_one_whichever_loader_is_imported_first() -> None:
    script = (
        "import workbench.transcript.codex, workbench.transcript.claude_code\n"
        "from workbench.transcript.registry import loaders\n"
        "print(','.join(type(l).__module__.rsplit('.', 1)[1] for l in loaders().values()))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().split(",") == list(registry._BUILTIN_MODULES)
