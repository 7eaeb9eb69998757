"""Transcripts: the canonical model, one loader per format, export."""

# gemini_session registers first: its .json objects carry "sessionId", which the Claude Code sniffer would take.
from . import gemini_session  # noqa: F401, I001
from . import claude_code, anthropic_messages, swe_agent, openhands, gemini_cli, aider, codex, chat_jsonl, hf  # noqa: F401  (register the built-in loaders)
from .export import export_session, session_bytes
from .model import BLOCK_KINDS, Block, Corpus, Record, Session, Skip, canonical_json
from .registry import LoadReport, TranscriptError, detect, get_loader, load_corpus, load_paths, loaders, register

__all__ = [
    "BLOCK_KINDS",
    "Block",
    "Corpus",
    "LoadReport",
    "Record",
    "Session",
    "Skip",
    "TranscriptError",
    "canonical_json",
    "detect",
    "export_session",
    "get_loader",
    "load_corpus",
    "load_paths",
    "loaders",
    "register",
    "session_bytes",
]
