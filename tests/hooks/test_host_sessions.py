"""A whole recorded session per host, played through `memvm hook` (in this process, and through the
real process in the end-to-end stage), then a session in another project: every answer is
checked, and the database after.

Each session runs in a subdirectory of a git work tree. The user states a project fact and asks for
the tests, mistyped then fixed; asks to have a fact about themselves kept; has a Linear estimate
set from numbers the agent reads (an issue list, a git log) while an invented one is flagged; a
repeated lookup is denied with its earlier result, which carries a secret; a build is rerun
unchanged until it is stopped while test, edit, test never is; calls whose arguments cannot be
checked are denied. The next session, in another work tree, starts with the learned fix and the
user's fact, and recalls nothing of the first project.
"""

import json
import stat
from pathlib import Path
from typing import Any

from tests.conftest import backend_of, stored_state
from tests.hooks import claude_code_events as cc
from tests.hooks import claude_code_transcripts as ct
from tests.hooks import gemini_cli_events as gc
from tests.hooks import gemini_cli_transcripts as gt
from tests.hooks.runner import rows, transcript, verdicts
from tests.hooks.session_players import (
    ClaudeCodeSession,
    GeminiCliSession,
    memvm_words,
    stripe_key,
    work_tree,
)

LATER = "def456"
TYPO, TESTS = {"command": "npm tset"}, {"command": "npm test"}
MISSING_SCRIPT = "npm ERR! Missing script: tset"
BUILD = {"command": "make build"}
LOG = {"command": "git log --oneline -3"}
BRANCHES = {"command": "git branch -r"}
GIT_LOG = "a1b2c3d Fix token refresh (LIN-4402)\n9f8e7d6 Bump deps\n5e4d3c2 Billing export CSV"
# Long enough to be kept as a page of its own.
ISSUES = "\n".join(
    [
        "LIN-4411 Fix login",
        "LIN-4398 Billing export",
        *(f"LIN-{n} Backlog item {n}" for n in range(4450, 4490)),
    ]
)

# The prompts and replies of the first session, in order, and the exchange only its transcript has.
PROMPTS = [
    "Our staging cluster is called heron. Run the test suite.",
    "Remember that I have a beagle called Rex.",
    "Set the estimate of LIN-4398 to 8.",
    "The build fails: find out why. Then rename the billing helpers one at a time, testing after each.",
]
REPLIES = [
    "The tests pass (12). Staging is heron.",
    "Noted: your beagle is Rex.",
    "LIN-4398's estimate is now 8.",
    "The build lacks foo.h; the helpers are renamed and the tests pass.",
]
MISSED = ("Which branch deploys to heron?", "The release branch deploys to heron.")
ELSEWHERE = "Remind me: what is my beagle called, and what is the staging cluster called?"


# What the guards decided on the Linear calls: listed, looked up and set from what was read; an
# invented estimate warned, and denied where the tool is consequential; the repeated lookup denied.
LINEAR_VERDICTS = [
    ("list_issues", "allow"),
    ("get_issue", "allow"),
    ("update_issue", "allow"),
    ("update_issue", "warn"),
    ("update_issue", "block"),
    ("get_issue", "block"),
]


def linear_verdicts(db: str, prefix: str) -> list[tuple[str, str]]:
    return [(tool.removeprefix(prefix), verdict) for tool, verdict in verdicts(db) if tool.startswith(prefix)]


def conversation(session: str) -> list[tuple[str, str, str]]:
    """The first session's transcript pages: each prompt and reply, then the missed exchange."""
    said = [text for exchange in [*zip(PROMPTS, REPLIES, strict=True), MISSED] for text in exchange]
    return [(session, ("user", "assistant")[n % 2], text) for n, text in enumerate(said)]


def shell(stdout: str) -> dict[str, Any]:
    """Claude Code's Bash result."""
    return {"stdout": stdout, "stderr": "", "interrupted": False}


def rename(tree: Path, n: int) -> dict[str, str]:
    return {"file_path": str(tree / "src" / "billing.js"), "old_string": f"f{n}", "new_string": f"g{n}"}


def guard_config(tmp_path: Path, **settings: Any) -> tuple[str, str]:
    path = tmp_path / "guards.json"
    path.write_text(json.dumps(settings))
    return ("--guard-config", str(path))


def context(answer: dict[str, Any], event: str) -> str:
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == event and "permissionDecision" not in output
    return output["additionalContext"]


def denied(answer: dict[str, Any]) -> str:
    output = answer["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    return output["permissionDecisionReason"]


def assert_what_another_project_sees(start: str, recalled: str) -> None:
    """The next session's start context and recall: the fix the first session learned (what a tool
    taught is the namespace's) and the user's fact, nothing of the first project."""
    assert "npm tset" in start and "npm test" in start and "beagle called Rex" in start
    assert "heron" not in start
    assert "beagle called Rex" in recalled and "heron" not in recalled and "4398" not in recalled


def pages_by_project(db: str) -> set[tuple[str, str, str]]:
    return set(rows(db, "SELECT session, type, project FROM pages"))


def projects_of(first: str, billing: Path, website: Path) -> set[tuple[str, str, str]]:
    """Each kind of page by session, with its project: the work tree's resolved path, or ''."""
    here, there = str(billing.resolve()), str(website.resolve())
    return {
        (first, "transcript", here),
        (first, "tool_result", here),  # the issue list
        (first, "preference", ""),  # the user's fact, for every project
        (LATER, "transcript", there),
    }


def assert_private(db: str, tmp_path: Path, key: str) -> None:
    """The database is its user's alone, and holds the secret only as its redaction mark."""
    if backend_of(db) == "sqlite":
        files = list(tmp_path.glob("memvm.db*"))
        assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in files} == {
            path.name: 0o600 for path in files
        }
        stored = b"".join(path.read_bytes() for path in files)
    else:
        stored = repr(stored_state(db)).encode()
    assert key.encode() not in stored and b"[REDACTED:stripe_key]" in stored


def test_a_recorded_claude_code_session_and_the_next_one_in_another_project(db_url, tmp_path, hook_runner):
    """The story above through Claude Code's events, where a warning reaches the model as the
    pre-tool answer's context. Claude Code only: a call the user interrupts, a Stop event of an
    older host that leaves the reply to the transcript, and tool calls caught up by their ids."""
    db, key = db_url, stripe_key()
    billing, website = work_tree(tmp_path, "billing"), work_tree(tmp_path, "website")
    first = ClaudeCodeSession(hook_runner, db, cc.SESSION, billing / "src", tmp_path / "first.jsonl")
    consequential = guard_config(tmp_path, consequential_tools=["mcp__linear__update_issue"])

    assert first.send(cc.session_start()) == {}  # nothing stored yet

    # A project fact; the tests, mistyped then fixed.
    assert first.prompt(PROMPTS[0]) == {}
    assert first.call("Bash", TYPO, error=f"Exit code 1\n{MISSING_SCRIPT}") == {}
    assert first.call("Bash", TESTS, shell("12 passing")) == {}
    assert first.reply(REPLIES[0]) == {}

    # A fact about the user, kept for every project.
    assert "kept, for every project" in context(first.prompt(PROMPTS[1]), "UserPromptSubmit")
    assert first.reply(REPLIES[1]) == {}

    # The estimate, from numbers the agent read: an MCP tool's text content and a git log.
    # (The session's own conversation is in the host's context already: it is not recalled.)
    assert "heron" not in context(first.prompt(PROMPTS[2]), "UserPromptSubmit")
    listed = [{"type": "text", "text": ISSUES}]
    assert first.call("mcp__linear__list_issues", {"team": "ENG"}, listed) == {}
    assert first.call("Bash", LOG, shell(GIT_LOG)) == {}
    issue = [{"type": "text", "text": f"LIN-4402 Fix token refresh: done. Webhook signed with {key}"}]
    assert first.call("mcp__linear__get_issue", {"id": 4402}, issue) == {}
    updated = [{"type": "text", "text": "Updated LIN-4398"}]
    assert first.call("mcp__linear__update_issue", {"id": 4398, "estimate": 8}, updated) == {}
    # A number from nowhere warns, and the call runs; where the operator marks the tool
    # consequential, another is denied.
    warned = first.call("mcp__linear__update_issue", {"id": 4398, "estimate": 13}, updated)
    assert "No source for estimate=13" in context(warned, "PreToolUse")
    refused = first.call("mcp__linear__update_issue", {"id": 4398, "estimate": 21}, None, *consequential)
    assert denied(refused).startswith("memvm guard: No source for estimate=21")
    # The same lookup again: denied, with the earlier result (its secret redacted) in the reason.
    reason = denied(first.call("mcp__linear__get_issue", {"id": 4402}))
    assert "mcp__linear__get_issue already ran with these arguments" in reason
    assert "LIN-4402 Fix token refresh: done." in reason
    assert key not in reason and "[REDACTED:stripe_key]" in reason
    assert first.reply(REPLIES[2]) == {}

    # The same build, the same failure, nothing edited: stopped by the sixth run at the latest.
    assert "heron" not in context(first.prompt(PROMPTS[3]), "UserPromptSubmit")
    builds = [first.call("Bash", BUILD, shell("error: missing header foo.h")) for _ in range(6)]
    assert builds[:5] == [{}] * 5
    assert "Change something first, or stop and report what it shows." in denied(builds[5])
    # Test, edit, test: the same command and output, an edit between each, never stopped.
    edited = {"filePath": str(billing / "src" / "billing.js"), "userModified": False}
    for n in range(6):
        assert first.call("Bash", TESTS, shell("12 passing")) == {}
        assert first.call("Edit", rename(billing, n), edited) == {}
    assert first.call("Bash", TESTS, shell("12 passing")) == {}
    assert first.interrupted("Bash", {"command": "npm run dev"}) == {}
    # Arguments no reader can check are denied, never waved through.
    uncheckable = [denied(answer) for answer in first.uncheckable("mcp__db__drop_table")]
    assert all("cannot be checked" in reason for reason in uncheckable)
    assert first.reply(REPLIES[3], in_event=False) == {}  # an older host: the reply is in the transcript

    # One exchange reaches only the transcript (a hook that timed out); the session ends.
    first.lines += [
        ct.prompt(MISSED[0]),
        ct.assistant(ct.tool_use("toolu_90", "Bash", BRANCHES), stop_reason="tool_use"),
        ct.tool_result("toolu_90", "origin/main\norigin/release"),
        ct.assistant(ct.text(MISSED[1])),
    ]
    first.write()
    # The calls denied are not the tools' failures. But a call denied before its event could be
    # read (nested past what this interpreter's parser takes) was never known by its id: the
    # transcript's entry for it cannot be stored either, and is left out, saying so.
    unread = sum("nested too deep to read" in reason for reason in uncheckable)
    left_out = [f"memvm hook: {unread} transcript entry could not be stored; what was readable is captured"]
    assert first.send(cc.session_end(), stderr=left_out[:unread]) == {}
    assert first.send(cc.session_end(), stderr=left_out[:unread]) == {}  # a replay adds nothing

    # The next session, in another project: the learned fix and the user's fact, nothing of billing.
    later = ClaudeCodeSession(hook_runner, db, LATER, website, tmp_path / "later.jsonl")
    start = context(later.send(cc.session_start()), "SessionStart")
    recalled = context(later.prompt(ELSEWHERE), "UserPromptSubmit")
    assert_what_another_project_sees(start, recalled)

    # No answer names memvm's own tools, its references or a page id.
    assert memvm_words(first.answers + later.answers) == []

    # The database after.
    assert transcript(db) == [*conversation(cc.SESSION), (LATER, "user", ELSEWHERE)]
    calls = rows(db, "SELECT tool, outcome FROM tool_calls ORDER BY call_id")
    assert calls == [
        ("Bash", "failure"),
        ("Bash", "success"),
        ("mcp__linear__list_issues", "success"),
        ("Bash", "success"),
        ("mcp__linear__get_issue", "success"),
        ("mcp__linear__update_issue", "success"),
        ("mcp__linear__update_issue", "success"),
        *[("Bash", "success")] * 5,
        *[("Bash", "success"), ("Edit", "success")] * 6,
        ("Bash", "success"),
        ("Bash", "cancelled"),
        ("Bash", "success"),  # caught up from the transcript
    ]
    assert linear_verdicts(db, "mcp__linear__") == LINEAR_VERDICTS
    assert pages_by_project(db) == projects_of(cc.SESSION, billing, website)
    assert_private(db, tmp_path, key)


def test_a_recorded_gemini_cli_session_and_the_next_one_in_another_project(db_url, tmp_path, hook_runner):
    """The same story through Gemini CLI's events. BeforeTool takes no context, so a warning never
    reaches its model: the guard's verdict is kept, and a denial is `{"decision": "deny", "reason"}`.
    Its events carry no call id and its session file no tool calls, so catch-up adds prompts and
    replies only."""
    db, key = db_url, stripe_key()
    billing, website = work_tree(tmp_path, "billing"), work_tree(tmp_path, "website")
    first = GeminiCliSession(hook_runner, db, gc.SESSION, billing / "src", tmp_path / "first.jsonl")
    consequential = guard_config(tmp_path, consequential_tools=["mcp_linear_update_issue"])
    shell_tool, tset = "run_shell_command", f"Command exited with code 1: {MISSING_SCRIPT}"

    assert first.send(gc.session_start()) == {}  # nothing stored yet

    # A project fact; the tests, mistyped then fixed.
    assert first.prompt(PROMPTS[0]) == {}
    assert first.call(shell_tool, TYPO, MISSING_SCRIPT, error=tset) == {}
    assert first.call(shell_tool, TESTS, "12 passing") == {}
    assert first.reply(REPLIES[0]) == {}

    # A fact about the user, kept for every project.
    assert "kept, for every project" in context(first.prompt(PROMPTS[1]), "BeforeAgent")
    assert first.reply(REPLIES[1]) == {}

    # The estimate, from numbers the agent read: an MCP tool's text content and a git log.
    assert "heron" not in context(first.prompt(PROMPTS[2]), "BeforeAgent")
    assert first.call("mcp_linear_list_issues", {"team": "ENG"}, ISSUES) == {}
    assert first.call(shell_tool, LOG, GIT_LOG) == {}
    issue = f"LIN-4402 Fix token refresh: done. Webhook signed with {key}"
    assert first.call("mcp_linear_get_issue", {"id": 4402}, issue) == {}
    assert first.call("mcp_linear_update_issue", {"id": 4398, "estimate": 8}, "Updated LIN-4398") == {}
    # A number from nowhere is warned (BeforeTool cannot say so: the call runs); where the
    # operator marks the tool consequential, another is denied.
    assert first.call("mcp_linear_update_issue", {"id": 4398, "estimate": 13}, "Updated LIN-4398") == {}
    assert verdicts(db)[-1] == ("mcp_linear_update_issue", "warn")
    refused = first.call("mcp_linear_update_issue", {"id": 4398, "estimate": 21}, "", *consequential)
    assert refused["decision"] == "deny"
    assert refused["reason"].startswith("memvm guard: No source for estimate=21")
    # The same lookup again: denied, with the earlier result (its secret redacted) in the reason.
    repeat = first.call("mcp_linear_get_issue", {"id": 4402})
    assert repeat["decision"] == "deny"
    assert "mcp_linear_get_issue already ran with these arguments" in repeat["reason"]
    assert "LIN-4402 Fix token refresh: done." in repeat["reason"]
    assert key not in repeat["reason"] and "[REDACTED:stripe_key]" in repeat["reason"]
    assert first.reply(REPLIES[2]) == {}

    # The same build, the same failure, nothing edited: stopped by the sixth run at the latest.
    assert "heron" not in context(first.prompt(PROMPTS[3]), "BeforeAgent")
    builds = [first.call(shell_tool, BUILD, "error: missing header foo.h") for _ in range(6)]
    assert builds[:5] == [{}] * 5
    assert builds[5]["decision"] == "deny"
    assert "Change something first, or stop and report what it shows." in builds[5]["reason"]
    # Test, edit (Gemini CLI's `replace`), test: never stopped.
    for n in range(6):
        assert first.call(shell_tool, TESTS, "12 passing") == {}
        assert first.call("replace", rename(billing, n), "Successfully modified file") == {}
    assert first.call(shell_tool, TESTS, "12 passing") == {}
    # Arguments no reader can check are denied, never waved through.
    for answer in first.uncheckable("mcp_db_drop_table"):
        assert answer["decision"] == "deny" and "cannot be checked" in answer["reason"]
    assert first.reply(REPLIES[3]) == {}

    # One exchange reaches only the session file (a hook that timed out); the session ends.
    first.records += [gt.user("m90", MISSED[0]), gt.gemini("m91", MISSED[1])]
    first.write()
    assert first.send(gc.session_end(str(first.path))) == {}
    assert first.send(gc.session_end(str(first.path))) == {}  # a second read adds nothing

    # The next session, in another project: the learned fix and the user's fact, nothing of billing.
    later = GeminiCliSession(hook_runner, db, LATER, website, tmp_path / "later.jsonl")
    start = context(later.send(gc.session_start()), "SessionStart")
    recalled = context(later.prompt(ELSEWHERE), "BeforeAgent")
    assert_what_another_project_sees(start, recalled)

    # No answer names memvm's own tools, its references or a page id.
    assert memvm_words(first.answers + later.answers) == []

    # The database after.
    assert transcript(db) == [*conversation(gc.SESSION), (LATER, "user", ELSEWHERE)]
    assert rows(db, "SELECT tool, outcome FROM tool_calls ORDER BY call_id") == [
        (shell_tool, "failure"),
        (shell_tool, "success"),
        ("mcp_linear_list_issues", "success"),
        (shell_tool, "success"),
        ("mcp_linear_get_issue", "success"),
        ("mcp_linear_update_issue", "success"),
        ("mcp_linear_update_issue", "success"),
        *[(shell_tool, "success")] * 5,
        *[(shell_tool, "success"), ("replace", "success")] * 6,
        (shell_tool, "success"),
    ]
    assert linear_verdicts(db, "mcp_linear_") == LINEAR_VERDICTS
    assert pages_by_project(db) == projects_of(gc.SESSION, billing, website)
    assert_private(db, tmp_path, key)
