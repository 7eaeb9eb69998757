"""Lets the summary tests reuse the hand-built session of ``tests/memory/memory_records.py``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
