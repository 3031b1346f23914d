"""A folder of markdown notes (an Obsidian vault, `memvm export --format markdown`'s notes/).

Every `*.md` file under the folder (or the one file named) becomes a note. Front matter with a
`key:` line is memvm's own, as its export writes it: it gives the key, and may give the `type`
(note, claim, preference, summary, procedure) and `pinned`; the note is the text after it. A file
without is a note whole, any other app's front matter included, under its path without the
extension, folders joined by `.` (`projects/alpha.md` -> `projects.alpha`). The one newline that
ends a file is not part of its note.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.models import REMEMBERED_TYPES, PageType
from memvm.engine.names import ID_PATTERN
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.keys import Keys
from memvm.engine.operations.importers.notes import ImportedNote, write_note
from memvm.engine.operations.importers.sources import read_text
from memvm.engine.operations.transfer import TransferError

SOURCE = "markdown"
SESSION = "markdown"

_FRONT_MATTER = re.compile(r"\A---\n(?P<fields>.*?)^---[ \t]*(?:\n|\Z)", re.S | re.M)
_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*?)\s*$")
_TRUE, _FALSE = {"true", "yes"}, {"false", "no", ""}


@dataclass(frozen=True)
class MarkdownNote:
    path: Path
    relative: str  # the path under the folder, with / between folders
    fields: dict[str, str]
    body: str


def note_files(root: Path) -> tuple[Path, list[Path]]:
    """The folder keys are made relative to, and the notes in it, in path order. Hidden folders
    and files (an editor's `.obsidian/`, `.trash/`) are not notes."""
    if root.is_file():
        if root.suffix.lower() != ".md":
            raise TransferError(f"{root} is not a markdown (.md) file")
        return root.parent, [root]
    if not root.is_dir():
        raise TransferError(f"there is no folder or file at {root}")
    found = [
        path
        for path in root.rglob("*.md")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts)
    ]
    return root, sorted(found)


def read_note(root: Path, path: Path) -> MarkdownNote:
    text = read_text(path)
    fields: dict[str, str] = {}
    front = _FRONT_MATTER.match(text)
    if front:
        for line in front["fields"].splitlines():
            field = _FIELD.match(line)
            if field:
                fields[field["name"].lower()] = _unquoted(field["value"])
    if front and "key" in fields:
        text = text[front.end() :]
    else:
        # Another app's front matter (a title, tags) is part of the note, searchable with it.
        fields = {}
    relative = path.relative_to(root).with_suffix("").as_posix()
    return MarkdownNote(path=path, relative=relative, fields=fields, body=text.removesuffix("\n"))


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def imported_note(note: MarkdownNote, keys: Keys) -> ImportedNote:
    key = note.fields.get("key") or keys.key("", note.relative.replace("/", "."))
    if not re.match(ID_PATTERN, key):
        raise TransferError(f"{note.path}: the key {key!r} is not a memvm key (letters, digits, _ . : -)")
    kind = note.fields.get("type", PageType.NOTE.value)
    if kind not in {t.value for t in REMEMBERED_TYPES}:
        allowed = ", ".join(sorted(t.value for t in REMEMBERED_TYPES))
        raise TransferError(f"{note.path}: the type {kind!r} is not one a note can have ({allowed})")
    pinned = note.fields.get("pinned", "").lower()
    if pinned not in _TRUE | _FALSE:
        raise TransferError(f"{note.path}: pinned is {pinned!r}, not true or false")
    return ImportedNote(
        key=key,
        content=note.body,
        type=PageType(kind),
        provenance="user",
        metadata={"source": SOURCE, "path": note.relative},
        pinned=pinned in _TRUE,
    )


def read_notes(path: Path) -> list[ImportedNote]:
    """The notes under `path`, every file read and checked before anything is written."""
    root, files = note_files(path)
    keys = Keys()
    notes = [imported_note(read_note(root, file), keys) for file in files]
    _refuse_shared_keys(notes, files)
    return notes


async def write_notes(engine: Engine, *, namespace: str, notes: list[ImportedNote]) -> ImportCounts:
    counts = ImportCounts(Counted.NOTES, notes=len(notes))
    for note in notes:
        if not note.content.strip():
            counts.empty += 1
            continue
        counts.note(await write_note(engine, namespace=namespace, session=SESSION, note=note))
    return counts


def _refuse_shared_keys(notes: list[ImportedNote], files: list[Path]) -> None:
    # Two files under one key would overwrite each other on every import, never settling.
    first: dict[str, Path] = {}
    for note, file in zip(notes, files, strict=True):
        other = first.setdefault(note.key, file)
        if other != file:
            raise TransferError(f"{other} and {file} both give the key {note.key!r}; give one another key")
