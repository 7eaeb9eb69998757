"""Static HTML export: widget state embedded, renderer served from the local copy, no CDN."""

from __future__ import annotations

import re

import pytest

from workbench.widgets import WIDGET_ASSETS, export_notebook_html

pytestmark = pytest.mark.slow

_CDN = re.compile(r"https?://(?:[a-z0-9-]+\.)*(?:unpkg\.com|jsdelivr\.net|cdnjs\.cloudflare\.com|cdn\.[a-z.]+)", re.I)


def test_export_is_offline(executed_notebooks, tmp_path) -> None:
    _, path, _ = executed_notebooks["02_tune_keep_window"]
    out = export_notebook_html(path, tmp_path / "site" / "keep.html")
    html = out.read_text(encoding="utf-8")
    assert "application/vnd.jupyter.widget-state+json" in html
    assert "application/vnd.jupyter.widget-view+json" in html
    assert "var widgetRendererSrc = 'keep_files/embed.js';" in html
    assert not _CDN.findall(html), _CDN.findall(html)
    assert not re.findall(r'<script[^>]+src="https?://', html)
    local = out.parent / "keep_files" / "embed.js"
    assert local.read_bytes() == (WIDGET_ASSETS / "embed.js").read_bytes()
    assert "wb-keep-readout" in html  # the readout HTML is part of the embedded state
