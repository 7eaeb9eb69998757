"""Token counts as a column of a Hugging Face dataset of records (`workbench.transcript.hf`): each row's
record counted by a per-record estimator, in parallel with ``num_proc``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..transcript.hf import record_from_json
from .estimators import get_estimator

if TYPE_CHECKING:
    import datasets

__all__ = ["add_token_counts"]


def _count_batch(batch: dict[str, list[Any]], estimator: str, column: str) -> dict[str, list[int]]:
    counter = get_estimator(estimator)
    return {column: [counter.count(record_from_json(j)) if j else 0 for j in batch["record_json"]]}


def add_token_counts(
    ds: datasets.Dataset,
    *,
    estimator: str = "claude-rough",
    num_proc: int | None = None,
    column: str | None = None,
    batch_size: int = 256,
) -> datasets.Dataset:
    """``ds`` plus a ``tokens_<estimator>`` column (per-record estimate; 0 on placeholder rows)."""
    column = column or f"tokens_{estimator.replace(':', '_')}"
    return ds.map(
        _count_batch,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        fn_kwargs={"estimator": estimator, "column": column},
        desc=f"tokens ({estimator})",
    )
