import json
import secrets
from pathlib import Path

import pytest
from memvm.server.settings import ToolProfile

from tests.server.conftest import call, call_error, read

pytestmark = pytest.mark.anyio

MODEL_TOOLS = {
    "page_fault",
    "search_pages",
    "remember",
    "bind_value",
    "check_ungrounded",
    "check_tool_call",
    "record_tool_outcome",
    "get_procedural_hints",
    "forget",
}
HOST_TOOLS = {"ingest", "begin_turn", "pin_page", "build_context"}


async def test_the_model_profile_offers_only_model_tools(connect):
    async with connect(tools=ToolProfile.MODEL) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == MODEL_TOOLS


async def test_the_all_profile_adds_the_host_tools_with_annotations_and_schemas(connect):
    async with connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == MODEL_TOOLS | HOST_TOOLS
    assert tools["search_pages"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    for tool in tools.values():
        assert tool.output_schema is not None
        assert tool.input_schema.get("additionalProperties") is False
        assert tool.description
    fault_schema = tools["page_fault"].input_schema["properties"]["target_level"]
    assert (fault_schema["minimum"], fault_schema["maximum"], fault_schema["default"]) == (0, 3, 2)
    assert tools["search_pages"].input_schema["properties"]["limit"]["maximum"] == 50


async def test_remember_search_and_fault_through_the_client(connect):
    async with connect() as client:
        stored = await call(
            client, "remember", content="The spare key is under the blue flowerpot.", key="spare_key"
        )
        found = await call(client, "search_pages", query="where is the spare key?")
        fault = await call(client, "page_fault", page_id="spare_key", target_level=0)
        again = await call(client, "page_fault", page_id="spare_key", target_level=0)
    assert stored == {
        "page_id": "spare_key",
        "created": True,
        "tokens": stored["tokens"],
        "mapped": None,  # not pinned
        "reason": None,
        "version": 1,
        "expires_at": None,
        "redacted": [],
    }
    assert found["results"][0]["page_id"] == "spare_key"
    assert found["results"][0]["tokens"] == stored["tokens"]
    assert fault["content"] == "The spare key is under the blue flowerpot." and fault["mapped"] is True
    assert again["already_mapped"] is True and again["faults_left"] == fault["faults_left"]


async def test_remember_says_which_kinds_of_secret_it_did_not_keep(connect):
    async with connect() as client:
        stored = await call(
            client,
            "remember",
            content="wifi password: hunter2hunter2 and the deploy key ghp_" + "a1B2" * 9,
            summary="wifi password: hunter2hunter2",
        )
        faulted = await call(client, "page_fault", page_id=stored["page_id"], target_level=0)
    assert stored["redacted"] == ["password", "github_token"]
    assert "hunter2" not in faulted["content"] and "[REDACTED:password]" in faulted["content"]


async def test_an_unknown_page_is_a_tool_error_that_names_search_pages(connect):
    async with connect() as client:
        text = await call_error(client, "page_fault", page_id="msg_424242")
    assert "search_pages" in text
    assert "Traceback" not in text and "SELECT" not in text


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"page_id": "x", "target_level": 9}, "target_level"),
        ({"page_id": "x", "target_level": True}, "target_level"),
        ({"page_id": "x", "surprise": 1}, "surprise"),
        ({"page_id": "../../etc/passwd"}, "page_id"),
        ({"page_id": "x", "session": "no spaces allowed"}, "session"),
    ],
)
async def test_bad_arguments_get_one_sentence_naming_the_field(connect, arguments, field):
    async with connect() as client:
        text = await call_error(client, "page_fault", **arguments)
    assert text.startswith("Invalid arguments for page_fault (")
    assert field in text and text.endswith("fix them and call page_fault again.")
    assert "pydantic" not in text and "\n" not in text


async def test_text_that_cannot_be_stored_is_refused_cleanly(connect):
    async with connect() as client:
        nul = await call_error(client, "remember", content="a\x00b")
        probe = await call(client, "search_pages", query='alpha OR NEAR( "*" -x content:')
    assert "NUL" in nul
    assert probe["results"] == []


async def test_host_tools_drive_turns_pins_context_and_forgetting(connect):
    async with connect() as client:
        ingested = await call(
            client,
            "ingest",
            messages=[
                {"role": "user", "content": "My cat is called Miso."},
                {"role": "assistant", "content": "Miso is a lovely name."},
            ],
        )
        turn = await call(client, "begin_turn")
        pinned = await call(client, "pin_page", page_id=ingested["page_ids"][0])
        context = await call(client, "build_context", mode="strict", system_prompt="Be brief.")
        passive = await call(client, "build_context", mode="passive")
        forgotten = await call(client, "forget", page_id=ingested["page_ids"][1])
        after = await call(client, "build_context", mode="passive")
    assert turn["turn"] == ingested["turn"] + 1 and turn["faults_left"] == 3
    assert pinned["pinned"] is True and pinned["mapped"] is True
    assert context["text"].startswith("Be brief.") and context["tokens"] <= context["budget_tokens"]
    assert "U msg_000001: My cat is called Miso." in passive["text"]
    assert "A msg_000002" in passive["text"]
    assert forgotten == {"page_id": "msg_000002", "deleted": True, "purged": True}
    assert "msg_000002" not in after["text"]


async def test_resources_show_manifest_working_set_context_and_pages(connect):
    from tests.server.conftest import read

    async with connect(session="desk") as client:
        await call(client, "remember", content="Standing desk height is 112 cm.", key="desk_height")
        await call(client, "page_fault", page_id="desk_height", target_level=0)
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        manifest = json.loads(await read(client, "memvm://current/manifest"))
        working_set = await read(client, "memvm://current/working-set")
        same = await read(client, "memvm://sessions/desk/working-set")
        other = await read(client, "memvm://sessions/elsewhere/working-set")
        context = await read(client, "memvm://current/context")
        page = json.loads(await read(client, "memvm://pages/desk_height"))
        prompt = await client.get_prompt("vm_rules", {"mode": "relaxed"})
    assert {"memvm://current/manifest", "memvm://current/working-set", "memvm://current/context"} <= listed
    assert {"memvm://sessions/{session}/manifest", "memvm://pages/{page_id}"} <= templates
    assert manifest["session"] == "desk" and manifest["working_set"][0]["page_id"] == "desk_height"
    assert (
        working_set == same == "<VM:CONTEXT>\nN desk_height: Standing desk height is 112 cm.\n</VM:CONTEXT>"
    )
    assert other == "<VM:CONTEXT>\n\n</VM:CONTEXT>"
    assert "<VM:RULES" in context and "<VM:MANIFEST_JSON>" in context
    assert page["levels"]["0"] == "Standing desk height is 112 cm." and page["tokens"]["0"] > 0
    assert 'mode="relaxed"' in prompt.messages[0].content.text


async def test_reading_a_missing_page_resource_is_an_error_without_internals(connect):
    from mcp.shared.exceptions import MCPError

    async with connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("memvm://pages/nope_1")
    assert "search_pages" in str(raised.value) and "SELECT" not in str(raised.value)


async def test_a_made_up_argument_name_is_not_echoed_back(connect):
    strange = "line\nbreak" * 300
    async with connect() as client:
        nested = await call_error(client, "ingest", messages=[{"role": "user", "content": "x", strange: 1}])
        top = await call_error(client, "ingest", messages=[{"role": "user", "content": "x"}], **{strange: 1})
    for message in (nested, top):
        assert "\n" not in message and len(message) < 200
        assert "<key> is not an accepted argument" in message


async def test_a_rewrite_keeps_history_and_a_ttl_sets_expiry_through_the_client(connect):
    async with connect() as client:
        await call(client, "remember", content="The wifi password is on the fridge.", key="wifi")
        second = await call(
            client, "remember", content="The wifi password is on the router.", key="wifi", ttl_seconds=3600
        )
        page = json.loads(await read(client, "memvm://pages/wifi"))
        found = await call(client, "search_pages", query="wifi password fridge")
        refused = await call_error(client, "remember", content="x", key="k", ttl_seconds=0)
    assert second["version"] == 2 and second["created"] is False and second["expires_at"] is not None
    assert page["levels"]["0"] == "The wifi password is on the router."
    assert page["version"] == 2 and page["expires_at"] == second["expires_at"]
    assert [version["content"] for version in page["versions"]] == ["The wifi password is on the fridge."]
    assert [hit["page_id"] for hit in found["results"]] == ["wifi"]
    assert "fridge" not in found["results"][0]["snippet"]
    assert "ttl_seconds" in refused and "Traceback" not in refused


@pytest.mark.sqlite_only
async def test_forget_through_the_tool_leaves_none_of_the_text_in_the_file_or_its_wal(connect, db_url):
    secret = "zq" + secrets.token_hex(12)

    def on_disk() -> bytes:
        wal = Path(f"{db_url}-wal")
        return Path(db_url).read_bytes() + (wal.read_bytes() if wal.exists() else b"")

    async with connect() as client:
        await call(client, "remember", content=f"The alarm code is {secret}.", key="alarm")
        before = on_disk()
        forgotten = await call(client, "forget", page_id="alarm")
        found = await call(client, "search_pages", query=secret)
        after = on_disk()
    assert secret.encode() in before
    assert forgotten == {"page_id": "alarm", "deleted": True, "purged": True}
    assert found["results"] == []
    assert secret.encode() not in after


async def test_a_model_lists_what_it_remembers_and_forgets_it_with_the_default_tools(connect):
    # "What do you remember about me?" then "forget that", on a host that only passes tool replies.
    async with connect(tools=ToolProfile.MODEL) as client:
        await call(client, "remember", content="The user's dog is a beagle called Miso.", key="dog")
        await call(client, "remember", content="The user takes the 7:40 train.", key="train", pin=True)
        listed = await call(client, "search_pages", query="")
        gone = await call(client, "forget", page_id="dog")
        after = await call(client, "search_pages", query="  ")
    assert [hit["page_id"] for hit in listed["results"]] == ["train", "dog"]  # pinned first, then newest
    assert listed["total_pages"] == 2
    assert gone["deleted"] is True
    assert [hit["page_id"] for hit in after["results"]] == ["train"] and after["total_pages"] == 1
