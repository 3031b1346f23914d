"""PostgreSQL's catalogue as the operator's commands read it: every table's stored columns (what
an export writes and an import fills), and the identity counters an import moves past its rows."""

# Every stored column of every table (generated ones excluded), as api.Dialect.columns lists them:
# tables in the order SQLite lists them (byte order), PostgreSQL's types named as SQLite declares
# them, and each column's place in its table's primary key (0 when none).
COLUMNS = """
SELECT c.table_name, c.column_name, coalesce(k.place, 0),
       CASE WHEN c.data_type IN ('bigint', 'integer', 'smallint') THEN 'INTEGER'
            WHEN c.data_type IN ('double precision', 'real') THEN 'REAL'
            WHEN c.data_type = 'text' THEN 'TEXT'
            ELSE upper(c.data_type) END,
       CASE WHEN c.is_nullable = 'NO' THEN 1 ELSE 0 END
FROM information_schema.columns AS c
JOIN pg_tables AS t ON t.schemaname = c.table_schema AND t.tablename = c.table_name
LEFT JOIN (
    -- int2vector counts from 0
    SELECT r.relname, a.attname, array_position(i.indkey, a.attnum) - array_lower(i.indkey, 1) + 1 AS place
    FROM pg_index AS i
    JOIN pg_class AS r ON r.oid = i.indrelid
    JOIN pg_namespace AS n ON n.oid = r.relnamespace AND n.nspname = current_schema()
    JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE i.indisprimary
) AS k ON k.relname = c.table_name AND k.attname = c.column_name
WHERE c.table_schema = current_schema() AND c.is_generated = 'NEVER'
ORDER BY t.tablename COLLATE "C", c.ordinal_position
"""

# The search postings, kept by the engine's writes (postgres_postings): never memory.
OWN_TABLES = {"page_terms"}

# Identity columns, moved past an import's rows so that the next insert does not collide.
_IDENTITIES = {
    "pages": "rowid",
    "mutation_log": "seq",
    "bindings": "rowid",
    "guard_calls": "rowid",
    "tool_calls": "rowid",
}
MOVE_IDENTITIES = tuple(
    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
    f"coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)"
    for table, column in _IDENTITIES.items()
)
