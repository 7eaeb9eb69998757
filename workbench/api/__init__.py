"""The API view of transcripts: normalization, pairing repair, validation and cut-point invariants."""

from .normalize import ApiMessage, Request, normalize
from .repair import Repair, repair
from .validate import RULES, Violation, original_thinking_blocks, validate

__all__ = [
    "RULES",
    "ApiMessage",
    "Repair",
    "Request",
    "Violation",
    "normalize",
    "original_thinking_blocks",
    "repair",
    "validate",
]
