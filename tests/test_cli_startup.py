"""`streamjoin <command>` imports only that command's module; `streamjoin --help` lists every one."""

from __future__ import annotations

import subprocess
import sys

from streamjoin.cli.main import build_app

_PROBE = (
    "import sys; from streamjoin.cli import main as m; sys.argv = ['streamjoin', *sys.argv[1:]]\n"
    "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
    "print(sorted(n for n in sys.modules if n.startswith('streamjoin.cli.') and n != 'streamjoin.cli.main'))"
)


def _cli_modules(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_a_named_command_imports_only_its_module() -> None:
    assert _cli_modules("replay", "--help") == "['streamjoin.cli.replay']"
    assert _cli_modules("shed-eval", "--help") == "['streamjoin.cli.shed_eval']"


def test_help_lists_every_command() -> None:
    modules = _cli_modules("--help")
    for name in ("replay", "joiner", "api", "dev", "topics", "shed_eval", "backfill", "archiver", "plan"):
        assert f"'streamjoin.cli.{name}'" in modules, modules
    app = build_app()
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert {"replay", "joiner", "api", "dev", "topics", "shed-eval", "backfill", "archiver", "plan"} <= names


def test_replay_of_a_json_query_leaves_the_sql_parser_unimported() -> None:
    # sqlglot is a tenth of a CPU second of every replay's start-up; only SQL text needs it
    probe = (
        "import sys, streamjoin.cli.replay, streamjoin.replay\n"
        "print(sorted(n for n in ('sqlglot', 'streamjoin.query.sql') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
