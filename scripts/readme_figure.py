"""The README's figure: every registered strategy on the embedded data/ corpus, tokens saved against the
tokens the agent is expected to re-acquire (offline, rough estimator). Run it to remake
``docs/assets/strategies.png``: ``.venv/bin/python scripts/readme_figure.py``."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import workbench as wb
from workbench.strategies.registry import strategies

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    corpus = wb.load(ROOT / "data", progress=False)
    runs = wb.replay(corpus, list(strategies()), progress=False)
    summary = runs.summary().sort_values("saved_share")
    unsafe = {name for name, cls in strategies().items() if cls.unsafe}
    colours = ["#d55e00" if name in unsafe else "#0072b2" for name in summary["strategy"]]
    names = [
        f"{label} (unsafe)" if strategy in unsafe else label
        for label, strategy in zip(summary["label"], summary["strategy"], strict=True)
    ]
    figure, (saved, recovery) = plt.subplots(1, 2, sharey=True, figsize=(10, 0.28 * len(summary) + 1.2))
    saved.barh(names, summary["saved_share"] * 100, color=colours)
    saved.set_xlabel("input tokens saved, % (higher is better)")
    recovery.barh(names, summary["expected_recovery_tokens"] / 1000, color=colours)
    recovery.set_xlabel("expected re-acquisition, thousand tokens (lower is better)")
    for axes in (saved, recovery):
        axes.grid(axis="x", alpha=0.3)
        axes.tick_params(axis="y", labelsize=8)
    figure.suptitle(f"Every registered strategy on the embedded data ({len(corpus)} sessions, defaults, offline)")
    figure.tight_layout()
    out = ROOT / "docs" / "assets" / "strategies.png"
    figure.savefig(out, dpi=110, bbox_inches="tight")
    print(out)


if __name__ == "__main__":
    main()
