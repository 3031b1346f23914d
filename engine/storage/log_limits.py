"""The limits on what a namespace keeps outside its pages, as schema both backends share: the
text it keeps there, counted against its quota, and the indexes by which each log finds its oldest
rows to let go (engine/kept_logs.py).

`--max-namespace-mb` would be no share at all if a tenant could fill the file through the rows
that are not pages: a value bound with bind_value or a tool call's arguments may each be a
megabyte, and a keyed note rewritten keeps its earlier versions. The tables whose rows keep text a client chose add it to `page_counts.log_chars`, by
trigger on both backends, so that every write path (tools, hooks, imports) counts it alike and a
removal gives the room back. Rows of fixed small size (the mutation log, guard calls, numbers)
are bounded by their count instead (engine/kept_logs.py).
"""

# Each log's (scope, order), for its oldest rows; the mutation log and the call log by namespace.
KEPT_LOG_INDEXES = (
    "CREATE INDEX mutation_log_by_namespace ON mutation_log (namespace, seq)",
    # A call that goes is unlinked from the calls that name it: found by index, not by a scan.
    "CREATE INDEX tool_calls_fixes ON tool_calls (namespace, fixes) WHERE fixes IS NOT NULL",
    "CREATE INDEX tool_calls_fixed_by ON tool_calls (namespace, fixed_by) WHERE fixed_by IS NOT NULL",
    "CREATE INDEX error_patterns_by_recency ON error_patterns (namespace, last_at)",
    "CREATE INDEX success_values_by_recency ON success_values (namespace, last_at)",
    "CREATE INDEX hook_events_by_age ON hook_events (namespace, at)",
)

# Each table, and the characters one of its rows keeps, with `{row}` for the row (new, old).
KEPT_TEXT: dict[str, str] = {
    "bindings": "length({row}.args) + length({row}.value)",
    "tool_calls": (
        "length({row}.args) + coalesce(length({row}.error_message), 0) + coalesce(length({row}.goal), 0)"
    ),
    "hook_events": "length({row}.event) + coalesce(length({row}.answer), 0)",
    # Earlier versions of a keyed page (20 kept by default): a note rewritten again and again.
    "page_versions": "length({row}.content)",
}


def _chars(table: str, row: str) -> str:
    return KEPT_TEXT[table].format(row=row)


# The namespace's total, for the row of page_counts being updated (to count existing rows once).
LOG_CHARS_OF_NAMESPACE = " + ".join(
    f"(SELECT coalesce(sum({_chars(table, 'k')}), 0) FROM {table} AS k "
    f"WHERE k.namespace = page_counts.namespace)"
    for table in KEPT_TEXT
)


# What a file or database kept before the count began, counted once (ORDER BY lets SQLite parse
# the upsert after a compound SELECT).
COUNT_EXISTING_LOG_CHARS = (
    """
    INSERT INTO page_counts (namespace, pages, chars)
    SELECT namespace, 0, 0 FROM bindings UNION SELECT namespace, 0, 0 FROM tool_calls
    UNION SELECT namespace, 0, 0 FROM hook_events UNION SELECT namespace, 0, 0 FROM page_versions
    ORDER BY 1
    ON CONFLICT (namespace) DO NOTHING
    """,
    f"UPDATE page_counts SET log_chars = {LOG_CHARS_OF_NAMESPACE}",
)


def sqlite_triggers() -> tuple[str, ...]:
    statements: list[str] = []
    for table in KEPT_TEXT:
        statements.append(
            f"""
            CREATE TRIGGER {table}_log_chars_insert AFTER INSERT ON {table} BEGIN
                INSERT INTO page_counts (namespace, pages, chars, log_chars)
                VALUES (new.namespace, 0, 0, {_chars(table, "new")})
                ON CONFLICT (namespace) DO UPDATE SET log_chars = log_chars + excluded.log_chars;
            END
            """
        )
        statements.append(
            f"""
            CREATE TRIGGER {table}_log_chars_delete AFTER DELETE ON {table} BEGIN
                UPDATE page_counts SET log_chars = log_chars - ({_chars(table, "old")})
                WHERE namespace = old.namespace;
            END
            """
        )
    return tuple(statements)


def postgres_triggers() -> tuple[str, ...]:
    """Statement triggers over the rows the statement touched: an import or a trim of many rows
    updates each namespace's count once, not once per row (repeated updates of one row in one
    transaction slow down as they go)."""
    statements: list[str] = []
    for table in KEPT_TEXT:
        for event, rows, sign in (("INSERT", "NEW", "+"), ("DELETE", "OLD", "-")):
            function = f"memvm_log_chars_{table}_{event.lower()}"
            statements.append(
                f"""
                CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO page_counts AS c (namespace, pages, chars, log_chars)
                    SELECT namespace, 0, 0, {sign}sum({_chars(table, "changed")})
                    FROM changed GROUP BY namespace
                    ON CONFLICT (namespace) DO UPDATE SET log_chars = c.log_chars + EXCLUDED.log_chars;
                    RETURN NULL;
                END $$
                """
            )
            statements.append(
                f"CREATE TRIGGER {table}_log_chars_{event.lower()} AFTER {event} ON {table} "
                f"REFERENCING {rows} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            )
    return tuple(statements)
