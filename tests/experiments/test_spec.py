from __future__ import annotations

import pytest

from workbench.experiments import SpecError, load_spec

from .conftest import REPO, TINY, write_spec


def test_tiny_spec_expands_grid(tmp_path):
    spec = load_spec(write_spec(tmp_path, TINY))
    assert [p.strategy for p in spec.points] == ["none"] + ["sm-compact"] * 4
    values = {(p.resolved["min_tokens"], p.resolved["trigger"]["pct_of_window"]) for p in spec.points[1:]}
    assert values == {(5000, 40), (5000, 80), (10000, 40), (10000, 80)}
    assert spec.points[1].passed == {"min_tokens": 5000, "trigger": {"pct_of_window": 40}}


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (TINY.replace("metrics:", "metricz:"), "metricz"),
        (TINY.replace("min_tokens:", "min_tokenz:"), "strategies[1].grid.min_tokenz"),
        (TINY.replace("trigger.pct_of_window", "trigger.pct_of_windo"), "strategies[1].grid.trigger.pct_of_windo"),
        (TINY.replace("  - name: none", "  - name: none\n    confg: {}"), "strategies[0].confg"),
        (TINY.replace("name: none", "name: nope"), "strategies[0].name"),
        (TINY.replace("metrics: [savings, validity]", "metrics: [savings, speed]"), "metrics[1]"),
        (TINY.replace('["DATA"]', '["/no/such/folder"]'), "corpus"),
    ],
)
def test_errors_name_file_and_key(tmp_path, body, where):
    path = write_spec(tmp_path, body, "broken.yaml")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert str(path) in message
    assert where in message


def test_invalid_grid_point_raises_unless_skipped(tmp_path):
    body = TINY.replace("trigger.pct_of_window: [40, 80]", "max_tokens: [4000, 40000]")
    with pytest.raises(SpecError, match=r"strategies\[1\]"):
        load_spec(write_spec(tmp_path, body))
    spec = load_spec(write_spec(tmp_path, body.replace("    grid:", "    skip_invalid: true\n    grid:")))
    assert len(spec.points) == 1 + 2 and len(spec.skipped) == 2


def test_env_expansion_and_fallback(tmp_path, monkeypatch):
    body = 'name: x\ncorpus: ["${WB_TEST_CORPUS}/claude-code"]\ncorpus_fallback: ["DATA"]\nstrategies: [{name: none}]\n'
    monkeypatch.delenv("WB_TEST_CORPUS", raising=False)
    spec = load_spec(write_spec(tmp_path, body))
    assert spec.corpus_used_fallback and spec.corpus[0].name == "data"
    (tmp_path / "corp" / "claude-code").mkdir(parents=True)
    monkeypatch.setenv("WB_TEST_CORPUS", str(tmp_path / "corp"))
    spec = load_spec(write_spec(tmp_path, body))
    assert not spec.corpus_used_fallback and spec.corpus[0] == tmp_path / "corp" / "claude-code"


@pytest.mark.parametrize("name", ["smoke.yaml", "compare.yaml"])
def test_shipped_specs_load(name, monkeypatch):
    monkeypatch.delenv("WORKBENCH_CORPUS", raising=False)
    spec = load_spec(REPO / "experiments" / name)
    assert spec.points
    if name == "compare.yaml":
        from workbench.strategies import strategies

        assert {p.strategy for p in spec.points} == set(strategies())
