#!/usr/bin/env bash
# Fetch the standalone Jupyter widget renderer (`@jupyter-widgets/html-manager` dist/embed.js and its
# icon fonts, BSD-3-Clause) from the npm registry into workbench/widgets/static/html-manager/, where
# `workbench.widgets.export_notebook_html` copies it next to exported HTML so widgets render offline.
# It is fetched at setup (not committed: a 1.9 MB third-party build). Idempotent.
set -euo pipefail
version="1.0.15"  # html-manager 1.x renders ipywidgets 8 state
dest="$(cd "$(dirname "$0")/.." && pwd)/workbench/widgets/static/html-manager"
if [ -f "$dest/embed.js" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_widget_js.sh: npm not found; static HTML export of widgets will not work until" \
       "$dest/embed.js exists (see README there)" >&2
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "@jupyter-widgets/html-manager@$version" --silent >/dev/null)
tar xzf "$tmp"/jupyter-widgets-html-manager-"$version".tgz -C "$tmp"
cp "$tmp"/package/dist/embed.js "$tmp"/package/dist/embed.js.LICENSE.txt "$tmp"/package/dist/*.woff2 "$dest/"
echo "widget renderer: $dest/embed.js (@jupyter-widgets/html-manager $version)"
