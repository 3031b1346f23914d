"""The memory the view tests look at: a short conversation in session s1 and a remembered note
(`deploy-note`) faulted into its working set."""

from pathlib import Path

import anyio
from memvm.engine import Engine, EngineConfig
from memvm.engine.models import IngestMessage, NewPage, PageType, Role

NS = "default"


def seed(db: Path | str, first_prompt: str, reply: str) -> None:
    async def fill() -> None:
        engine = await Engine.open(db, EngineConfig())
        try:
            messages = [
                IngestMessage(role=Role.USER, content=first_prompt),
                IngestMessage(role=Role.ASSISTANT, content=reply),
            ]
            await engine.ingest(namespace=NS, session="s1", messages=messages)
            note = NewPage(content="Deploys go through argo.", type=PageType.NOTE, provenance="user")
            await engine.remember(namespace=NS, session="s1", page=note, key="deploy-note")
            await engine.page_fault(namespace=NS, session="s1", page_id="deploy-note")
        finally:
            await engine.close()

    anyio.run(fill)
