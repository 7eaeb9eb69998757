"""The summarisers are imported on first use: the report, which needs only the prompt strings, does not pay
for the offline summariser and the session-memory extractor behind it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_the_report_imports_no_summariser() -> None:
    code = (
        "import sys, workbench.reporting.report\n"
        "print(sorted(m for m in sys.modules if m in ('workbench.summarize.offline', 'workbench.memory.extractor')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_summarisers_are_there_when_asked_for() -> None:
    import workbench.summarize as summarize
    from workbench.summarize import OfflineSummarizer, SummarizerConfig
    from workbench.summarize.offline import OfflineSummarizer as Direct

    assert OfflineSummarizer is Direct and summarize.SummarizerConfig is SummarizerConfig
    assert callable(summarize.summarize)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        summarize.nothing  # noqa: B018
