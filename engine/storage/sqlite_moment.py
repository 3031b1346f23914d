"""A SQLite connection's moment, as its SQL sees it: `memvm_now()`.

The `live_pages` and `expired_pages` views compare expiry with memvm_now() (schema version 19).
Each connection answers it from its own Moment, set as each of its transactions begins
(sqlite_db), so a transaction's queries all agree which pages are gone. A connection that never
set one (a `sqlite3` shell on the file) cannot read those views, and says why, rather than guess.
"""

import aiosqlite

FUNCTION = "memvm_now"


class Moment:
    """The moment one connection's current transaction began, in seconds since the epoch."""

    def __init__(self) -> None:
        self.now: float | None = None

    def __call__(self) -> float:
        if self.now is None:
            raise ValueError("memvm_now() is set as each memvm transaction begins; this one set none")
        return self.now


async def keep_moment(conn: aiosqlite.Connection) -> Moment:
    """Give `conn` its memvm_now(), answered from the Moment returned."""
    moment = Moment()
    # Deterministic: it holds still for a whole statement, so SQLite may take it once per statement.
    await conn.create_function(FUNCTION, 0, moment, deterministic=True)
    return moment
