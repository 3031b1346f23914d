"""`memvm embed`: give every page still waiting its vector now, with a progress bar.

A server embeds pages as they come, and an older database's pages in the background; this does
all that waits at once (after an upgrade, an import, or a change of model), safe while servers
run: each batch is a short write of its own, and a page embedded twice keeps one vector.
"""

import argparse
import sys

from memvm.server.cli.parser import DB_HELP

_BAR = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=DB_HELP)
    parser.add_argument(
        "--embedding-model",
        metavar="DIR",
        help="folder holding the sentence encoder's model.onnx (default: $MEMVM_EMBEDDING_MODEL, else the installed model)",
    )


def run(args: argparse.Namespace) -> int:
    import anyio
    from memvm.engine.paths import database_named
    from memvm.engine.storage.open import local_file, shown

    named = database_named(args.db)
    if (file := local_file(named)) is not None and not file.is_file():
        print(f"memvm: there is no database at {shown(named)}", file=sys.stderr)
        return 2
    return anyio.run(_embed, named, args.embedding_model)


async def _embed(named: str, model_folder: str | None) -> int:
    import anyio
    from memvm.engine import Engine, EngineConfig
    from memvm.engine.errors import MemvmError
    from memvm.engine.meaning.embedder import embed_waiting
    from memvm.engine.meaning.model_files import why_unavailable
    from memvm.engine.storage.open import shown

    if (why := await anyio.to_thread.run_sync(why_unavailable, model_folder)) is not None:
        print(f"memvm: search by meaning cannot run: {why}", file=sys.stderr)
        return 2
    try:
        engine = await Engine.open(named, EngineConfig(embedding_model=model_folder))
    except MemvmError as exc:
        print(f"memvm: {exc}", file=sys.stderr)
        return 2
    try:
        if await engine.meaning.encoder() is None:
            print(f"memvm: {engine.meaning.why_off}", file=sys.stderr)
            return 2
        bar = _Bar()
        try:
            done = await embed_waiting(engine.db, engine.meaning, on_progress=bar.show)
        except MemvmError as exc:
            bar.end()
            print(f"memvm: {exc}; run memvm embed again to go on", file=sys.stderr)
            return 2
        bar.end()
        print(f"embedded {done} pages in {shown(named)}")
        return 0
    finally:
        await engine.close()


class _Bar:
    """Pages with a vector out of all, drawn in place on a terminal, a line per tenth otherwise."""

    def __init__(self) -> None:
        self._drawn = False
        self._tenth = -1

    def show(self, embedded: int, waiting: int) -> None:
        total = embedded + waiting
        share = embedded / total if total else 1.0
        filled = round(share * _BAR)
        line = f"embedding pages [{'#' * filled}{'.' * (_BAR - filled)}] {embedded}/{total}"
        if sys.stderr.isatty():
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
            self._drawn = True
        elif int(share * 10) != self._tenth:
            self._tenth = int(share * 10)
            print(line, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self._drawn:
            print(file=sys.stderr, flush=True)
