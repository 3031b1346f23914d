"""The command line of `memvm hook`, shared by the fast client and the in-process path.

Standard library, the engine's name shapes and the hosts (hooks/hosts.py, as light) only: the
client parses it before deciding whether anything heavy is imported.
"""

import argparse
from typing import NoReturn

from memvm.engine.names import NAME_RULE, is_name
from memvm.hooks.hosts import HOSTS

GUARD_PRESETS = ("default", "strict", "relaxed")
# Recalled context per prompt, in tokens.
DEFAULT_RECALL_TOKENS = 600
# A hook waits this long for another writer's lock, well inside the hosts' timeouts.
DEFAULT_WAIT_MS = 3_000
# How long the background process stays up without an event before it exits.
DEFAULT_BACKGROUND_IDLE_S = 600


class HookUsageError(Exception):
    """The hook's own command line is wrong (a settings-file typo): said once, never a block."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise HookUsageError(message)


def hook_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memvm hook",
        description="Handle one host hook event: JSON on stdin, the host's JSON answer on stdout.",
    )
    add_arguments(parser)
    return parser


def _namespace(text: str) -> str:
    # Any string would be stored as the namespace of every row the hook writes, and a name no
    # server could serve makes the whole file fail `memvm doctor` and every restore.
    if not is_name(text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a namespace name: {NAME_RULE}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=list(HOSTS), help="the agent host that runs this hook")
    parser.add_argument("--db", help="SQLite file (default: $MEMVM_DB, else the per-user data directory)")
    parser.add_argument(
        "--namespace", type=_namespace, default="default", help="whose memory (as for memvm serve)"
    )
    parser.add_argument(
        "--recall-tokens",
        type=int,
        default=DEFAULT_RECALL_TOKENS,
        help="tokens of recalled pages a prompt may get as context (0: none)",
    )
    parser.add_argument(
        "--wait-ms",
        type=int,
        default=DEFAULT_WAIT_MS,
        help="how long to wait for a busy database before answering without it",
    )
    parser.add_argument(
        "--guards",
        choices=GUARD_PRESETS,
        default="default",
        help="how hard the tool-call guards are, as for memvm serve (the host's own file and shell "
        "tools meet caps only)",
    )
    parser.add_argument(
        "--guard-config",
        metavar="FILE",
        help="JSON object of guard settings over the preset, as for memvm serve (workspace_tools "
        "replaces the host's list of its own tools)",
    )
    parser.add_argument(
        "--background-idle",
        type=int,
        default=DEFAULT_BACKGROUND_IDLE_S,
        metavar="SECONDS",
        help=(
            "keep a background process per database answering events, so that each event costs "
            "little more than starting Python; it exits after this many seconds without an event "
            "(0: none, every event is answered in its own process)"
        ),
    )
