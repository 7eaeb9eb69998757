#!/usr/bin/env bash
# Install the Chromium that tests/widgets/test_browser.py drives through Playwright.
#
# Playwright's own browser download (`playwright install`) is never used: the browser comes from the
# distribution's package (Debian: `chromium`, at /usr/bin/chromium). Idempotent: does nothing when
# /usr/bin/chromium already exists. Needs root (or passwordless sudo) for apt-get.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium fonts-dejavu-core

if [ ! -x /usr/bin/chromium ]; then
    echo "install_browser.sh: /usr/bin/chromium still missing after apt-get install" >&2
    exit 1
fi
echo "installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
