"""Every built-in strategy names what it models (`Strategy.source`): an upstream repository or document
with the file and the version or commit its constants come from, or the workbench's own design."""

from __future__ import annotations

import re

import pytest

from workbench.strategies.registry import describe_strategies, strategies

BUILTIN = sorted(name for name, cls in strategies().items() if cls.__module__.startswith("workbench."))
#: ``@ <commit or tag>`` or a version named in the text (``v2.1.88``, ``1.x``, ``0.120.0``).
VERSIONED = re.compile(r"@ ?[0-9a-f]{7,40}\b|@ ?v?\d+(\.\d+)+|\bv\d+(\.\d+)+|\b\d+\.x\b|arXiv \d{4}\.\d{4,5}")
OWN = ("workbench (own design)", "the recording itself")


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_strategy_names_its_source_and_version(name: str) -> None:
    source = strategies()[name].source
    assert source, f"{name} has no source"
    if not source.startswith(OWN):
        assert VERSIONED.search(source), f"{name}: no version or commit in {source!r}"
        assert re.search(r"\w/\w|\.(py|ts|rs|md)\b", source), f"{name}: no repository or file in {source!r}"


def test_the_listing_carries_the_source() -> None:
    rows = {row["name"]: row for row in describe_strategies()}
    assert all(rows[name]["source"] == strategies()[name].source for name in BUILTIN)


def test_the_late_2026_mechanisms_are_registered() -> None:
    assert {
        "codex",
        "codex-remote",
        "server-compact",
        "on-demand-compact",
        "background-compact",
        "sdk-compaction-control",
        "openhands-sdk",
        "goose",
        "gemini-cli",
        "opencode",
    } <= set(BUILTIN)
