"""Reading the files an import starts from, with failures in one line that name the file and place."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvm.engine.operations.transfer import TransferError


def read_text(path: Path) -> str:
    """The file's text; refused when missing, a folder, or not UTF-8."""
    if not path.exists():
        raise TransferError(f"there is no file at {path}")
    if not path.is_file():
        raise TransferError(f"{path} is not a file")
    try:
        # utf-8-sig: exports saved by editors on Windows start with a byte order mark.
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TransferError(f"{path} is not UTF-8 text (byte {exc.start})") from exc


def read_json(path: Path, expected: str) -> Any:
    """The one JSON document the file holds; `expected` names the file the format wants."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TransferError(
            f"{path}: not JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); expected {expected}"
        ) from exc


def read_json_lines(path: Path, expected: str) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line's JSON object, with its line number."""
    records = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TransferError(
                f"{path}: line {number} is not JSON ({exc.msg}); expected {expected}"
            ) from exc
        if not isinstance(record, dict):
            raise TransferError(f"{path}: line {number} is not a JSON object; expected {expected}")
        records.append((number, record))
    return records


def epoch_seconds(value: Any, where: str) -> float | None:
    """A date as seconds since the epoch: from a number (ChatGPT) or ISO 8601 text (Claude);
    None when absent. A date without a zone is read as UTC, as both exports mean it."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    raise TransferError(f"{where}: {value!r} is not a date")
