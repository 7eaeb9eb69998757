"""Imports every built-in strategy module so each registers itself."""

from . import (  # noqa: F401
    aider,
    baseline,
    claude_code,
    codex,
    context_editing,
    full_compact,
    gemini,
    langchain,
    letta,
    microcompact,
    observation_masking,
    opencode,
    openhands,
    recent_window,
    sm_compact,
    truncate_oldest,
)
