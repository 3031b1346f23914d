"""`memvm hook HOST`: read one event on stdin, answer on stdout, and never break the host.

Whatever goes wrong (bad input, an unknown event, a busy, full or broken database) the answer is
`{}` with exit code 0, which lets the host go on, plus one line on stderr saying what was skipped:
exit code 2 means "block" to the hosts, so it is never used by accident.
"""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.errors import DatabaseRefused, StorageBusy, StorageError, StorageFull
from memvm.engine.paths import default_db_path
from memvm.hooks import claude_code, gemini_cli
from memvm.hooks.events import HookAnswer, HookEvent, Host, MalformedEvent
from memvm.hooks.handle import HookSettings, handle

# Recalled context per prompt, in tokens.
DEFAULT_RECALL_TOKENS = 600
# A hook waits this long for another writer's lock, well inside the hosts' timeouts.
DEFAULT_WAIT_MS = 3_000


class HookUsageError(Exception):
    """The hook's own command line is wrong (a settings-file typo): said once, never a block."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise HookUsageError(message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=[h.value for h in Host], help="the agent host that runs this hook")
    parser.add_argument("--db", help="SQLite file (default: $MEMVM_DB, else the per-user data directory)")
    parser.add_argument("--namespace", default="default", help="whose memory (as for memvm serve)")
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memvm hook",
        description="Handle one host hook event: JSON on stdin, the host's JSON answer on stdout.",
    )
    add_arguments(parser)
    return parser


_Protocol = tuple[Callable[[Any], HookEvent], Callable[[HookEvent, HookAnswer], dict[str, Any]]]

# Each host's reading of its events and writing of its answers; what memvm does is the same for all.
_PROTOCOLS: dict[Host, _Protocol] = {
    Host.CLAUDE_CODE: (claude_code.parse, claude_code.render),
    Host.GEMINI_CLI: (gemini_cli.parse, gemini_cli.render),
}


def _protocol(host: Host) -> _Protocol:
    return _PROTOCOLS[host]


def _answer(args: argparse.Namespace, raw: bytes) -> dict[str, Any]:
    parse, render = _protocol(Host(args.host))
    try:
        payload = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedEvent("the event on stdin is not JSON") from exc
    event = parse(payload)
    db = Path(args.db).expanduser() if args.db else default_db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    answer = anyio.run(_run, args, db, event)
    return render(event, answer)


async def _run(args: argparse.Namespace, db: Path, event: HookEvent) -> HookAnswer:
    engine = await Engine.open(db, EngineConfig(busy_timeout_ms=max(0, args.wait_ms)))
    try:
        settings = HookSettings(namespace=args.namespace, recall_tokens=max(0, args.recall_tokens))
        return await handle(engine, event, settings)
    finally:
        await engine.close()


def _skipped(exc: BaseException) -> str:
    if isinstance(exc, HookUsageError | MalformedEvent):
        return str(exc)
    if isinstance(exc, StorageBusy):
        return "the database stayed busy past --wait-ms"
    if isinstance(exc, StorageFull):
        return "the database has no room left (disk full or --max-db-mb)"
    if isinstance(exc, DatabaseRefused | StorageError):
        return "the database cannot be used (run memvm doctor)"
    return f"the database or the event could not be handled ({type(exc).__name__}; run memvm doctor)"


def main(argv: Sequence[str] | None = None) -> int:
    """Answer one event; always exit 0 with a JSON answer the host accepts."""
    try:
        args = _parser().parse_args(argv)
        raw = sys.stdin.buffer.read()
        answer = _answer(args, raw)
    # The top of the hook: anything at all becomes "go on without memvm", never a blocked host.
    except Exception as exc:
        print(f"memvm hook: {_skipped(exc)}; the host goes on without memvm for this event", file=sys.stderr)
        answer = {}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0
