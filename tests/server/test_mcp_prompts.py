"""The vm_rules prompt through the official client, in both protocol eras."""

import logging

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

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
