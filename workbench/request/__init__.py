"""The API view of transcripts: normalization, pairing repair, validation and cut-point invariants.

`normalize` (docs §8.1) builds the request Claude Code sends, `repair` reproduces its pairing repair
(§8.2), `validate` the API's 400s (§9), `adjust_to_api_invariants` SM-compact's cut adjustment (§2.5),
and `adjust_for_thinking` a thinking-aware extension of it (not in Claude Code, §9 item 11).
The corpus studies built on it (`validate_report`, `invariants_report`: the naive-cut study) are in
`workbench.studies`.
"""

from .invariants import adjust_for_thinking, adjust_to_api_invariants
from .normalize import ApiMessage, Request, is_sent, normalize
from .repair import Repair, repair
from .validate import RULES, Violation, original_thinking_blocks, validate

__all__ = [
    "RULES",
    "ApiMessage",
    "Repair",
    "Request",
    "Violation",
    "adjust_for_thinking",
    "adjust_to_api_invariants",
    "is_sent",
    "normalize",
    "original_thinking_blocks",
    "repair",
    "validate",
]
