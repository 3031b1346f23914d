"""Every schema version after 13, each written once with both dialects side by side.

Up to version 13 each backend has its own history (sqlite_schema.py; postgres_schema.py creates
SQLite's version 13 at once). From 14 on, a change is one SchemaChange: adding a column means
writing its SQLite and its PostgreSQL form here, together, and a test compares the two live
schemas (tests/engine/storage/test_schema_agreement.py). Appended, never edited.
"""

from memvm.engine.storage.log_limits import (
    COUNT_EXISTING_LOG_CHARS,
    KEPT_LOG_INDEXES,
    postgres_triggers,
    sqlite_triggers,
)
from memvm.engine.storage.migration import SchemaChange
from memvm.engine.storage.postgres_schema import TEXT

# Rewriting a keyed page keeps what it said before (its superseded versions, newest last), and a
# page may carry the moment it expires: reads leave it out from then on, and a later write or
# `memvm gc` deletes it. Versions go with their page (ON DELETE CASCADE), so forget takes them too.
_VERSIONS_AND_EXPIRY = SchemaChange(
    version=14,
    name="superseded versions of keyed pages, and expiry",
    sqlite=(
        "ALTER TABLE pages ADD COLUMN expires_at REAL",
        "CREATE INDEX pages_expiring ON pages (namespace, expires_at) WHERE expires_at IS NOT NULL",
        """
        CREATE TABLE page_versions (
            page_rowid INTEGER NOT NULL REFERENCES pages (rowid) ON DELETE CASCADE,
            version INTEGER NOT NULL CHECK (version >= 1),
            namespace TEXT NOT NULL,
            type TEXT NOT NULL,
            content TEXT NOT NULL,
            tokens_full INTEGER NOT NULL CHECK (tokens_full >= 0),
            written_at REAL NOT NULL,
            superseded_at REAL NOT NULL,
            PRIMARY KEY (page_rowid, version)
        ) WITHOUT ROWID
        """,
    ),
    postgresql=(
        "ALTER TABLE pages ADD COLUMN expires_at DOUBLE PRECISION",
        "CREATE INDEX pages_expiring ON pages (namespace, expires_at) WHERE expires_at IS NOT NULL",
        f"""
        CREATE TABLE page_versions (
            page_rowid BIGINT NOT NULL REFERENCES pages (rowid) ON DELETE CASCADE DEFERRABLE,
            version BIGINT NOT NULL CHECK (version >= 1),
            namespace {TEXT} NOT NULL,
            type {TEXT} NOT NULL,
            content {TEXT} NOT NULL,
            tokens_full BIGINT NOT NULL CHECK (tokens_full >= 0),
            written_at DOUBLE PRECISION NOT NULL,
            superseded_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (page_rowid, version)
        )
        """,
    ),
)

# Memory per project: a page written in a project (a host's working tree) is read there and where
# no project is set; '' marks a page for every project (see paging/projects.py).
_PROJECTS = SchemaChange(
    version=15,
    name="the project each page belongs to",
    sqlite=("ALTER TABLE pages ADD COLUMN project TEXT NOT NULL DEFAULT ''",),
    postgresql=(f"ALTER TABLE pages ADD COLUMN project {TEXT} NOT NULL DEFAULT ''",),
)

# Whether a delete has committed since the last purge (see storage/purge_queue.py): `memvm gc`
# purges then, even when the delete was a write's own (an expired page) and it deletes nothing.
_PURGE_OWED = SchemaChange(
    version=16,
    name="a mark of deletes not yet purged",
    sqlite=("CREATE TABLE purge_owed (id INTEGER PRIMARY KEY CHECK (id = 1))",),
    postgresql=("CREATE TABLE purge_owed (id INTEGER PRIMARY KEY CHECK (id = 1))",),
)

# What a namespace keeps besides its pages counts against its quota too: the text of its bound
# values, tool call log, hook events and earlier versions (page_counts.log_chars, kept by
# trigger). The logs keep their newest rows only (engine/kept_logs.py), which these indexes let
# them find; the mutation log is still never rewritten, but its oldest rows now go.
_KEPT_LOGS = SchemaChange(
    version=17,
    name="log text counted per namespace, and the newest rows of each log kept",
    sqlite=(
        "ALTER TABLE page_counts ADD COLUMN log_chars INTEGER NOT NULL DEFAULT 0",
        *COUNT_EXISTING_LOG_CHARS,
        *sqlite_triggers(),
        "DROP TRIGGER mutation_log_no_delete",
        *KEPT_LOG_INDEXES,
    ),
    postgresql=(
        "ALTER TABLE page_counts ADD COLUMN log_chars BIGINT NOT NULL DEFAULT 0",
        *COUNT_EXISTING_LOG_CHARS,
        *postgres_triggers(),
        "DROP TRIGGER mutation_log_no_delete ON mutation_log",
        *KEPT_LOG_INDEXES,
    ),
)

# PostgreSQL types that differed from SQLite's, found by comparing the live schemas: the record
# of applied migrations was created with REAL, which there is 4 bytes (an epoch time lost its
# seconds), and its version and purge_owed's id with a 4-byte INTEGER where every other integer is
# 64-bit. Databases made before are given the right types.
_POSTGRES_TYPES = SchemaChange(
    version=18,
    name="PostgreSQL's ledger time and purge mark in the types SQLite's have",
    sqlite=(),
    postgresql=(
        "ALTER TABLE schema_migrations ALTER COLUMN applied_at TYPE DOUBLE PRECISION",
        "ALTER TABLE schema_migrations ALTER COLUMN version TYPE BIGINT",
        "ALTER TABLE purge_owed ALTER COLUMN id TYPE BIGINT",
    ),
)

# Which pages are gone is said once, here: a page whose expiry has come is left out of every read
# from that moment, before a write or `memvm gc` deletes it. Queries read `live_pages` (or
# `expired_pages`) rather than `pages`, and the moment they compare with is their transaction's own
# (Reads.now), which each backend hands its SQL: memvm_now() on SQLite (sqlite_moment.py), the
# setting `memvm.now` on PostgreSQL (set with BEGIN). PostgreSQL fixes a view's columns when the
# view is made, so a change that adds a column to pages makes these two again (the schema test
# compares the views' columns and says so).
_POSTGRES_NOW = "current_setting('memvm.now')::double precision"
_EXPIRY_VIEWS = SchemaChange(
    version=19,
    name="live and expired pages, as of each transaction's moment",
    sqlite=(
        "CREATE VIEW live_pages AS SELECT * FROM pages WHERE expires_at IS NULL OR expires_at > memvm_now()",
        "CREATE VIEW expired_pages AS "
        "SELECT * FROM pages WHERE expires_at IS NOT NULL AND expires_at <= memvm_now()",
    ),
    postgresql=(
        "CREATE VIEW live_pages AS "
        f"SELECT * FROM pages WHERE expires_at IS NULL OR expires_at > {_POSTGRES_NOW}",
        "CREATE VIEW expired_pages AS "
        f"SELECT * FROM pages WHERE expires_at IS NOT NULL AND expires_at <= {_POSTGRES_NOW}",
    ),
)

# Search by meaning (engine/meaning): each page's vector from the sentence encoder, with the model
# that made it, and the pages still to embed. Vectors are derived, like the full-text index: never
# exported, made again after an import, gone with their page (ON DELETE CASCADE, so forget and
# expiry take them), and stale once the page's text changes. A page waits in `pages_to_embed` from
# the moment its text is written (by trigger, in the write itself); `generation` counts the changes
# of its text, so a vector made of text that changed meanwhile is never stored. `seq` orders the
# vectors as they were written, for the in-process copies each searching process keeps
# (meaning/vector_index.py), and is never reused.
_SQLITE_VECTORS = (
    """
    CREATE TABLE page_vectors (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        page_rowid INTEGER NOT NULL REFERENCES pages (rowid) ON DELETE CASCADE,
        namespace TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL
    )
    """,
    """
    CREATE TABLE pages_to_embed (
        page_rowid INTEGER PRIMARY KEY REFERENCES pages (rowid) ON DELETE CASCADE,
        namespace TEXT NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0
    )
    """,
    "INSERT INTO pages_to_embed (page_rowid, namespace) SELECT rowid, namespace FROM page_texts",
    """
    CREATE TRIGGER pages_to_embed_insert AFTER INSERT ON page_texts BEGIN
        INSERT INTO pages_to_embed (page_rowid, namespace) VALUES (new.rowid, new.namespace)
        ON CONFLICT (page_rowid) DO UPDATE SET generation = generation + 1;
    END
    """,
    """
    CREATE TRIGGER pages_to_embed_update AFTER UPDATE OF content ON page_texts
    WHEN old.content IS NOT new.content BEGIN
        DELETE FROM page_vectors WHERE page_rowid = new.rowid;
        INSERT INTO pages_to_embed (page_rowid, namespace) VALUES (new.rowid, new.namespace)
        ON CONFLICT (page_rowid) DO UPDATE SET generation = generation + 1;
    END
    """,
)
_POSTGRES_VECTORS = (
    f"""
    CREATE TABLE page_vectors (
        seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        page_rowid BIGINT NOT NULL REFERENCES pages (rowid) ON DELETE CASCADE DEFERRABLE,
        namespace {TEXT} NOT NULL,
        model {TEXT} NOT NULL,
        vector BYTEA NOT NULL
    )
    """,
    f"""
    CREATE TABLE pages_to_embed (
        page_rowid BIGINT PRIMARY KEY REFERENCES pages (rowid) ON DELETE CASCADE DEFERRABLE,
        namespace {TEXT} NOT NULL,
        generation BIGINT NOT NULL DEFAULT 0
    )
    """,
    "INSERT INTO pages_to_embed (page_rowid, namespace) SELECT rowid, namespace FROM page_texts",
    """
    CREATE FUNCTION memvm_page_to_embed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            DELETE FROM page_vectors WHERE page_rowid = NEW.rowid;
        END IF;
        INSERT INTO pages_to_embed AS q (page_rowid, namespace) VALUES (NEW.rowid, NEW.namespace)
        ON CONFLICT (page_rowid) DO UPDATE SET generation = q.generation + 1;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER pages_to_embed_insert AFTER INSERT ON page_texts "
    "FOR EACH ROW EXECUTE FUNCTION memvm_page_to_embed()",
    "CREATE TRIGGER pages_to_embed_update AFTER UPDATE OF content ON page_texts "
    "FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION memvm_page_to_embed()",
)
_VECTOR_INDEXES = (
    "CREATE UNIQUE INDEX page_vectors_by_page ON page_vectors (page_rowid)",
    "CREATE INDEX page_vectors_in_order ON page_vectors (namespace, model, seq)",
)
_VECTORS = SchemaChange(
    version=20,
    name="page vectors for search by meaning, and the pages still to embed",
    sqlite=(*_SQLITE_VECTORS, *_VECTOR_INDEXES),
    postgresql=(*_POSTGRES_VECTORS, *_VECTOR_INDEXES),
)

# How many vectors each namespace has of each model, and the last one's seq, kept by trigger: a
# search asks whether its process's copy of the vectors is current (meaning/vector_index.py), and
# counting 100,000 index entries each time cost 9 ms a search.
_SQLITE_VECTOR_COUNTS = (
    """
    CREATE TABLE vector_counts (
        namespace TEXT NOT NULL,
        model TEXT NOT NULL,
        vectors INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        PRIMARY KEY (namespace, model)
    )
    """,
    """
    INSERT INTO vector_counts (namespace, model, vectors, last_seq)
    SELECT namespace, model, count(*), max(seq) FROM page_vectors GROUP BY namespace, model
    """,
    """
    CREATE TRIGGER page_vectors_counted AFTER INSERT ON page_vectors BEGIN
        INSERT INTO vector_counts (namespace, model, vectors, last_seq)
        VALUES (new.namespace, new.model, 1, new.seq)
        ON CONFLICT (namespace, model) DO UPDATE
        SET vectors = vectors + 1, last_seq = max(last_seq, excluded.last_seq);
    END
    """,
    """
    CREATE TRIGGER page_vectors_uncounted AFTER DELETE ON page_vectors BEGIN
        UPDATE vector_counts SET vectors = vectors - 1
        WHERE namespace = old.namespace AND model = old.model;
    END
    """,
    """
    CREATE TRIGGER page_vectors_recounted AFTER UPDATE OF namespace, model ON page_vectors BEGIN
        UPDATE vector_counts SET vectors = vectors - 1
        WHERE namespace = old.namespace AND model = old.model;
        INSERT INTO vector_counts (namespace, model, vectors, last_seq)
        VALUES (new.namespace, new.model, 1, new.seq)
        ON CONFLICT (namespace, model) DO UPDATE
        SET vectors = vectors + 1, last_seq = max(last_seq, excluded.last_seq);
    END
    """,
)
_POSTGRES_VECTOR_COUNTS = (
    f"""
    CREATE TABLE vector_counts (
        namespace {TEXT} NOT NULL,
        model {TEXT} NOT NULL,
        vectors BIGINT NOT NULL,
        last_seq BIGINT NOT NULL,
        PRIMARY KEY (namespace, model)
    )
    """,
    """
    INSERT INTO vector_counts (namespace, model, vectors, last_seq)
    SELECT namespace, model, count(*), max(seq) FROM page_vectors GROUP BY namespace, model
    """,
    """
    CREATE FUNCTION memvm_vector_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            UPDATE vector_counts SET vectors = vectors - 1
            WHERE namespace = OLD.namespace AND model = OLD.model;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO vector_counts AS c (namespace, model, vectors, last_seq)
            VALUES (NEW.namespace, NEW.model, 1, NEW.seq)
            ON CONFLICT (namespace, model) DO UPDATE
            SET vectors = c.vectors + 1, last_seq = GREATEST(c.last_seq, EXCLUDED.last_seq);
        END IF;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER page_vectors_counted AFTER INSERT OR DELETE OR UPDATE OF namespace, model "
    "ON page_vectors FOR EACH ROW EXECUTE FUNCTION memvm_vector_counts()",
)
_VECTOR_COUNTS = SchemaChange(
    version=21,
    name="vectors counted per namespace and model",
    sqlite=_SQLITE_VECTOR_COUNTS,
    postgresql=_POSTGRES_VECTOR_COUNTS,
)

# The browser view's first screen lists a namespace's notes and its conversations (sessions with
# transcript pages): the notes are found without reading the transcripts, and the conversations
# grouped without reading the other pages (engine/memory_screens.py). Partial, so that only those
# queries use them: a query of every page of a session keeps pages_by_session.
# (A query uses a partial index only where its own WHERE repeats the index's: the notes' list of
# types is written the same way, sorted, in memory_screens.py.)
_PAGES_BY_TYPE_SQL = (
    "CREATE INDEX pages_transcripts ON pages (namespace, session, created_at, expires_at) "
    "WHERE type = 'transcript'",
    "CREATE INDEX pages_remembered ON pages (namespace, pinned) "
    "WHERE type IN ('claim', 'note', 'preference', 'procedure', 'summary')",
)
_PAGES_BY_TYPE = SchemaChange(
    version=22,
    name="transcripts and remembered pages found by type",
    sqlite=_PAGES_BY_TYPE_SQL,
    postgresql=_PAGES_BY_TYPE_SQL,
)

# A page is embedded after the name of whoever said it, unless the name only says the role
# (meaning/embedded_text.py): the pages that name a speaker wait to be embedded again, their old
# vector searched until the new one replaces it.
_SPEAKER_REQUEUE_SQL = (
    "INSERT INTO pages_to_embed (page_rowid, namespace) "
    "SELECT rowid, namespace FROM pages WHERE speaker IS NOT NULL AND trim(speaker) <> '' "
    "AND lower(trim(speaker)) NOT IN ('assistant', 'system', 'tool', 'user') "
    "ON CONFLICT (page_rowid) DO NOTHING",
)
_SPEAKERS_EMBEDDED = SchemaChange(
    version=23,
    name="pages embedded again with their speaker's name",
    sqlite=_SPEAKER_REQUEUE_SQL,
    postgresql=_SPEAKER_REQUEUE_SQL,
)

# What is embedded names the page's speaker, so a vector is stale once the speaker changes as it is
# once the text does (a keyed page rewritten with the same words, said by someone else): the same
# drop and wait as pages_to_embed_update, on the page's row.
_SPEAKER_CHANGE = SchemaChange(
    version=24,
    name="a page whose speaker changes is embedded again",
    sqlite=(
        """
        CREATE TRIGGER pages_to_embed_speaker AFTER UPDATE OF metadata ON pages
        WHEN old.speaker IS NOT new.speaker BEGIN
            DELETE FROM page_vectors WHERE page_rowid = new.rowid;
            INSERT INTO pages_to_embed (page_rowid, namespace) VALUES (new.rowid, new.namespace)
            ON CONFLICT (page_rowid) DO UPDATE SET generation = generation + 1;
        END
        """,
    ),
    postgresql=(
        "CREATE TRIGGER pages_to_embed_speaker AFTER UPDATE OF metadata ON pages "
        "FOR EACH ROW WHEN (OLD.speaker IS DISTINCT FROM NEW.speaker) EXECUTE FUNCTION memvm_page_to_embed()",
    ),
)

CHANGES: tuple[SchemaChange, ...] = (
    _VERSIONS_AND_EXPIRY,
    _PROJECTS,
    _PURGE_OWED,
    _KEPT_LOGS,
    _POSTGRES_TYPES,
    _EXPIRY_VIEWS,
    _VECTORS,
    _VECTOR_COUNTS,
    _PAGES_BY_TYPE,
    _SPEAKERS_EMBEDDED,
    _SPEAKER_CHANGE,
)
