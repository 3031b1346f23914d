"""Reading the files an import starts from, with failures in one line that name the file and place.

Whatever a file holds, reading it ends in the data or in a TransferError: JSON nested too deep
for the parser, integers too long to convert, text memvm cannot store (a NUL, a lone surrogate
from a `\\ud800` escape) and dates outside the calendar are refused here, not deep inside a write.
"""

import json
import math
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvm.engine.operations.transfer import TransferError

# The dates an import accepts: from the epoch to the end of year 9999, what every reader of a
# page's date (ISO text, the markdown export, JSON) can show.
EARLIEST = 0.0
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def read_text(path: Path) -> str:
    """The file's text exactly as stored (line endings kept); refused when missing, not a regular
    file, not UTF-8, or holding a NUL."""
    if not path.exists():
        raise TransferError(f"there is no file at {path}")
    if not path.is_file():
        raise TransferError(f"{path} is not a file")
    try:
        # utf-8-sig: exports saved by editors on Windows start with a byte order mark.
        with open(path, encoding="utf-8-sig", newline="") as stream:
            text = stream.read()
    except UnicodeDecodeError as exc:
        raise TransferError(f"{path} is not UTF-8 text (byte {exc.start})") from exc
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise TransferError(f"{path}: line {line} holds a NUL character, which memvm does not store")
    return text


def is_regular_file(path: Path) -> bool:
    """Whether `path` (followed, if a link) is a regular file: a FIFO or a device is not a note."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _parse(text: str) -> Any:
    """The JSON in `text`; ValueError (JSONDecodeError included) or RecursionError when it is not."""
    return json.loads(text)


def read_json(path: Path, expected: str) -> Any:
    """The one JSON document the file holds; `expected` names the file the format wants."""
    text = read_text(path)
    try:
        document = _parse(text)
    except json.JSONDecodeError as exc:
        raise TransferError(
            f"{path}: not JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); expected {expected}"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise TransferError(f"{path}: cannot be read as JSON ({_reason(exc)}); expected {expected}") from exc
    check_strings(document, str(path))
    return document


def read_json_lines(path: Path, expected: str) -> list[tuple[int, dict[str, Any]]]:
    """Each non-blank line's JSON object, with its line number."""
    records = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = _parse(line)
        except json.JSONDecodeError as exc:
            raise TransferError(
                f"{path}: line {number} is not JSON ({exc.msg}); expected {expected}"
            ) from exc
        except (ValueError, RecursionError) as exc:
            raise TransferError(
                f"{path}: line {number} cannot be read as JSON ({_reason(exc)}); expected {expected}"
            ) from exc
        if not isinstance(record, dict):
            raise TransferError(f"{path}: line {number} is not a JSON object; expected {expected}")
        check_strings(record, f"{path}: line {number}")
        records.append((number, record))
    return records


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deep"
    return "a number too long" if "digits" in str(exc) else str(exc).split("\n")[0]


def check_strings(document: Any, where: str) -> None:
    """Refuse text memvm cannot store anywhere in `document`: a NUL, or a lone surrogate (which
    JSON's `\\ud800` escapes can make). Walked without recursion, the parser having allowed any
    depth it could read."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, str):
            _check_text(value, f"{where}{at}")
        elif isinstance(value, dict):
            for name, item in value.items():
                _check_text(name, f"{where}{at}")
                stack.append((f"{at}.{name}" if _plain_name(name) else f"{at}[{json.dumps(name)}]", item))
        elif isinstance(value, list):
            stack.extend((f"{at}[{index}]", item) for index, item in enumerate(value))


def _plain_name(name: str) -> bool:
    return name.isascii() and name.replace("_", "a").isalnum()


def _check_text(text: str, where: str) -> None:
    if text.isascii() and "\x00" not in text:
        return
    if "\x00" in text:
        raise TransferError(f"{where} holds a NUL character, which memvm does not store")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TransferError(
            f"{where} holds a lone surrogate (\\u{ord(text[exc.start]):04x}): not text"
        ) from exc


def epoch_seconds(value: Any, where: str) -> float | None:
    """A date as seconds since the epoch: from a number (ChatGPT) or ISO 8601 text (Claude);
    None when absent. A date without a zone is read as UTC, as both exports mean it. A date that
    is not finite, or outside 1970 to 9999, is refused: no message was written then."""
    if value is None or value == "":
        return None
    moment: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        moment = float(value) if EARLIEST <= value <= LATEST else None
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise TransferError(f"{where}: {_shown(value)} is not a date") from None
        moment = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    else:
        raise TransferError(f"{where}: {_shown(value)} is not a date")
    if moment is None or not math.isfinite(moment) or not EARLIEST <= moment <= LATEST:
        raise TransferError(f"{where}: {_shown(value)} is not a date between 1970 and 9999")
    return moment


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else f"{shown[:37]}..."
