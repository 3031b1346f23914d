"""SQLite's schema for memvm up to version 13: its numbered migrations, in order, never edited.

Every table carries `namespace`, and every index leads with it, because every query filters on it.
Later versions are written once for both backends (schema_changes.py); `migrations` applies them.
"""

from memvm.engine.storage.migration import Migration
from memvm.engine.storage.sqlite_file import APPLICATION_ID

_INITIAL = Migration(
    version=1,
    name="pages, sessions, working sets, mutation log, full-text index",
    statements=(
        f"PRAGMA application_id = {APPLICATION_ID}",
        """
        CREATE TABLE sessions (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL DEFAULT 0,
            faults_this_turn INTEGER NOT NULL DEFAULT 0,
            turn_started_at REAL NOT NULL,
            last_call_at REAL NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (namespace, session)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE id_counters (
            namespace TEXT NOT NULL,
            prefix TEXT NOT NULL,
            last INTEGER NOT NULL,
            PRIMARY KEY (namespace, prefix)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE pages (
            rowid INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            page_id TEXT NOT NULL,
            session TEXT NOT NULL,
            type TEXT NOT NULL,
            role TEXT,
            modality TEXT NOT NULL,
            importance REAL NOT NULL CHECK (importance BETWEEN 0 AND 1),
            pinned INTEGER NOT NULL DEFAULT 0,
            provenance TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_access REAL NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            turn INTEGER NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            content TEXT NOT NULL,
            reduced TEXT NOT NULL,
            abstract TEXT NOT NULL,
            reference TEXT NOT NULL,
            tokens_full INTEGER NOT NULL,
            tokens_reduced INTEGER NOT NULL,
            tokens_abstract INTEGER NOT NULL,
            tokens_reference INTEGER NOT NULL,
            UNIQUE (namespace, page_id),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        )
        """,
        "CREATE INDEX pages_by_recency ON pages (namespace, last_access)",
        "CREATE INDEX pages_by_session ON pages (namespace, session, rowid)",
        # External-content FTS5: the text lives once, in pages; the index follows it by trigger.
        """
        CREATE VIRTUAL TABLE pages_fts USING fts5(
            content, content='pages', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """,
        """
        CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
            INSERT INTO pages_fts (rowid, content) VALUES (new.rowid, new.content);
        END
        """,
        """
        CREATE TRIGGER pages_fts_delete AFTER DELETE ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
        END
        """,
        """
        CREATE TRIGGER pages_fts_update AFTER UPDATE OF content ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
            INSERT INTO pages_fts (rowid, content) VALUES (new.rowid, new.content);
        END
        """,
        """
        CREATE TABLE working_set (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            page_rowid INTEGER NOT NULL REFERENCES pages (rowid) ON DELETE CASCADE,
            level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 3),
            line_tokens INTEGER NOT NULL,
            faulted_turn INTEGER,
            last_access_turn INTEGER NOT NULL,
            mapped_at REAL NOT NULL,
            PRIMARY KEY (namespace, session, page_rowid),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX working_set_by_page ON working_set (page_rowid)",
        """
        CREATE TABLE mutation_log (
            seq INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            page_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            kind TEXT NOT NULL,
            level_before INTEGER,
            level_after INTEGER,
            actor TEXT NOT NULL,
            cause TEXT NOT NULL,
            at REAL NOT NULL
        )
        """,
        "CREATE INDEX mutation_log_by_session ON mutation_log (namespace, session, seq)",
        """
        CREATE TRIGGER mutation_log_no_update BEFORE UPDATE ON mutation_log BEGIN
            SELECT RAISE(ABORT, 'mutation_log is append-only');
        END
        """,
        """
        CREATE TRIGGER mutation_log_no_delete BEFORE DELETE ON mutation_log BEGIN
            SELECT RAISE(ABORT, 'mutation_log is append-only');
        END
        """,
    ),
)

_GUARDS = Migration(
    version=2,
    name="bindings, user numbers, guard call log and strikes",
    statements=(
        # Bound tool results. `number` is set when the value is one number (or numeric string),
        # so a literal equal to it finds its $vN through an index, not a scan.
        """
        CREATE TABLE bindings (
            rowid INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            seq INTEGER NOT NULL CHECK (seq > 0),
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            call_hash TEXT NOT NULL,
            value TEXT NOT NULL,
            value_type TEXT NOT NULL,
            number REAL,
            turn INTEGER NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (namespace, session, seq),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        )
        """,
        "CREATE INDEX bindings_by_call ON bindings (namespace, session, call_hash, seq)",
        "CREATE INDEX bindings_by_tool ON bindings (namespace, session, tool, seq)",
        """
        CREATE INDEX bindings_by_number ON bindings (namespace, session, number)
        WHERE number IS NOT NULL
        """,
        """
        CREATE TABLE binding_aliases (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            alias TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (namespace, session, alias),
            FOREIGN KEY (namespace, session, seq) REFERENCES bindings (namespace, session, seq)
        ) WITHOUT ROWID
        """,
        # Numbers inside structured results (a list of prices, an object with a total). They
        # ground a literal but cannot be referenced on their own.
        """
        CREATE TABLE result_numbers (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            number REAL NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (namespace, session, number, seq),
            FOREIGN KEY (namespace, session, seq) REFERENCES bindings (namespace, session, seq)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE user_numbers (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            number REAL NOT NULL,
            PRIMARY KEY (namespace, session, number),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        ) WITHOUT ROWID
        """,
        # Calls the guards let through, kept for the current and previous turn only.
        """
        CREATE TABLE guard_calls (
            rowid INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            tool TEXT NOT NULL,
            kind TEXT NOT NULL,
            call_hash TEXT NOT NULL,
            at REAL NOT NULL,
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        )
        """,
        "CREATE INDEX guard_calls_by_turn ON guard_calls (namespace, session, turn, rowid)",
        """
        CREATE TABLE guard_strikes (
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            rule TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (namespace, session, turn, rule),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        ) WITHOUT ROWID
        """,
    ),
)

_PROCEDURES = Migration(
    version=3,
    name="tool call log, per-tool statistics, error patterns and success values",
    statements=(
        # Every recorded call. Read by index only: a session's last calls (fix detection), a
        # tool's last calls (recent), and fixed failures by signature (guidance).
        """
        CREATE TABLE tool_calls (
            call_id INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            call_hash TEXT NOT NULL,
            outcome TEXT NOT NULL,
            error_signature TEXT,
            error_message TEXT,
            duration_ms REAL,
            goal TEXT,
            result_page_id TEXT,
            ref TEXT,
            fixed_by INTEGER REFERENCES tool_calls (call_id),
            fixes INTEGER REFERENCES tool_calls (call_id),
            delta TEXT,
            at REAL NOT NULL,
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        )
        """,
        "CREATE INDEX tool_calls_by_session ON tool_calls (namespace, session, call_id)",
        "CREATE INDEX tool_calls_by_tool ON tool_calls (namespace, tool, call_id)",
        """
        CREATE INDEX tool_calls_fixed ON tool_calls (namespace, error_signature, call_id)
        WHERE fixed_by IS NOT NULL
        """,
        # The aggregates hints read, kept current by each record: reading them never scans the log.
        """
        CREATE TABLE tool_stats (
            namespace TEXT NOT NULL,
            tool TEXT NOT NULL,
            calls INTEGER NOT NULL,
            successes INTEGER NOT NULL,
            duration_total REAL NOT NULL,
            duration_count INTEGER NOT NULL,
            last_at REAL NOT NULL,
            last_call_id INTEGER NOT NULL,
            PRIMARY KEY (namespace, tool)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX tool_stats_by_recency ON tool_stats (namespace, last_at)",
        """
        CREATE TABLE error_patterns (
            namespace TEXT NOT NULL,
            tool TEXT NOT NULL,
            signature TEXT NOT NULL,
            count INTEGER NOT NULL,
            example TEXT,
            last_at REAL NOT NULL,
            last_call_id INTEGER NOT NULL,
            typical_fix TEXT,
            fix_call_id INTEGER,
            fix_count INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (namespace, tool, signature)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX error_patterns_by_count ON error_patterns (namespace, tool, count)",
        "CREATE INDEX error_patterns_by_signature ON error_patterns (namespace, signature)",
        # Argument values that worked, per tool and goal ('' = any goal); a few kept per argument.
        """
        CREATE TABLE success_values (
            namespace TEXT NOT NULL,
            tool TEXT NOT NULL,
            goal TEXT NOT NULL,
            arg TEXT NOT NULL,
            value TEXT NOT NULL,
            count INTEGER NOT NULL,
            last_at REAL NOT NULL,
            last_call_id INTEGER NOT NULL,
            PRIMARY KEY (namespace, tool, goal, arg, value)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX success_values_by_count ON success_values (namespace, tool, goal, count)",
        "CREATE INDEX success_values_by_goal ON success_values (namespace, goal, tool)",
    ),
)

_PAGE_COUNTS = Migration(
    version=4,
    name="page counts kept by triggers, pinned pages indexed",
    statements=(
        # count(*) over a namespace reads every one of its pages: at a million pages that was most
        # of a search or a manifest. The count is kept as pages come and go instead.
        """
        CREATE TABLE page_counts (
            namespace TEXT PRIMARY KEY,
            pages INTEGER NOT NULL
        ) WITHOUT ROWID
        """,
        "INSERT INTO page_counts (namespace, pages) SELECT namespace, count(*) FROM pages GROUP BY namespace",
        """
        CREATE TRIGGER pages_count_insert AFTER INSERT ON pages BEGIN
            INSERT INTO page_counts (namespace, pages) VALUES (new.namespace, 1)
            ON CONFLICT (namespace) DO UPDATE SET pages = pages + 1;
        END
        """,
        """
        CREATE TRIGGER pages_count_delete AFTER DELETE ON pages BEGIN
            UPDATE page_counts SET pages = pages - 1 WHERE namespace = old.namespace;
        END
        """,
        "CREATE INDEX pages_pinned ON pages (namespace) WHERE pinned = 1",
    ),
)

_SPEAKER_INDEX = Migration(
    version=5,
    name="speaker names in the full-text index",
    statements=(
        # Who said a line is often what a question names ("What did Caroline paint?"), and it is
        # not in the line itself: ingest keeps it as the message name. A virtual column reads it
        # from the metadata, so nothing is stored twice.
        "ALTER TABLE pages ADD COLUMN speaker TEXT GENERATED ALWAYS AS (json_extract(metadata, '$.name')) VIRTUAL",
        "DROP TRIGGER pages_fts_insert",
        "DROP TRIGGER pages_fts_delete",
        "DROP TRIGGER pages_fts_update",
        "DROP TABLE pages_fts",
        """
        CREATE VIRTUAL TABLE pages_fts USING fts5(
            content, speaker, content='pages', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """,
        """
        CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
            INSERT INTO pages_fts (rowid, content, speaker) VALUES (new.rowid, new.content, new.speaker);
        END
        """,
        """
        CREATE TRIGGER pages_fts_delete AFTER DELETE ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content, speaker)
            VALUES ('delete', old.rowid, old.content, old.speaker);
        END
        """,
        """
        CREATE TRIGGER pages_fts_update AFTER UPDATE OF content, metadata ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content, speaker)
            VALUES ('delete', old.rowid, old.content, old.speaker);
            INSERT INTO pages_fts (rowid, content, speaker) VALUES (new.rowid, new.content, new.speaker);
        END
        """,
        "INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')",
    ),
)

# Generated ids (msg_000123, note_000007, ...) say nothing a query would ask for, and "note" or
# "tool" in a question would match every page of that type; a caller's key ("coffee-order") is
# the page's name, and is searched like its text.
_GENERATED_ID = " OR ".join(
    f"page_id GLOB '{prefix}_[0-9][0-9][0-9][0-9][0-9][0-9]*'"
    for prefix in ("msg", "tool", "claim", "note", "pref", "sum", "proc")
)

_SEARCH_STATISTICS = Migration(
    version=6,
    name="keys in the full-text index, per-namespace search statistics",
    statements=(
        f"""ALTER TABLE pages ADD COLUMN search_key TEXT
            GENERATED ALWAYS AS (CASE WHEN {_GENERATED_ID} THEN NULL ELSE page_id END) VIRTUAL""",
        # A page's length for BM25, in characters of what is indexed: the ranking compares it with
        # its namespace's average only, so characters serve as well as tokens and SQL can count them.
        """ALTER TABLE pages ADD COLUMN search_chars INTEGER
            GENERATED ALWAYS AS (length(content) + coalesce(length(speaker), 0)
                                 + coalesce(length(search_key), 0)) VIRTUAL""",
        # Ranking statistics per namespace (pages and their total length), so that one tenant's
        # scores never depend on what another has stored.
        "ALTER TABLE page_counts ADD COLUMN chars INTEGER NOT NULL DEFAULT 0",
        """UPDATE page_counts SET chars = coalesce(
               (SELECT sum(search_chars) FROM pages WHERE pages.namespace = page_counts.namespace), 0)""",
        "DROP TRIGGER pages_count_insert",
        "DROP TRIGGER pages_count_delete",
        """
        CREATE TRIGGER pages_count_insert AFTER INSERT ON pages BEGIN
            INSERT INTO page_counts (namespace, pages, chars) VALUES (new.namespace, 1, new.search_chars)
            ON CONFLICT (namespace) DO UPDATE SET pages = pages + 1, chars = chars + excluded.chars;
        END
        """,
        """
        CREATE TRIGGER pages_count_delete AFTER DELETE ON pages BEGIN
            UPDATE page_counts SET pages = pages - 1, chars = chars - old.search_chars
            WHERE namespace = old.namespace;
        END
        """,
        """
        CREATE TRIGGER pages_count_update AFTER UPDATE OF content, metadata ON pages BEGIN
            UPDATE page_counts SET chars = chars - old.search_chars + new.search_chars
            WHERE namespace = new.namespace;
        END
        """,
        "DROP TRIGGER pages_fts_insert",
        "DROP TRIGGER pages_fts_delete",
        "DROP TRIGGER pages_fts_update",
        "DROP TABLE pages_fts",
        """
        CREATE VIRTUAL TABLE pages_fts USING fts5(
            content, speaker, search_key, content='pages', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """,
        # Each occurrence of a term with its page: BM25's term frequencies, read term by term.
        "CREATE VIRTUAL TABLE pages_terms USING fts5vocab(pages_fts, instance)",
        """
        CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
            INSERT INTO pages_fts (rowid, content, speaker, search_key)
            VALUES (new.rowid, new.content, new.speaker, new.search_key);
        END
        """,
        """
        CREATE TRIGGER pages_fts_delete AFTER DELETE ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key)
            VALUES ('delete', old.rowid, old.content, old.speaker, old.search_key);
        END
        """,
        """
        CREATE TRIGGER pages_fts_update AFTER UPDATE OF content, metadata ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key)
            VALUES ('delete', old.rowid, old.content, old.speaker, old.search_key);
            INSERT INTO pages_fts (rowid, content, speaker, search_key)
            VALUES (new.rowid, new.content, new.speaker, new.search_key);
        END
        """,
        "INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')",
    ),
)

# The texts a page is searched by, for the full-text index: its content from page_texts, the rest
# from the page. The index keeps no copy (external content); the triggers below feed it.
_SEARCHED_BY = """
CREATE VIEW page_search AS
SELECT p.rowid AS rowid, t.content AS content, p.speaker AS speaker, p.search_key AS search_key
FROM pages p JOIN page_texts t ON t.rowid = p.rowid
"""

# A page is indexed once both its row and its texts are in: by whichever of the two arrives last
# (a page is written row first; an import may bring the texts first).
_INDEX_ON_TEXTS = """
CREATE TRIGGER page_texts_index AFTER INSERT ON page_texts BEGIN
    UPDATE pages SET search_chars = length(new.content) + coalesce(length(speaker), 0)
                                    + coalesce(length(search_key), 0)
    WHERE rowid = new.rowid;
    INSERT INTO pages_fts (rowid, content, speaker, search_key)
    SELECT new.rowid, new.content, speaker, search_key FROM pages WHERE rowid = new.rowid;
END
"""
_INDEX_ON_PAGE = """
CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
    UPDATE pages SET search_chars = (SELECT length(content) FROM page_texts WHERE rowid = new.rowid)
                                    + coalesce(length(new.speaker), 0) + coalesce(length(new.search_key), 0)
    WHERE rowid = new.rowid AND EXISTS (SELECT 1 FROM page_texts WHERE rowid = new.rowid);
    INSERT INTO pages_fts (rowid, content, speaker, search_key)
    SELECT new.rowid, content, new.speaker, new.search_key FROM page_texts WHERE rowid = new.rowid;
END
"""
# Each change re-indexes the page with what is indexed now, so a rewrite that changes the metadata
# (the speaker) and then the content keeps the index exact at every step.
_REINDEX_ON_TEXTS = """
CREATE TRIGGER page_texts_reindex AFTER UPDATE OF content ON page_texts BEGIN
    INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key)
    SELECT 'delete', old.rowid, old.content, speaker, search_key FROM pages WHERE rowid = old.rowid;
    INSERT INTO pages_fts (rowid, content, speaker, search_key)
    SELECT new.rowid, new.content, speaker, search_key FROM pages WHERE rowid = new.rowid;
    UPDATE pages SET search_chars = length(new.content) + coalesce(length(speaker), 0)
                                    + coalesce(length(search_key), 0)
    WHERE rowid = new.rowid;
END
"""
_REINDEX_ON_PAGE = """
CREATE TRIGGER pages_fts_update AFTER UPDATE OF metadata ON pages BEGIN
    INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key)
    SELECT 'delete', old.rowid, content, old.speaker, old.search_key FROM page_texts WHERE rowid = old.rowid;
    INSERT INTO pages_fts (rowid, content, speaker, search_key)
    SELECT new.rowid, content, new.speaker, new.search_key FROM page_texts WHERE rowid = new.rowid;
    UPDATE pages SET search_chars = (SELECT length(content) FROM page_texts WHERE rowid = new.rowid)
                                    + coalesce(length(new.speaker), 0) + coalesce(length(new.search_key), 0)
    WHERE rowid = new.rowid AND EXISTS (SELECT 1 FROM page_texts WHERE rowid = new.rowid);
END
"""
# Before the page goes, while its texts (deleted with it) can still be read.
_UNINDEX = """
CREATE TRIGGER pages_fts_delete BEFORE DELETE ON pages BEGIN
    INSERT INTO pages_fts (pages_fts, rowid, content, speaker, search_key)
    SELECT 'delete', old.rowid, content, old.speaker, old.search_key FROM page_texts WHERE rowid = old.rowid;
END
"""

_PAGE_TEXTS = Migration(
    version=7,
    name="page texts apart from the page rows",
    statements=(
        # A row is read from its start: the small columns a manifest or a ranking needs sat before
        # the text, but the token counts and the search length after it, so reading them walked
        # the whole text (11 s for a manifest over 400 pages of 400,000 characters). The long
        # levels (full and reduced) now live in their own table; the page row stays small.
        """
        CREATE TABLE page_texts (
            rowid INTEGER PRIMARY KEY REFERENCES pages (rowid) ON DELETE CASCADE,
            namespace TEXT NOT NULL,
            content TEXT NOT NULL,
            reduced TEXT NOT NULL
        )
        """,
        "INSERT INTO page_texts (rowid, namespace, content, reduced) SELECT rowid, namespace, content, reduced FROM pages",
        "DROP TRIGGER pages_fts_insert",
        "DROP TRIGGER pages_fts_delete",
        "DROP TRIGGER pages_fts_update",
        "DROP TRIGGER pages_count_insert",
        "DROP TRIGGER pages_count_delete",
        "DROP TRIGGER pages_count_update",
        "DROP TABLE pages_terms",
        "DROP TABLE pages_fts",
        # The search length was computed from the content on every read; it is stored now.
        "ALTER TABLE pages DROP COLUMN search_chars",
        "ALTER TABLE pages ADD COLUMN search_chars INTEGER NOT NULL DEFAULT 0",
        """UPDATE pages SET search_chars = length(content) + coalesce(length(speaker), 0)
                                           + coalesce(length(search_key), 0)""",
        "ALTER TABLE pages DROP COLUMN content",
        "ALTER TABLE pages DROP COLUMN reduced",
        """
        CREATE TRIGGER pages_count_insert AFTER INSERT ON pages BEGIN
            INSERT INTO page_counts (namespace, pages, chars) VALUES (new.namespace, 1, new.search_chars)
            ON CONFLICT (namespace) DO UPDATE SET pages = pages + 1, chars = chars + excluded.chars;
        END
        """,
        """
        CREATE TRIGGER pages_count_delete AFTER DELETE ON pages BEGIN
            UPDATE page_counts SET pages = pages - 1, chars = chars - old.search_chars
            WHERE namespace = old.namespace;
        END
        """,
        """
        CREATE TRIGGER pages_count_update AFTER UPDATE OF search_chars ON pages BEGIN
            UPDATE page_counts SET chars = chars - old.search_chars + new.search_chars
            WHERE namespace = new.namespace;
        END
        """,
        _SEARCHED_BY,
        """
        CREATE VIRTUAL TABLE pages_fts USING fts5(
            content, speaker, search_key, content='page_search', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """,
        "CREATE VIRTUAL TABLE pages_terms USING fts5vocab(pages_fts, instance)",
        _INDEX_ON_TEXTS,
        _INDEX_ON_PAGE,
        _REINDEX_ON_TEXTS,
        _REINDEX_ON_PAGE,
        _UNINDEX,
        "INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')",
    ),
)

# Call ids per namespace, from the global ones they replace: a call's row keeps its global number
# as rowid, so links written with global numbers (fixed_by, fixes, the statistics' last calls)
# are turned into the namespace's numbers by looking the rowid up. Imports of exports written
# before this schema run the same statements on the rows they load.
GLOBAL_CALL_IDS_TO_NAMESPACE = (
    """UPDATE tool_calls SET
           fixed_by = (SELECT f.call_id FROM tool_calls f WHERE f.rowid = tool_calls.fixed_by),
           fixes = (SELECT f.call_id FROM tool_calls f WHERE f.rowid = tool_calls.fixes)
       WHERE fixed_by IS NOT NULL OR fixes IS NOT NULL""",
    """UPDATE tool_stats SET last_call_id = coalesce(
           (SELECT c.call_id FROM tool_calls c WHERE c.rowid = tool_stats.last_call_id), last_call_id)""",
    """UPDATE error_patterns SET
           last_call_id = coalesce(
               (SELECT c.call_id FROM tool_calls c WHERE c.rowid = error_patterns.last_call_id), last_call_id),
           fix_call_id = (SELECT c.call_id FROM tool_calls c WHERE c.rowid = error_patterns.fix_call_id)""",
    """UPDATE success_values SET last_call_id = coalesce(
           (SELECT c.call_id FROM tool_calls c WHERE c.rowid = success_values.last_call_id), last_call_id)""",
)

_NAMESPACE_CALL_IDS = Migration(
    version=8,
    name="tool call ids counted per namespace",
    statements=(
        # One count for the whole file let a tenant see, from its own call ids, how many calls
        # the others made. Ids now count within the namespace.
        # The copy below points fixed_by at rows by their old numbers until the last statement.
        "PRAGMA defer_foreign_keys = ON",
        "ALTER TABLE tool_calls RENAME TO tool_calls_v7",
        "DROP INDEX tool_calls_by_session",
        "DROP INDEX tool_calls_by_tool",
        "DROP INDEX tool_calls_fixed",
        """
        CREATE TABLE tool_calls (
            rowid INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            call_id INTEGER NOT NULL CHECK (call_id > 0),
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            call_hash TEXT NOT NULL,
            outcome TEXT NOT NULL,
            error_signature TEXT,
            error_message TEXT,
            duration_ms REAL,
            goal TEXT,
            result_page_id TEXT,
            ref TEXT,
            fixed_by INTEGER,
            fixes INTEGER,
            delta TEXT,
            at REAL NOT NULL,
            UNIQUE (namespace, call_id),
            FOREIGN KEY (namespace, fixed_by) REFERENCES tool_calls (namespace, call_id),
            FOREIGN KEY (namespace, fixes) REFERENCES tool_calls (namespace, call_id),
            FOREIGN KEY (namespace, session) REFERENCES sessions (namespace, session)
        )
        """,
        "CREATE INDEX tool_calls_by_session ON tool_calls (namespace, session, call_id)",
        "CREATE INDEX tool_calls_by_tool ON tool_calls (namespace, tool, call_id)",
        """
        CREATE INDEX tool_calls_fixed ON tool_calls (namespace, error_signature, call_id)
        WHERE fixed_by IS NOT NULL
        """,
        """
        INSERT INTO tool_calls (
            rowid, namespace, call_id, session, turn, tool, args, call_hash, outcome, error_signature,
            error_message, duration_ms, goal, result_page_id, ref, fixed_by, fixes, delta, at)
        SELECT call_id, namespace, row_number() OVER (PARTITION BY namespace ORDER BY call_id), session, turn,
               tool, args, call_hash, outcome, error_signature, error_message, duration_ms, goal,
               result_page_id, ref, fixed_by, fixes, delta, at
        FROM tool_calls_v7
        """,
        *GLOBAL_CALL_IDS_TO_NAMESPACE,
        "DROP TABLE tool_calls_v7",
    ),
)

# A session whose current turn the host did not start (with begin_turn or ingest): its faults
# and guard calls also count against the caller's own session, so naming another session does
# not buy a fresh allowance. Sessions that exist already keep their own until their next idle gap.
_AD_HOC_SESSIONS = Migration(
    version=9,
    name="sessions started by naming them",
    statements=(
        "ALTER TABLE sessions ADD COLUMN ad_hoc INTEGER NOT NULL DEFAULT 0 CHECK (ad_hoc IN (0, 1))",
    ),
)

# Host hooks see an event again when the host retries it: one row per event handled, keyed by a
# digest of the event, so a replay adds nothing and a pre-tool replay gets the same decision.
_HOOK_EVENTS = Migration(
    version=10,
    name="host hook events handled",
    statements=(
        """
        CREATE TABLE hook_events (
            namespace TEXT NOT NULL,
            digest TEXT NOT NULL,
            session TEXT NOT NULL,
            event TEXT NOT NULL,
            answer TEXT,
            at REAL NOT NULL,
            PRIMARY KEY (namespace, digest)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX hook_events_by_session ON hook_events (namespace, session, at)",
    ),
)

# `memvm doctor` reports capture per host session; event names alone do not always say the host.
_HOOK_HOSTS = Migration(
    version=11,
    name="the host of each hook event",
    statements=("ALTER TABLE hook_events ADD COLUMN host TEXT NOT NULL DEFAULT ''",),
)

# The browser view lists a namespace's pages newest first, a screen at a time: an index on the
# namespace alone holds (namespace, rowid) in order, so a screen reads 50 entries, not a sort of all.
_PAGES_BY_NAMESPACE = Migration(
    version=12,
    name="pages in order within a namespace",
    statements=("CREATE INDEX pages_by_namespace ON pages (namespace)",),
)

# What the guards decided, with their reasons, for a person looking back (the browser view); each
# session keeps its latest (engine/call_log.py). A log, not memory: exports leave it out.
_GUARD_VERDICTS = Migration(
    version=13,
    name="guard verdicts kept for review",
    statements=(
        """
        CREATE TABLE guard_verdicts (
            rowid INTEGER PRIMARY KEY,
            namespace TEXT NOT NULL,
            session TEXT NOT NULL,
            turn INTEGER NOT NULL,
            tool TEXT NOT NULL,
            verdict TEXT NOT NULL,
            reasons TEXT NOT NULL,
            at REAL NOT NULL
        )
        """,
        "CREATE INDEX guard_verdicts_by_session ON guard_verdicts (namespace, session, rowid)",
    ),
)

# Versions 1 to 13; later versions are in schema_changes.py, both dialects side by side.
BASE: tuple[Migration, ...] = (
    _INITIAL,
    _GUARDS,
    _PROCEDURES,
    _PAGE_COUNTS,
    _SPEAKER_INDEX,
    _SEARCH_STATISTICS,
    _PAGE_TEXTS,
    _NAMESPACE_CALL_IDS,
    _AD_HOC_SESSIONS,
    _HOOK_EVENTS,
    _HOOK_HOSTS,
    _PAGES_BY_NAMESPACE,
    _GUARD_VERDICTS,
)
