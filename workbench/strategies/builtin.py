"""Imports every built-in strategy module so each registers itself."""

from . import baseline, claude_code, full_compact, microcompact, sm_compact  # noqa: F401
from . import aider, codex, context_editing, gemini, langchain, letta, observation_masking, opencode, openhands, recent_window, truncate_oldest  # noqa: F401
