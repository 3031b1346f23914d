"""The reference MCP memory server's `memory.json` (modelcontextprotocol/servers, src/memory).

The file is JSON lines, each an entity or a relation of a knowledge graph:

    {"type": "entity", "name": "John_Smith", "entityType": "person", "observations": ["Speaks Spanish"]}
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

Each entity becomes one note under the key `entity:<name>` (see keys.py for names that are not
keys as they are), written as text that search finds: its name and type, each observation, and
each relation it takes part in, in either direction. The file says nothing of pins: a note pinned
in memvm stays pinned.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvm.engine import Engine
from memvm.engine.models.pages import PageType
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.keys import KEY_CHARS, name_for
from memvm.engine.operations.importers.notes import ImportedNote, write_notes
from memvm.engine.operations.importers.source_format import FirstBytes, ImportSource, Writing
from memvm.engine.operations.importers.sources import read_json_lines
from memvm.engine.operations.transfer import TransferError

SOURCE = "server-memory"
SESSION = "server-memory"
KEY_PREFIX = "entity:"
_EXPECTED = "the memory server's memory.json, one entity or relation per line"


@dataclass
class Entity:
    name: str
    where: str  # the line that first names it
    entity_type: str
    observations: list[str]
    relations: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"{self.name} ({self.entity_type})" if self.entity_type else self.name]
        lines += [f"- {observation}" for observation in self.observations]
        lines += [f"- {relation}" for relation in self.relations]
        return "\n".join(lines)


def read_graph(path: Path) -> tuple[dict[str, Entity], int]:
    """The entities by name, each with the relations it takes part in, and the relations read."""
    entities: dict[str, Entity] = {}
    relations: list[tuple[str, str, str]] = []
    for number, record in read_json_lines(path, _EXPECTED):
        where = f"{path}: line {number}"
        match record.get("type"):
            case "entity":
                name = _text(record, "name", where)
                observations = record.get("observations")
                if observations is None:
                    observations = []
                if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
                    raise TransferError(f'{where}: "observations" is not a list of strings')
                kind = record.get("entityType")
                if kind is not None and not isinstance(kind, str):
                    raise TransferError(f'{where}: "entityType" is not text')
                if name in entities:  # the server keeps names unique; a hand-edited file may not
                    entities[name].observations += observations
                else:
                    entities[name] = Entity(name, f"{where}, entity {name!r}", kind or "", list(observations))
            case "relation":
                ends = (
                    _text(record, "from", where),
                    _text(record, "relationType", where),
                    _text(record, "to", where),
                )
                relations.append(ends)
            case _:
                raise TransferError(f"{where} is neither an entity nor a relation; expected {_EXPECTED}")
    for source, kind, target in relations:
        said = f"{source} {kind} {target}"
        # Both ends' pages say it; an end the file holds no entity for has no page to say it on.
        for end in dict.fromkeys((source, target)):
            if end in entities and said not in entities[end].relations:
                entities[end].relations.append(said)
    return entities, len(relations)


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise TransferError(f'{where}: "{name}" is missing or not text')
    return value


async def write_graph(
    engine: Engine, *, namespace: str, entities: dict[str, Entity], relations: int
) -> ImportCounts:
    counts = ImportCounts(Counted.GRAPH, entities=len(entities), relations=relations)
    notes = [
        ImportedNote(
            key=name_for(KEY_PREFIX, entity.name, KEY_CHARS),
            content=entity.text(),
            type=PageType.NOTE,
            provenance="model",
            metadata={"source": SOURCE, "entity": entity.name},
            where=entity.where,
        )
        for entity in entities.values()
    ]
    await write_notes(engine, namespace=namespace, session=SESSION, notes=notes, counts=counts)
    return counts


def _looks_like(start: FirstBytes) -> bool:
    return (
        start.head.startswith("{") and re.match(r'\{.*"type":"(entity|relation)"', start.compact) is not None
    )


def _read(path: Path) -> Writing:
    entities, relations = read_graph(path)
    return lambda engine, namespace: write_graph(
        engine, namespace=namespace, entities=entities, relations=relations
    )


FORMAT = ImportSource(
    name=SOURCE, described="the MCP memory server's memory.json", looks_like=_looks_like, read=_read
)
