import pytest
from memvm.engine.errors import InvalidArgument

from tests.conftest import NS, db_rows

pytestmark = pytest.mark.anyio


async def bind(engine, value, *, tool="calc", args=None, name=None, session="s"):
    return await engine.session(NS, session).bind_value(
        tool=tool, args=args if args is not None else {"x": repr(value)}, value=value, name=name
    )


async def test_references_are_sequential_per_session(engine):
    first = await bind(engine, 1.5)
    second = await bind(engine, "two")
    other = await bind(engine, 3, session="other")
    assert (first.ref, second.ref, other.ref) == ("$v1", "$v2", "$v1")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (42, "number"),
        (2.5, "number"),
        ("42", "string"),
        (True, "boolean"),
        ([1, 2], "list"),
        ({"a": 1}, "object"),
    ],
)
async def test_the_type_of_each_bound_value_is_recorded(engine, value, kind):
    assert (await bind(engine, value)).value_type.value == kind


async def test_a_name_becomes_an_alias_that_moves_to_the_latest_value(engine):
    first = await bind(engine, 10, name="total")
    second = await bind(engine, 20, name="$total")
    resolved = await engine.session(NS, "s").check_ungrounded(args={"amount": "$total"})
    assert first.aliases == ["$total"] and second.aliases == ["$total"]
    assert resolved.resolved_args == {"amount": 20}


async def test_binding_the_same_call_and_value_again_returns_the_same_reference(engine):
    first = await bind(engine, 7, args={"q": 1})
    again = await bind(engine, 7, args={"q": 1}, name="seven")
    assert (again.ref, again.created, again.aliases) == (first.ref, False, ["$seven"])
    assert (await bind(engine, 8, args={"q": 1})).ref == "$v2"


async def test_null_cannot_be_bound_and_nothing_is_stored(engine, db_url):
    with pytest.raises(InvalidArgument, match="null"):
        await bind(engine, None)
    assert db_rows(db_url, "SELECT count(*) FROM bindings") == [(0,)]


async def test_a_sequential_name_cannot_be_taken_as_an_alias(engine):
    with pytest.raises(InvalidArgument, match="sequential"):
        await bind(engine, 1, name="v3")


async def test_bindings_and_aliases_survive_a_restart(open_engine):
    engine = await open_engine()
    await bind(engine, 99.5, name="price")
    await engine.close()
    reopened = await open_engine()
    result = await reopened.session(NS, "s").check_ungrounded(args={"a": "$v1", "b": "$price"})
    assert result.resolved_args == {"a": 99.5, "b": 99.5}
    assert (await bind(reopened, "next")).ref == "$v2"


async def test_bindings_of_one_namespace_are_invisible_to_another(engine):
    await engine.session("alice", "s").bind_value(tool="t", args={}, value=5, name="secret")
    result = await engine.session("bob", "s").check_ungrounded(args={"a": "$secret", "b": "$v1"})
    assert result.missing_refs == ["$secret", "$v1"]
