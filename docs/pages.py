"""The generated pages of the documentation site, as functions of the code and the data they describe
(`docs/gen_pages.py` writes them at build time; `tests/test_docs.py` builds the site)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["changelog_page", "cli_page", "results_page", "strategies_page", "validation_page"]


def _cell(text: object) -> str:
    """A value as one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def strategies_page() -> str:
    """Every registered strategy: what it does, what it models (its ``source``), unsafe or not, defaults."""
    from workbench.strategies.registry import describe_strategies

    rows = describe_strategies()
    out = [
        "# Strategies",
        "",
        f"The {len(rows)} strategies registered in this build, from the registry "
        "(`workbench strategies --json` gives the same rows with each config's JSON schema). *Unsafe* marks a "
        "strategy whose real algorithm makes requests the API rejects: the workbench keeps it to measure that "
        "damage. *Source* is what the strategy models: the repository or document, the file and the version "
        "or commit its constants come from.",
        "",
        "| strategy | what it does | source | unsafe |",
        "|---|---|---|---|",
    ]
    for row in rows:
        out.append(
            f"| `{row['name']}` | {_cell(row['description'])} | {_cell(row['source'] or '–')} | "
            f"{'unsafe' if row['unsafe'] else ''} |"
        )
    out += ["", "## Defaults", ""]
    for row in rows:
        defaults = json.dumps(row["defaults"], indent=2, sort_keys=True)
        out += [f"### `{row['name']}`", "", "```json", defaults, "```", ""]
    return "\n".join(out) + "\n"


def cli_page() -> str:
    """Every command's ``--help``, from the parsers the command line builds."""
    from workbench.cli import build_parser

    main, commands = build_parser()
    out = ["# Command line", "", "`workbench COMMAND --help` prints the same text.", "", "```text"]
    out += [main.format_help().rstrip(), "```", ""]
    for name, parser in commands.items():
        out += [f"## `workbench {name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out) + "\n"


def results_page(data: Path) -> str:
    """Every registered strategy with its defaults replayed over the embedded corpus ``data``, offline: the
    table a reader can re-make with ``wb.replay(wb.load("data"), wb.strategies().name)``."""
    import workbench as wb
    from workbench.strategies.registry import strategies

    corpus = wb.load(data, progress=False)
    names = list(strategies())
    summary = wb.replay(corpus, names, progress=False).summary()
    columns = [
        ("label", "strategy", "{}"),
        ("saved_share", "tokens saved", "{:.1%}"),
        ("compactions", "compactions", "{:,}"),
        ("violating_steps", "rejected requests", "{:,}"),
        ("expected_recovery_tokens", "expected recovery (tokens)", "{:,.0f}"),
        ("total_cost_usd", "total cost (USD)", "{:,.2f}"),
    ]
    out = [
        "# Results on the embedded data",
        "",
        f"Every registered strategy, with its defaults, replayed over the {len(corpus)} sessions of `data/` "
        "(synthetic sessions shipped with the package) when this site was built: offline, with the rough "
        "token estimator. *Tokens saved* is the share of input tokens saved against no compaction; *rejected "
        "requests* the calls whose request breaks an API invariant; *expected recovery* the tokens the agent "
        "is expected to spend re-acquiring what a compaction dropped (see Metrics); *total cost* includes "
        "summary calls, memory extraction and expected recovery.",
        "",
        "| " + " | ".join(title for _, title, _ in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for _, row in summary.iterrows():
        cells = []
        for key, _, fmt in columns:
            value = row.get(key)
            cells.append("–" if value is None or value != value else _cell(fmt.format(value)))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _number(value: object, fmt: str) -> str:
    return "undefined" if value is None else fmt.format(value)


def validation_page(corpus: Path | None) -> str:
    """``workbench recovery CORPUS --validate`` as tables: every fidelity score against what agents really
    re-acquired after the corpus's recorded compactions. Without a corpus the page says how to make it."""
    import subprocess
    import sys

    title = ["# Fidelity scores validated against real compactions", ""]
    if corpus is None or not corpus.is_dir():
        return (
            "\n".join(
                [
                    *title,
                    "This page is generated from a corpus of real sessions (`WORKBENCH_CORPUS`, default "
                    "`../shared/corpus`), which this build did not have. Run `workbench recovery PATH --validate` "
                    "on your own history for the same tables."
                ]
            )
            + "\n"
        )
    command = [sys.executable, "-c", "from workbench.cli import main; main()", "recovery", str(corpus)]
    result = subprocess.run([*command, "--validate", "--json"], capture_output=True, text=True, check=True)
    data = json.loads(result.stdout)["validation"]
    compactions = data["compactions"]
    sessions = len({row["session_id"] for row in compactions})
    versions = sorted({row["version"] for row in compactions if row.get("version")})
    out = [
        *title,
        f"Generated when this site was built, from `workbench recovery {corpus.name} --validate`: "
        f"{len(compactions)} recorded compactions in {sessions} sessions"
        + (f" (Claude Code {versions[0]}–{versions[-1]})" if versions else "")
        + ". Spearman's rank correlation per compaction, a two-sided permutation p-value and a 95% bootstrap "
        "interval over compactions. *Useful sign* is the sign a score needs to be useful: a score of what was "
        "kept should fall as re-acquisition rises. *Undefined* means a column is constant over these "
        "compactions (nothing to correlate), not a bad score. Every figure here is small-sample.",
        "",
        "## Scores against measured re-acquisition (tokens)",
        "",
        "| score | useful sign | n | rho | p | 95% CI |",
        "|---|---|---|---|---|---|",
    ]

    def rows(key: str) -> list[str]:
        lines = []
        for row in data[key]:
            ci = "–" if row["ci_low"] is None else f"[{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"
            name = row["score"] if key == "correlations" else f"{row['score']} → {row['target']}"
            lines.append(
                f"| `{name}` | {row['useful_sign']} | {row['n']} | {_number(row['rho'], '{:+.2f}')} | "
                f"{_number(row['p_permutation'], '{:.3f}')} | {ci} |"
            )
        return lines

    out += rows("correlations")
    out += [
        "",
        "## Each predicted measure against what it predicts",
        "",
        "| predicted → measured | useful sign | n | rho | p | 95% CI |",
        "|---|---|---|---|---|---|",
        *rows("measure_correlations"),
        "",
        "## Files read before a compaction: re-read rate by what the summary did with them",
        "",
        "| predictor | files | true | re-read if true | re-read if false | Fisher p |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["file_predictors"]:
        out.append(
            f"| `{row['predictor']}` | {row['files']} | {row['true']} | {row['reread_if_true']:.0%} | "
            f"{row['reread_if_false']:.0%} | {row['p_fisher']:.3f} |"
        )
    return "\n".join(out) + "\n"


def changelog_page(path: Path) -> str:
    """The repository's changelog as a page."""
    return path.read_text(encoding="utf-8")
