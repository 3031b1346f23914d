"""The vm_rules prompt through the official client, in both protocol eras."""

import logging

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, GetPromptRequest, GetPromptRequestParams, GetPromptResult

pytestmark = pytest.mark.anyio


async def test_the_mode_argument_is_described_in_the_prompt_list(connect):
    async with connect() as client:
        prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    (mode,) = prompts["vm_rules"].arguments
    assert mode.name == "mode" and mode.required is False
    assert all(name in mode.description for name in ("strict", "relaxed", "passive"))


@pytest.mark.parametrize("rule_mode", ["strict", "relaxed", "passive"])
async def test_each_mode_renders_its_rules(connect, rule_mode):
    async with connect() as client:
        prompt = await client.get_prompt("vm_rules", {"mode": rule_mode})
    assert f'<VM:RULES mode="{rule_mode}">' in prompt.messages[0].content.text


async def test_without_a_mode_the_rules_are_strict(connect):
    async with connect() as client:
        prompt = await client.get_prompt("vm_rules")
    assert '<VM:RULES mode="strict">' in prompt.messages[0].content.text


async def test_an_unknown_mode_is_an_invalid_params_error_naming_the_modes_and_logs_no_traceback(
    connect, caplog
):
    caplog.set_level(logging.DEBUG)
    async with connect() as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("vm_rules", {"mode": "lenient"})
    assert refused.value.code == INVALID_PARAMS
    assert all(name in refused.value.message for name in ("strict", "relaxed", "passive"))
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    assert "Traceback" not in caplog.text


async def get_prompt_raw(client, name: str, arguments: dict) -> None:
    """prompts/get as a client that does not check its own arguments would send it."""
    params = GetPromptRequestParams.model_construct(name=name, arguments=arguments)
    await client.session.send_request(GetPromptRequest(params=params), GetPromptResult)


# The raw request carries what its model says cannot be there; pydantic warns as it sends it.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("vm_roolz", {}, "There is no prompt named 'vm_roolz'; the prompts are: vm_rules."),
        (
            "vm_rules",
            {"mode": "strict", "extra": "x"},
            "vm_rules takes only the argument mode; leave out 'extra'.",
        ),
        ("vm_rules", {"mode": 5}, "vm_rules takes its arguments as strings; give mode as a string."),
        ("vm_rules", {"mode": ["strict"]}, "vm_rules takes its arguments as strings; give mode as a string."),
    ],
    ids=["unknown-prompt", "extra-argument", "number", "list"],
)
async def test_a_prompt_request_that_cannot_be_served_is_one_sentence_to_the_client_and_one_log_line(
    connect, caplog, name, arguments, said
):
    caplog.set_level(logging.DEBUG)
    async with connect() as client:
        caplog.clear()
        with pytest.raises(MCPError) as refused:
            await get_prompt_raw(client, name, arguments)
        logged = [record for record in caplog.records if record.levelno >= logging.INFO]
    assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, said)
    assert [record.getMessage() for record in logged] == [f"prompts/get refused: {said}"]
    assert "Traceback" not in caplog.text


async def test_a_made_up_prompt_name_is_echoed_short_and_on_one_line(connect, caplog):
    caplog.set_level(logging.INFO)
    async with connect() as client:
        caplog.clear()
        with pytest.raises(MCPError) as refused:
            await get_prompt_raw(client, "evil\nname" + "x" * 10_000, {})
    assert len(refused.value.message) < 200
    assert "\n" not in refused.value.message and "\n" not in caplog.text.strip()
