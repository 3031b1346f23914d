"""The tests' own `?` queries reach PostgreSQL as psycopg takes them (tests/placeholders.py)."""

import pytest

from tests.placeholders import Untranslatable, bind, translate


def test_placeholders_become_psycopgs_and_numbered_ones_are_one_parameter():
    assert translate("SELECT ? + ?") == ("SELECT %(p1)s + %(p2)s", (0, 1))
    # ?N is one server parameter wherever it appears; a bare ? after ?3 is ?4, as in SQLite.
    assert translate("VALUES (?1, ?2, ?1, ?3, ?)") == (
        "VALUES (%(p1)s, %(p2)s, %(p1)s, %(p3)s, %(p4)s)",
        (0, 1, 2, 3),
    )
    # Quoted text and names keep their ? and %; a literal % outside them is doubled.
    sql = "SELECT '?%', \"a?\", x % 2 FROM t WHERE y = ? -- why?\n"
    assert translate(sql) == ("SELECT '?%', \"a?\", x %% 2 FROM t WHERE y = %(p1)s -- why?\n", (0,))
    assert bind("SELECT 1 % 2", ()) == ("SELECT 1 % 2", None)  # no parameters: sent as written
    assert bind("SELECT ?2, ?1", ("a", "b")) == ("SELECT %(p2)s, %(p1)s", {"p1": "a", "p2": "b"})


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("SELECT ? /* a ? here */", "block comment"),
        ("SELECT $$ ? $$, ?", "dollar-quoted"),
        ("SELECT $tag$ it's $tag$, ?", "dollar-quoted"),
        ("SELECT E'\\'', ?", "E'' string"),
        ("SELECT doc ?| array['a'] FROM t WHERE x = ?", r"\?\| or \?&"),
        ("SELECT doc ?& array['a'] FROM t WHERE x = ?", r"\?\| or \?&"),
    ],
)
def test_what_the_translation_cannot_read_is_refused_not_guessed(sql, refused):
    with pytest.raises(Untranslatable, match=refused):
        translate(sql)


def test_names_ending_in_e_and_statements_without_parameters_pass():
    assert translate("SELECT note'x' FROM t WHERE type = ?")[1] == (0,)  # `note'x'`: no E'' string
    function = "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
    assert bind(function, ()) == (function, None)
