"""`code_version` names the distributions that change a stored number by their installed versions."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from workbench.util import code_version as cv


@pytest.mark.parametrize("name", [*cv._RESULT_DISTRIBUTIONS, "pandas", "pyarrow", "numpy", "typing-extensions"])
def test_the_dist_info_folder_gives_what_importlib_metadata_gives(name: str) -> None:
    assert cv._dist_info_version(name) == version(name)


def test_names_are_compared_normalised_and_the_first_on_the_path_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "Genai.Prices-9.9.9.dist-info").mkdir(parents=True)
    (second / "genai_prices-1.0.0.dist-info").mkdir(parents=True)
    (second / "genai_prices_extra-2.0.0.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    assert cv._dist_info_version("genai-prices") == "9.9.9"
    assert cv._dist_info_version("genai-prices-extra") == "2.0.0"
    assert cv._dist_info_version("tiktoken") is None


def test_a_distribution_found_nowhere_is_a_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(cv, "_RESULT_DISTRIBUTIONS", ("no-such-distribution-here",))
    assert cv._distribution_versions() == "no-such-distribution-here=-"
