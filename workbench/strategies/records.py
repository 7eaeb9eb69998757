"""Records a compaction creates: the boundary marker and the summary user message (docs §2.6, §5.1, §7.3).

Both get deterministic uuids (a hash of what they replace), so the same replay produces the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..transcript.model import Block, Record

__all__ = ["compact_boundary", "summary_message"]


def _uuid(*parts: str) -> str:
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def compact_boundary(trigger: str, pre_tokens: int, last: Record | None, *, kind: str = "compact") -> Record:
    """``createCompactBoundaryMessage``: ``parentUuid`` null, ``logicalParentUuid`` = last message."""
    last_uuid = last.uuid if last is not None else None
    uuid = _uuid(kind, "boundary", str(last_uuid), str(pre_tokens))
    raw = {
        "parentUuid": None,
        "logicalParentUuid": last_uuid,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "level": "info",
        "uuid": uuid,
        "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
    }
    return Record(
        kind="system",
        subtype="compact_boundary",
        uuid=uuid,
        logical_parent_uuid=last_uuid,
        blocks=(Block.text_block("Conversation compacted"),),
        string_content=True,
        raw=raw,
        modified=True,
    )


def summary_message(text: str, boundary: Record, replaced: Sequence[Record] = ()) -> Record:
    """The compact summary: a *string*-content user message with ``isCompactSummary`` (docs §2.6 step 7)."""
    uuid = _uuid("summary", str(boundary.uuid), text)
    raw = {
        "parentUuid": boundary.uuid,
        "type": "user",
        "message": {"role": "user", "content": text},
        "isCompactSummary": True,
        "isVisibleInTranscriptOnly": True,
        "uuid": uuid,
    }
    return Record(
        kind="user",
        role="user",
        uuid=uuid,
        parent_uuid=boundary.uuid,
        blocks=(Block.text_block(text),),
        string_content=True,
        has_content=True,
        is_compact_summary=True,
        is_visible_in_transcript_only=True,
        raw=raw,
        modified=True,
    )
