"""The ``workbench`` command line on argparse: the same commands, options, defaults and exit codes as the
typer version it replaced, one-line usage errors, and a start-up that imports only what a command needs."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli

from workbench import cli
from workbench.cli import COMMANDS, build_parser, command_parser, parse

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"

# Every command's options (short names included): the command line's contract with its users.
OPTIONS = {
    "ingest": {"--workers", "--json", "--format"},
    "tokens": {"-e", "--estimator", "--json", "--format"},
    "export": {"--out", "--force", "--json", "--format"},
    "validate": {"--no-repair", "--json", "--format"},
    "invariants": {"--json", "--format"},
    "check": {"-s", "--strategy", "--json", "--format"},
    "reproduce": {"--json", "--format"},
    "strategies": {"--json"},
    "replay": {
        "-s",
        "--strategy",
        "--set",
        "--estimator",
        "--out",
        "--force",
        "--process",
        "--workers",
        "--json",
        "--format",
    },
    "recovery": {"--estimator", "--validate", "--json", "--format"},
    "report": {
        "--json",
        "--window",
        "--blocking-limit",
        "--baseline",
        "--references",
        "--probes",
        "--probe-budget-usd",
        "--probe-model",
        "--probe-judge-model",
        "--probe-kind",
        "--probes-per-kind",
    },
    "sweep": {
        "--executor",
        "--workers",
        "--store",
        "--report",
        "--papermill",
        "--batch-size",
        "--max-grid-points",
        "--probes",
        "--probe-budget-usd",
        "--probe-model",
        "--json",
    },
    "tune": {"--executor", "--workers", "--store", "--plot", "--json"},
    "advise": {"--executor", "--workers", "--store", "--html", "--json", "--format"},
    "demo": {"--out", "--executor", "--workers", "--json"},
    "notebooks": {"--force", "--json"},
}
# The least a command runs with: its required arguments.
MINIMAL = {
    "check": ["p"],
    "export": ["p", "--out", "o"],
    "replay": ["p", "-s", "none"],
    "report": ["d"],
    "sweep": ["spec.yaml"],
    "tune": ["spec.yaml"],
    "strategies": [],
    "demo": [],
    "notebooks": ["d"],
}


def test_the_commands_and_their_options() -> None:
    _, parsers = build_parser()
    assert list(parsers) == list(OPTIONS)
    for name, parser in parsers.items():
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert flags == OPTIONS[name] | {"-h", "--help"}, name


def test_a_run_builds_the_same_parser_the_command_list_holds() -> None:
    """`parse` builds only the named command's parser (`command_parser`): the same one, help and all."""
    _, parsers = build_parser()
    for command in COMMANDS:
        assert command_parser(command).format_help() == parsers[command.name].format_help(), command.name


@pytest.mark.parametrize("name", list(OPTIONS))
def test_help_of_every_command_exits_0_and_lists_its_options(name: str) -> None:
    result = run_cli(name, "--help")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.startswith(f"usage: workbench {name} ")
    for flag in OPTIONS[name]:
        assert f"{flag} " in result.stdout or f"{flag}\n" in result.stdout or f"{flag}," in result.stdout, flag
    command = next(c for c in COMMANDS if c.name == name)
    assert " ".join(command.summary.split()[:6]) in " ".join(result.stdout.split())


def test_help_shows_value_defaults_as_typer_did() -> None:
    text = " ".join(run_cli("report", "--help").stdout.split())
    assert "(default: 200000)" in text and "(default: 177000)" in text and "(default: claude-sonnet-4-6)" in text
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "(default: results/demo)" in " ".join(run_cli("demo", "--help").stdout.split())


def test_no_arguments_prints_the_help_listing_every_command() -> None:
    result = run_cli()
    assert result.exit_code == 2  # as typer (click 8.2+) exited for no_args_is_help
    assert result.stdout.startswith("usage: workbench ")
    for command in COMMANDS:
        assert f"    {command.name}" in result.stdout
    assert run_cli("--help").stdout == result.stdout and run_cli("--help").exit_code == 0


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["ingest"], "PATH"),
        (["replay", "data"], "--strategy"),
        (["replay", "data", "-s"], "-s"),
        (["replay", "data", "-s", "none", "--strategy", "sm-compact"], "given twice ('none', then 'sm-compact')"),
        (["export", "data"], "--out"),
        (["report", "d", "--window", "abc"], "--window"),
        (["report", "d", "--probe-budget-usd", "abc"], "--probe-budget-usd"),
        (["ingest", "data", "--jso"], "--jso"),  # no prefix abbreviations, as with typer
        (["ingest", "data", "--json=yes"], "--json"),
        (["nope"], "nope"),
        (["sweep", "spec.yaml", "--workers", "0"], "--workers"),
        (["sweep", "spec.yaml", "--batch-size", "0"], "--batch-size"),
        (["sweep", "spec.yaml", "--max-grid-points", "0"], "--max-grid-points"),
        (["sweep", "spec.yaml", "--workers", "two"], "--workers"),
    ],
)
def test_usage_errors_exit_2_with_one_line_naming_the_option(argv: list[str], names: str) -> None:
    result = run_cli(*argv)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.endswith("\n") and "\n" not in result.stderr[:-1], result.stderr
    assert names in result.stderr and "error: " in result.stderr and "--help" in result.stderr


def test_a_strategy_given_twice_is_refused_not_the_last_one_replayed() -> None:
    result = run_cli("replay", "data", "-s", "none", "-s", "sm-compact")
    assert result.exit_code == 2 and "one strategy per replay" in result.stderr and "workbench report" in result.stderr
    assert parse(["replay", "data", "-s", "sm-compact"])[1]["strategy"] == "sm-compact"


def test_a_min_1_option_rejects_0_and_takes_1() -> None:
    result = run_cli("sweep", "spec.yaml", "--workers", "0")
    assert result.exit_code == 2 and "argument --workers: must be at least 1, got 0" in result.stderr
    assert parse(["sweep", "spec.yaml", "--workers", "1", "--batch-size", "1"])[1]["workers"] == 1
    # every --workers has the minimum (tune's and demo's had none: `demo --workers 0` ended in an internal error)
    for argv in (["tune", "spec.yaml"], ["demo"], ["replay", "p", "-s", "none"], ["ingest", "p"]):
        result = run_cli(*argv, "--workers", "0")
        assert result.exit_code == 2 and "argument --workers: must be at least 1, got 0" in result.stderr, argv


def test_arguments_arrive_typed_with_the_functions_defaults() -> None:
    """Every function parameter is an argument (by ``dest``), and what a run without options receives is
    the function's own default: the table and the signatures cannot drift apart."""
    for command in COMMANDS:
        _, options = parse([command.name, *MINIMAL.get(command.name, ["p"])])
        parameters = inspect.signature(command.run).parameters
        assert set(options) == set(parameters), command.name
        for name, parameter in parameters.items():
            if parameter.default is not inspect.Parameter.empty:
                assert options[name] == parameter.default, (command.name, name)


def test_repeated_lists_paths_and_flags_parse_as_typer_did() -> None:
    command, options = parse(
        ["replay", "a", "b", "-s", "sm-compact", "--set", "min_tokens=1", "--set", "x.y=2", "--process", "--json"]
    )
    assert command.name == "replay"
    assert options["paths"] == [Path("a"), Path("b")] and options["strategy"] == "sm-compact"
    assert options["sets"] == ["min_tokens=1", "x.y=2"] and options["process"] is True and options["as_json"] is True
    assert parse(["tokens", "p", "-e", "claude-rough", "--estimator", "usage"])[1]["estimator"] == [
        "claude-rough",
        "usage",
    ]
    assert parse(["report", "d", "--probe-kind", "a", "--probe-kind", "b"])[1]["probe_kinds"] == ["a", "b"]
    report = parse(["report", "d", "--window", "1000", "--probe-budget-usd", "0.5"])[1]
    assert report["results_dir"] == Path("d") and report["window"] == 1000 and report["probe_budget_usd"] == 0.5
    # options between positional arguments, as click allowed
    assert parse(["ingest", "a", "--json", "b"])[1] == {
        "paths": [Path("a"), Path("b")],
        "workers": 1,
        "as_json": True,
        "fmt": None,
    }
    assert parse(["replay", "a", "-s", "none", "--workers", "3", "b"])[1]["workers"] == 3


def test_an_ingest_interleaved_with_options_reads_every_path() -> None:
    tiny = DATA / "tiny-hello-b8a1abcd.jsonl"
    result = run_cli("ingest", tiny, "--json", DATA)
    assert result.exit_code == 0
    both = json.loads(result.stdout)
    alone = [json.loads(run_cli("ingest", path, "--json").stdout) for path in (tiny, DATA)]
    assert alone[0]["files"] == 1 and alone[1]["files"] > 1
    assert both["files"] == alone[0]["files"] + alone[1]["files"]
    assert both["lines"] == alone[0]["lines"] + alone[1]["lines"]


def test_an_unexpected_error_is_one_line_exit_1_and_debug_shows_the_traceback(monkeypatch, tmp_path) -> None:
    from workbench.transcript import registry

    def boom(*args, **kwargs):
        raise RuntimeError("kaput")

    monkeypatch.setattr(registry, "file_summaries", boom)
    result = run_cli("ingest", DATA)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "error: RuntimeError: kaput (internal error; WORKBENCH_DEBUG=1 shows the traceback)\n"
    monkeypatch.setenv("WORKBENCH_DEBUG", "1")
    with pytest.raises(RuntimeError, match="kaput"):
        cli.main(["ingest", str(DATA)])


def test_ctrl_c_exits_130(monkeypatch) -> None:
    from workbench.transcript import registry

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(registry, "file_summaries", interrupted)
    result = run_cli("ingest", DATA)
    assert result.exit_code == 130 and result.stderr == "aborted\n"


def test_a_closed_pipe_exits_0_without_a_message() -> None:
    """The reader of ``workbench ingest … | head`` went away before the output was written: exit 0 and
    nothing on stderr (not ``error: BrokenPipeError``, exit 1)."""
    argv = [sys.executable, "-c", "from workbench.cli import main; main()", "ingest", str(DATA), "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # long before the child has started up and written
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert code == 0 and err == "", err


_IMPORTS = """
import json, sys
import workbench.cli
from workbench.cli import parse
parse(sys.argv[1:])
heavy = ("typer", "click", "pydantic", "pandas", "pyarrow", "yaml", "workbench.replay", "workbench.strategies")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""

_RUN = """
import json, sys
from workbench.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = ("typer", "click", "pydantic", "pandas", "pyarrow", "yaml", "tqdm", "workbench.replay", "workbench.strategies")
print(json.dumps({"code": code, "imported": sorted(m for m in heavy if m in sys.modules)}))
"""


def _python(code: str, *args: str | Path, cache: Path) -> str:
    env = {**__import__("os").environ, "WORKBENCH_CACHE_DIR": str(cache)}
    argv = [sys.executable, "-c", code, *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout


def test_importing_the_cli_and_parsing_ingest_imports_no_typer_pydantic_or_pandas(tmp_path: Path) -> None:
    out = _python(_IMPORTS, "ingest", DATA, "--json", cache=tmp_path)
    assert json.loads(out) == []
    assert json.loads(_python(_IMPORTS, "replay", DATA, "-s", "none", cache=tmp_path)) == []


def test_an_ingest_run_imports_no_pandas_pydantic_yaml_replay_or_strategies(tmp_path: Path) -> None:
    """Cold (the parsed-session cache filled) and warm (read from it): the transcript package only."""
    for _ in ("cold", "warm"):
        out = json.loads(_python(_RUN, "ingest", DATA, "--json", cache=tmp_path).strip().splitlines()[-1])
        assert out == {"code": 0, "imported": []}
    # what replay needs, and no more: the engine, the strategies and pydantic, not pandas (no --out)
    out = json.loads(_python(_RUN, "replay", DATA, "-s", "none", "--json", cache=tmp_path).strip().splitlines()[-1])
    assert out == {"code": 0, "imported": ["pydantic", "workbench.replay", "workbench.strategies"]}


def test_the_command_line_turns_pydantic_plugins_off_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["strategies", "--json"])
    assert exit_.value.code == 0
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"  # no entry-point scan at the first model
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # the user's choice: every plugin loads
    with pytest.raises(SystemExit):
        cli.main(["strategies", "--json"])
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""


def test_help_width_is_the_one_argparse_would_take(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    for columns in ("", "57", "bad", "-3"):
        monkeypatch.setenv("COLUMNS", columns)
        assert cli._help_width() == shutil.get_terminal_size().columns - 2, columns


def test_command_help_is_the_docstring_as_inspect_cleans_it() -> None:
    import inspect

    from workbench.cli.common import _cleandoc

    for command in cli.COMMANDS:
        assert command.description == inspect.cleandoc(command.run.__doc__ or ""), command.name
    samples = ["", "\n\n", "one", " a\n   b\n  c\n\n", "x\n\ty\n  z", "  \n  a\n    b\n   ", "a\n\n    b\n  c"]
    for doc in samples:
        assert _cleandoc(doc) == inspect.cleandoc(doc), repr(doc)
