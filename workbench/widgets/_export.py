"""Static HTML export of an executed notebook whose widgets render offline.

nbconvert's ``lab`` template embeds the widget state (``metadata.widgets``, which nbclient records while
executing) but loads the renderer, require.js and MathJax from CDNs. `export_notebook_html` points the
renderer at a local copy of ``@jupyter-widgets/html-manager``'s standalone ``embed.js`` (fetched from npm at setup into
``workbench/widgets/static/html-manager``, copied next to the HTML) and drops the other CDN scripts, so
the page shows its sliders, strips and plots without a network.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

__all__ = ["WIDGET_ASSETS", "export_notebook_html"]

#: The renderer folder (filled by scripts/fetch_widget_js.sh) (``embed.js`` and its icon fonts).
WIDGET_ASSETS = Path(__file__).with_name("static") / "html-manager"

_EMPTY_SCRIPT = re.compile(r'<script[^>]*\ssrc=""[^>]*>\s*</script>\s*', re.IGNORECASE)
_CDN_SCRIPT = re.compile(
    r'<script[^>]*\ssrc="https?://(?:cdnjs\.cloudflare\.com|unpkg\.com|cdn\.jsdelivr\.net)[^"]*"[^>]*>\s*</script>\s*',
    re.IGNORECASE,
)


def export_notebook_html(executed_ipynb: str | Path, out_html: str | Path, *, theme: str = "light") -> Path:
    """Write ``out_html`` from an executed notebook, widget state embedded, renderer served locally.

    The renderer goes to ``<out_html stem>_files/`` beside the HTML (keep the two together when moving
    the page). Notebooks without widget state export the same way, just without the renderer.

    Args:
        executed_ipynb: a notebook executed with its widget state stored (nbclient's default).
        out_html: the HTML file to write.
        theme: nbconvert's lab theme (``light`` or ``dark``).

    Returns:
        The path written.
    """
    import nbformat
    from nbconvert import HTMLExporter

    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(str(executed_ipynb), as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    assets = out.parent / f"{out.stem}_files"
    has_widgets = "application/vnd.jupyter.widget-state+json" in nb.metadata.get("widgets", {})
    if has_widgets:
        if not (WIDGET_ASSETS / "embed.js").is_file():
            raise FileNotFoundError(
                f"{WIDGET_ASSETS / 'embed.js'} is missing: run `bash scripts/fetch_widget_js.sh` (part of make setup)"
            )
        assets.mkdir(parents=True, exist_ok=True)
        for item in WIDGET_ASSETS.iterdir():
            if item.suffix in (".js", ".woff2", ".txt"):
                shutil.copy2(item, assets / item.name)
    exporter = HTMLExporter(  # type: ignore[no-untyped-call]  # nor does nbconvert's HTMLExporter constructor
        template_name="lab",
        theme=theme,
        widget_renderer_url=f"{assets.name}/embed.js",
        jupyter_widgets_base_url="",
        require_js_url="",
        mathjax_url="",
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
    )
    body, _ = exporter.from_notebook_node(nb)
    body = _EMPTY_SCRIPT.sub("", body)
    body = _CDN_SCRIPT.sub("", body)
    out.write_text(body, encoding="utf-8")
    return out
