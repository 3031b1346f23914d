"""`memvm hook HOST` answered in this process: open the database, apply the event, close.

The path taken when no background process answers (the first event for a database, or
`--background-idle 0`); the fast client (`hooks/client.py`) decides.
"""

import argparse
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.paths import check_db_path
from memvm.engine.storage.open import local_file
from memvm.hooks.answer import HookReply, HookRequest, answer
from memvm.hooks.hosts import HOSTS


def request_of(args: argparse.Namespace, raw: bytes) -> HookRequest:
    return HookRequest(
        host=HOSTS[args.host],
        namespace=args.namespace,
        recall_tokens=max(0, args.recall_tokens),
        guards=args.guards,
        guard_config=os.path.abspath(args.guard_config) if args.guard_config else None,
        raw=raw,
    )


def answer_here(args: argparse.Namespace, db: str, raw: bytes) -> HookReply:
    """The reply to one event, with the database opened and closed around it."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Engine]:
        if (file := local_file(db)) is not None:
            check_db_path(file, create_folder=True)
        # Words alone: loading the sentence encoder would double the wait of a prompt answered in
        # its own process. The background process it starts keeps the encoder loaded, and recalls
        # by meaning from the next event on.
        engine = await Engine.open(
            db, EngineConfig(busy_timeout_ms=max(0, args.wait_ms), semantic_search=False)
        )
        try:
            yield engine
        finally:
            await engine.close()

    return anyio.run(answer, opened, db, request_of(args, raw))
