"""What a session is, who starts one, and what a model gets by naming sessions that do not exist."""

import json

import pytest
from memvm.engine.config import EngineConfig
from memvm.engine.guard_config import GuardConfig
from memvm.server.settings import ToolProfile

from tests.conftest import db_rows, long_text
from tests.server.conftest import call, read

pytestmark = pytest.mark.anyio

BUDGET = 2_500
INVENTED = 12


async def test_inventing_a_session_per_fault_gets_no_more_than_one_turns_allowance(connect, report_figure):
    config = EngineConfig(budget_tokens=BUDGET)
    async with connect(tools=ToolProfile.MODEL, engine=config) as client:
        for i in range(INVENTED):
            await call(client, "remember", content=long_text(f"pumps{i}", 30), key=f"page-{i}")
        served, tokens, refused = 0, 0, []
        for i in range(INVENTED):
            # A model that makes up a session for each fault, hoping for a fresh allowance each time.
            result = await client.call_tool(
                "page_fault", {"page_id": f"page-{i}", "target_level": 0, "session": f"fresh-{i}"}
            )
            if result.is_error:
                refused.append(result.content[0].text)
            elif result.structured_content["level"] is not None:
                served += 1
                tokens += result.structured_content["tokens"]
        # The connection's own session paid for them: it has no faults left either.
        own = await client.call_tool("page_fault", {"page_id": "page-0", "target_level": 2})
        manifest = json.loads(await read(client, "memvm://current/manifest"))
        page_budget = manifest["policies"]["page_budget_tokens"]
    report_figure(
        f"sessions: invented={INVENTED} faults_served={served} refused={len(refused)} "
        f"tokens_served={tokens} page_budget={page_budget} budget={BUDGET}"
    )
    assert served == config.max_faults_per_turn
    assert len(refused) == INVENTED - served and all("faults" in message for message in refused)
    assert tokens <= served * page_budget
    assert own.is_error and "faults" in own.content[0].text


async def test_invented_sessions_are_judged_against_the_callers_guard_budget(connect):
    config = EngineConfig(guards=GuardConfig(execution_budget=3))
    async with connect(tools=ToolProfile.MODEL, engine=config) as client:
        verdicts = [
            (await call(client, "check_tool_call", tool="valve", args={"step": i}, session=f"fresh-{i}"))[
                "verdict"
            ]
            for i in range(5)
        ]
        own = await call(client, "check_tool_call", tool="valve", args={"step": 9})
    # Past the budget a call is warned about once, then blocked: as in one session.
    assert verdicts == ["allow", "allow", "allow", "warn", "block"]
    assert own["verdict"] == "block" and own["budget"]["used"] == 4


@pytest.mark.parametrize("start", ["begin_turn", "ingest"])
async def test_a_session_the_host_started_keeps_an_allowance_of_its_own(connect, start):
    config = EngineConfig()
    async with connect(tools=ToolProfile.ALL, engine=config) as client:
        for i in range(2 * config.max_faults_per_turn):
            await call(client, "remember", content=f"pump station {i} runs at dawn", key=f"page-{i}")
        if start == "begin_turn":
            await call(client, "begin_turn", session="conv-2")
        else:
            await call(client, "ingest", messages=[{"role": "user", "content": "hello"}], session="conv-2")
        limit = config.max_faults_per_turn
        for i in range(limit):
            await call(client, "page_fault", page_id=f"page-{i}")
        for i in range(limit, 2 * limit):
            fault = await call(client, "page_fault", page_id=f"page-{i}", session="conv-2")
            assert fault["working_set_session"] == "conv-2" and fault["notice"] is None
    assert fault["faults_left"] == 0


async def test_a_named_session_is_created_on_first_use_and_holds_its_pages(connect):
    async with connect(tools=ToolProfile.ALL) as client:
        stored = await call(client, "remember", content="The alpha pump starts at dawn.", session="alpha")
        await call(client, "remember", content="The beta pump starts at noon.")
        found = await call(client, "search_pages", query="pump", scope="session", session="alpha")
        fault = await call(client, "page_fault", page_id=stored["page_id"], session="alpha")
    assert [hit["page_id"] for hit in found["results"]] == [stored["page_id"]]
    assert fault["working_set_session"] == "alpha" and fault["mapped"]


async def test_invented_sessions_do_not_hide_a_runaway_result_from_the_callers_guard(connect, db_url):
    async with connect(tools=ToolProfile.MODEL) as client:
        recorded = [
            await call(
                client,
                "record_tool_outcome",
                tool="gauge",
                args={"step": i},
                outcome="success",
                result=7,
                session=f"fresh-{i}",
            )
            for i in range(6)
        ]
        check = await call(client, "check_tool_call", tool="gauge", args={"step": 9})
    assert recorded[-1]["runaway"] == "returned 7 the last 3 times"
    assert "runaway" in [reason["rule"] for reason in check["reasons"]]
    # The calls themselves stay filed under the sessions they named.
    sessions = [row[0] for row in db_rows(db_url, "SELECT session FROM tool_calls ORDER BY call_id")]
    assert sessions == [f"fresh-{i}" for i in range(6)]
