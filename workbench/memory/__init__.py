"""Session memory: when Claude Code extracts notes (docs §1)."""

from .trigger import ExtractionTrigger, TriggerConfig, TriggerResult, should_extract_memory

__all__ = ["ExtractionTrigger", "TriggerConfig", "TriggerResult", "should_extract_memory"]
