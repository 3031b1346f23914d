"""Exports written at an earlier schema, read as rows of today's tables.

An export names its schema; one from before the page texts moved to their own table (7) or the
tool call ids were counted per namespace (8) or sessions were marked ad hoc (9) or pages could
expire (14) or belonged to a project (15) still imports. Its rows are reshaped here as they are
read, and the ids of its tool calls are turned into per-namespace ones, after the last row, by the
same statements the migration runs.
"""

from typing import Any

from memvm.engine.storage.sqlite_schema import GLOBAL_CALL_IDS_TO_NAMESPACE

# The oldest export schema that imports: the first written by this export format's readers.
OLDEST_READABLE = 6
_TEXTS_APART = 7
_CALLS_PER_NAMESPACE = 8
_AD_HOC_SESSIONS = 9
_EXPIRY = 14
_PROJECTS = 15

Row = dict[str, Any]


class Upgrade:
    """Reshapes the rows of one export at `schema` into rows of the current tables."""

    def __init__(self, schema: int) -> None:
        self.schema = schema
        self._calls: dict[str, int] = {}

    def rows(self, table: str, row: Row) -> list[tuple[str, Row]]:
        """The current tables' rows for one row of the export, in the order to insert them."""
        if table == "pages" and self.schema < _EXPIRY and "expires_at" not in row:
            # Pages from before expiry never expire.
            row = {**row, "expires_at": None}
        if table == "pages" and self.schema < _PROJECTS and "project" not in row:
            # Pages from before projects are recalled in every project, as the migration leaves them.
            row = {**row, "project": ""}
        if table == "pages" and self.schema < _TEXTS_APART and {"content", "reduced"} <= set(row):
            page = {key: value for key, value in row.items() if key not in ("content", "reduced")}
            # Inserting the texts sets the search length and indexes the page.
            page["search_chars"] = 0
            texts = {
                "rowid": row.get("rowid"),
                "namespace": row.get("namespace"),
                "content": row["content"],
                "reduced": row["reduced"],
            }
            return [("pages", page), ("page_texts", texts)]
        if table == "tool_calls" and self.schema < _CALLS_PER_NAMESPACE and "rowid" not in row:
            # Rows come in the order of their global ids, so counting them per namespace gives
            # the numbers the migration gives; the global id stays as rowid for the links.
            namespace = str(row.get("namespace"))
            self._calls[namespace] = self._calls.get(namespace, 0) + 1
            return [("tool_calls", {**row, "rowid": row.get("call_id"), "call_id": self._calls[namespace]})]
        if table == "sessions" and self.schema < _AD_HOC_SESSIONS and "ad_hoc" not in row:
            # As the migration does: sessions from before keep an allowance of their own.
            return [("sessions", {**row, "ad_hoc": 0})]
        return [(table, row)]

    def finishing(self) -> tuple[str, ...]:
        """Statements to run once every row is in."""
        return GLOBAL_CALL_IDS_TO_NAMESPACE if self.schema < _CALLS_PER_NAMESPACE else ()
