"""A folder of markdown notes (an Obsidian vault, `memvm export --format markdown`'s notes/).

Every `*.md` file under the folder (or the one file named) becomes a note. Front matter with a
`key:` line is memvm's own, as its export writes it: it gives the key, and may give the `type`
(note, claim, preference, summary, procedure), `pinned` and `expires`; the note is the text after
it. A file without is a note whole, any other app's front matter included, under its path without
the extension, folders joined by `.` (`projects/alpha.md` -> `projects.alpha`; see keys.py for a
path that is not a key as it is). The one line ending that ends a file is not part of its note;
every other is kept as written, so that a note with Windows line endings reads back unchanged.

Only the folder is read: a link whose target is outside it, and anything that is not a regular
file (a FIFO would block the read forever), is left out with a warning.
"""

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.models.pages import REMEMBERED_TYPES, PageType
from memvm.engine.names import is_page_id
from memvm.engine.operations.importers.counts import Counted, ImportCounts
from memvm.engine.operations.importers.keys import KEY_CHARS, name_for
from memvm.engine.operations.importers.notes import ImportedNote, write_notes
from memvm.engine.operations.importers.source_format import FirstBytes, ImportSource, Writing
from memvm.engine.operations.importers.sources import EARLIEST, LATEST, is_regular_file, read_text
from memvm.engine.operations.transfer import TransferError
from memvm.engine.redaction import redact

SOURCE = "markdown"
SESSION = "markdown"

_FRONT_MATTER = re.compile(r"\A---\r?\n(?P<fields>.*?)^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*?)\s*$")
_TRUE, _FALSE = {"true", "yes"}, {"false", "no", ""}


@dataclass(frozen=True)
class MarkdownNote:
    path: Path
    relative: str  # the path under the folder, with / between folders
    fields: dict[str, str]
    body: str


@dataclass
class NoteFolder:
    """The notes read, and the files left out (each with the line that says why)."""

    notes: list[ImportedNote]
    left_out: list[str] = field(default_factory=list)


def note_files(root: Path) -> tuple[Path, list[Path], list[str]]:
    """The folder keys are made relative to, the notes in it in path order, and what was left out.
    Hidden folders and files (an editor's `.obsidian/`, `.trash/`) are not notes."""
    if root.is_file() or (root.exists() and not root.is_dir()):
        if root.suffix.lower() != ".md":
            raise TransferError(f"{root} is not a markdown (.md) file")
        if not is_regular_file(root):
            raise TransferError(f"{root} is not a regular file")
        return root.parent, [root], []
    if not root.is_dir():
        raise TransferError(f"there is no folder or file at {root}")
    inside = root.resolve()
    found: list[Path] = []
    left_out: list[str] = []
    # Links to folders are not followed: a folder link inside leads where the walk goes anyway,
    # one outside leads out of what was named (and a link to a parent would never end).
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in folders:
            if (here / name).is_symlink():
                left_out.append(f"{here / name}: a link to a folder, not followed: left out")
        folders[:] = [name for name in folders if not (here / name).is_symlink()]
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or not name.lower().endswith(".md"):
                continue
            if not path.resolve().is_relative_to(inside):
                left_out.append(f"{path}: a link to a file outside {root}: left out")
            elif not is_regular_file(path):
                left_out.append(f"{path}: not a regular file: left out")
            else:
                found.append(path)
    return root, sorted(found), left_out


def read_note(root: Path, path: Path) -> MarkdownNote:
    text = read_text(path)
    fields: dict[str, str] = {}
    front = _FRONT_MATTER.match(text)
    if front:
        for line in front["fields"].splitlines():
            field_ = _FIELD.match(line)
            if field_:
                fields[field_["name"].lower()] = _unquoted(field_["value"])
    if front and "key" in fields:
        text = text[front.end() :]
    else:
        # Another app's front matter (a title, tags) is part of the note, searchable with it.
        fields = {}
    relative = path.relative_to(root).with_suffix("").as_posix()
    body = text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")
    return MarkdownNote(path=path, relative=relative, fields=fields, body=body)


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def imported_note(note: MarkdownNote) -> ImportedNote:
    key = note.fields.get("key")
    if key is None:
        key = name_for("", note.relative.replace("/", "."), KEY_CHARS)
    elif redact(key) != key:
        key = name_for("", key, KEY_CHARS)  # a key made of a secret: its digest instead
    if not is_page_id(key):
        raise TransferError(f"{note.path}: the key {key!r} is not a memvm key (letters, digits, _ . : -)")
    kind = note.fields.get("type", PageType.NOTE.value)
    if kind not in {t.value for t in REMEMBERED_TYPES}:
        allowed = ", ".join(sorted(t.value for t in REMEMBERED_TYPES))
        raise TransferError(f"{note.path}: the type {kind!r} is not one a note can have ({allowed})")
    return ImportedNote(
        key=key,
        content=note.body,
        type=PageType(kind),
        provenance="user",
        metadata={"source": SOURCE, "path": note.relative},
        where=str(note.path),
        pinned=_pinned(note),
        # memvm's own front matter says when a note expires; without `expires:`, it never does.
        says_expiry=bool(note.fields),
        expires_at=_expires(note),
    )


def _pinned(note: MarkdownNote) -> bool | None:
    said = note.fields.get("pinned")
    if said is None:
        return None  # not said (another app's note): the pin memvm holds stands
    if said.lower() not in _TRUE | _FALSE:
        raise TransferError(f"{note.path}: pinned is {said!r}, not true or false")
    return said.lower() in _TRUE


def _expires(note: MarkdownNote) -> float | None:
    said = note.fields.get("expires")
    if not said:
        return None
    try:
        moment = datetime.fromisoformat(said)
    except ValueError:
        raise TransferError(f"{note.path}: expires is {said!r}, not an ISO 8601 date") from None
    at = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if not EARLIEST <= at <= LATEST:
        raise TransferError(f"{note.path}: expires is {said!r}, not a date between 1970 and 9999")
    return at


def read_notes(path: Path) -> NoteFolder:
    """The notes under `path`, every file read and checked before anything is written."""
    root, files, left_out = note_files(path)
    notes = [imported_note(read_note(root, file)) for file in files]
    _refuse_shared_keys(notes, files)
    return NoteFolder(notes=notes, left_out=left_out)


async def write_notes_of(engine: Engine, *, namespace: str, folder: NoteFolder) -> ImportCounts:
    counts = ImportCounts(Counted.NOTES, notes=len(folder.notes))
    for warning in folder.left_out:
        counts.skip(warning)
    notes = []
    for note in folder.notes:
        if not note.content.strip():
            counts.empty += 1
        else:
            notes.append(note)
    await write_notes(engine, namespace=namespace, session=SESSION, notes=notes, counts=counts)
    return counts


def _refuse_shared_keys(notes: list[ImportedNote], files: list[Path]) -> None:
    # Two files under one key would overwrite each other on every import, never settling.
    first: dict[str, Path] = {}
    for note, file in zip(notes, files, strict=True):
        other = first.setdefault(note.key, file)
        if other != file:
            raise TransferError(f"{other} and {file} both give the key {note.key!r}; give one another key")


def _looks_like(start: FirstBytes) -> bool:
    return start.path.is_dir() or start.path.suffix.lower() == ".md"


def _read(path: Path) -> Writing:
    folder = read_notes(path)
    return lambda engine, namespace: write_notes_of(engine, namespace=namespace, folder=folder)


FORMAT = ImportSource(name=SOURCE, described="a folder of notes", looks_like=_looks_like, read=_read)
