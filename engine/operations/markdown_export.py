"""`memvm export --format markdown`: a namespace's memory as a folder a person (or a notes app) reads.

    DIR/sessions/<session>.md   each session's transcript and tool results, oldest first: a heading
                                per page with its role and date (UTC), then its text
    DIR/notes/<key>.md          each remembered page: front matter (key, type, created, pinned,
                                and expires for a page that will), then its text

`memvm import --format markdown DIR/notes` reads the notes back under the same keys. The folder is
written beside DIR under a name of its own and moved into place when whole, so that a failed
export never looks like a whole one. An expired page is gone for every reader, and for the export
too. Every folder it writes is the owner's alone (700), every file too (600): memory is private.
"""

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memvm.engine import Engine
from memvm.engine.models.pages import REMEMBERED_TYPES, PageType
from memvm.engine.operations.transfer import TransferError
from memvm.engine.paging.history_write import CONVERSATION
from memvm.engine.paging.pages import LIVE_WITH_TEXTS
from memvm.engine.storage.api import Row
from memvm.engine.storage.statements import in_list, statement

SESSIONS = "sessions"
NOTES = "notes"
_HISTORY_TYPES = {"transcript": PageType.TRANSCRIPT.value, "tool_result": PageType.TOOL_RESULT.value}
_NOTE_TYPE_MARKS, _NOTE_TYPES = in_list(sorted(kind.value for kind in REMEMBERED_TYPES), prefix="type")

_SESSIONS_WITH_HISTORY = statement(
    "markdown_export.sessions with history",
    "SELECT DISTINCT session FROM pages WHERE namespace = :namespace AND type IN (:transcript, :tool_result) "
    "ORDER BY session",
)

_COLUMNS = (
    "p.page_id, p.type, p.role, p.provenance, p.created_at, p.pinned, p.expires_at, p.metadata, t.content"
)

_SESSION_PAGES = statement(
    "markdown_export.session pages",
    f"""
SELECT {_COLUMNS} FROM {LIVE_WITH_TEXTS}
WHERE p.namespace = :namespace AND p.session = :session AND p.type IN (:transcript, :tool_result)
ORDER BY p.created_at, p.rowid
""",
)

_NOTES = statement(
    "markdown_export.notes",
    f"""
SELECT {_COLUMNS} FROM {LIVE_WITH_TEXTS}
WHERE p.namespace = :namespace AND p.type IN ({_NOTE_TYPE_MARKS})
ORDER BY p.page_id
""",
)
_FOLDER_MODE = 0o700
_FILE_MODE = 0o600


@dataclass(frozen=True)
class MarkdownExport:
    sessions: int
    pages: int
    notes: int


def when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def file_name(name: str) -> str:
    """A key or session name as a file name every system accepts: `:` is not allowed on Windows
    nor in most notes apps, and no key holds `~` (the front matter keeps the real key)."""
    return name.replace(":", "~")


def session_text(session: str, rows: list[Row]) -> str:
    title = next((json.loads(row["metadata"]).get(CONVERSATION) for row in rows), None)
    lines = [f"# {session}", ""]
    if title:
        lines += [f"Conversation: {title}", ""]
    for row in rows:
        speaker = row["role"] or row["provenance"]
        lines += [f"## {speaker} · {when(row['created_at'])} · {row['page_id']}", "", row["content"], ""]
    return "\n".join(lines)


def note_text(row: Row) -> str:
    front = [
        "---",
        f"key: {row['page_id']}",
        f"type: {row['type']}",
        f"created: {datetime.fromtimestamp(row['created_at'], UTC).isoformat()}",
        f"pinned: {'true' if row['pinned'] else 'false'}",
        *(
            [f"expires: {datetime.fromtimestamp(row['expires_at'], UTC).isoformat()}"]
            if row["expires_at"]
            else []
        ),
        "---",
    ]
    # One newline ends the file; the import takes exactly that one off again.
    return "\n".join([*front, str(row["content"])]) + "\n"


async def export_markdown(engine: Engine, *, namespace: str, out: Path, force: bool) -> MarkdownExport:
    """Write `namespace`'s sessions and notes under `out`, which must be new or empty unless `force`."""
    _check_target(out, force=force)
    with _partial_folder(out) as partial:
        async with engine.db.read(namespace) as conn:
            sessions = [
                row["session"]
                for row in await conn.all(_SESSIONS_WITH_HISTORY, namespace=namespace, **_HISTORY_TYPES)
            ]
        pages = written = 0
        for session in sessions:
            # One read per session: a large memory is never held in one long snapshot.
            async with engine.db.read(namespace) as conn:
                rows = await conn.all(_SESSION_PAGES, namespace=namespace, session=session, **_HISTORY_TYPES)
            if not rows:
                continue  # every page of it has expired
            _write_new(partial / SESSIONS, file_name(session), session_text(session, rows))
            pages += len(rows)
            written += 1
        async with engine.db.read(namespace) as conn:
            notes = await conn.all(_NOTES, namespace=namespace, **_NOTE_TYPES)
        for row in notes:
            _write_new(partial / NOTES, file_name(row["page_id"]), note_text(row))
        _move_into_place(partial, out)
    return MarkdownExport(sessions=written, pages=pages, notes=len(notes))


def _check_target(out: Path, *, force: bool) -> None:
    if str(out) == "-":
        raise TransferError("--out - would be standard output, which cannot hold a folder; name a folder")
    if out.is_symlink():
        # A rename would replace the link, not fill what it points to: say so, not a temporary name.
        raise TransferError(f"{out} is a symbolic link; name a folder (or the folder it points to)")
    if out.exists() and not out.is_dir():
        raise TransferError(f"{out} is not a folder; name a new folder for the export")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise TransferError(f"{out} is not empty; name a new folder, or pass --force to write into it")


def _write_new(folder: Path, stem: str, text: str) -> None:
    # Names that differ only in case are one file on some systems (macOS, Windows): the later
    # gets a number rather than replacing the earlier.
    for number in range(1, 10_000):
        path = folder / (f"{stem}.md" if number == 1 else f"{stem}-{number}.md")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
            # newline="": the text's own line endings (a note's \r\n) are written as they are.
            with open(fd, "w", encoding="utf-8", newline="") as stream:
                stream.write(text)
            return
        except FileExistsError:
            continue
    raise TransferError(f"too many files named like {stem}.md in {folder}")


@contextmanager
def _partial_folder(out: Path) -> Iterator[Path]:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial"))
    except OSError as exc:
        raise TransferError(f"cannot write in {out.parent} ({exc.strerror})") from exc
    try:
        os.chmod(partial, _FOLDER_MODE)
        (partial / SESSIONS).mkdir(mode=_FOLDER_MODE)
        (partial / NOTES).mkdir(mode=_FOLDER_MODE)
        yield partial
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _move_into_place(partial: Path, out: Path) -> None:
    if not out.exists() or not any(out.iterdir()):
        # A rename replaces an empty folder at once: the export appears whole or not at all.
        os.replace(partial, out)
        return
    # --force into a folder with files: each file replaces its namesake; other files stay.
    for path in sorted(partial.rglob("*.md")):
        target = out / path.relative_to(partial)
        target.parent.mkdir(mode=_FOLDER_MODE, exist_ok=True)
        # A folder an earlier export (or the user) made is the owner's alone from now on, too.
        os.chmod(target.parent, _FOLDER_MODE)
        os.replace(path, target)
