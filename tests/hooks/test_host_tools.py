"""The host's own tools on the user's files and shell meet caps only, and the guard settings of
`memvm serve` (`--guards`, `--guard-config`) decide the rest, through the hook's own entry point."""

import json

from tests.hooks import claude_code_events as cc
from tests.hooks import gemini_cli_events as gc
from tests.hooks.runner import run_hook, verdicts


def decisions(answers):
    """For each answer: allow, warn or deny."""
    found = []
    for answer in answers:
        output = answer.get("hookSpecificOutput", {})
        found.append("deny" if output.get("permissionDecision") == "deny" else "warn" if output else "allow")
    return found


def test_a_coding_turn_of_reads_edits_and_commands_is_never_stopped(tmp_path, report_figure):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("refactor the parser module and run the tests"))
    calls = []
    for n in range(12):
        calls.append(
            ("Read", {"file_path": f"/home/user/my-project/src/parser_{n}.py", "offset": 37 + n, "limit": 60})
        )
        calls.append(
            (
                "Edit",
                {
                    "file_path": f"/home/user/my-project/src/parser_{n}.py",
                    "old_string": "a",
                    "new_string": "b",
                },
            )
        )
    # The same command again after edits is the point of running tests, not a repeat.
    calls += [("Bash", {"command": "pytest -q", "timeout": 120000})] * 4
    calls += [("Grep", {"pattern": "def parse", "path": "/home/user/my-project", "-n": True})] * 3
    answers = [
        run_hook("claude-code", db, cc.pre_tool(args, f"toolu_{n}", tool=tool))[0]
        for n, (tool, args) in enumerate(calls)
    ]
    assert decisions(answers) == ["allow"] * len(calls)
    report_figure(f"hook_workspace_tools: calls={len(calls)} in_one_turn=1 denied=0 warned=0")


def test_gemini_cli_workspace_tools_are_not_stopped_either(tmp_path):
    db = tmp_path / "m.db"
    run_hook("gemini-cli", db, gc.before_agent("read the sources"))
    for n in range(10):
        event = {
            **gc.before_tool({"file_path": f"/p/src/{n}.ts", "offset": 120, "limit": 80}, tool="read_file")
        }
        event["timestamp"] = f"2025-12-01T10:31:{n:02d}Z"
        assert run_hook("gemini-cli", db, event) == ({}, [])
    assert verdicts(db) == [("read_file", "allow")] * 10


def test_a_cap_named_for_a_host_tool_still_applies(tmp_path):
    db = tmp_path / "m.db"
    settings = tmp_path / "guards.json"
    settings.write_text(json.dumps({"tool_caps": {"Bash": 2}, "grace": 0}))
    extra = ("--guard-config", str(settings))
    run_hook("claude-code", db, cc.prompt("deploy it"), *extra)
    answers = [
        run_hook("claude-code", db, cc.pre_tool({"command": f"make deploy-{n}"}, f"toolu_{n}"), *extra)[0]
        for n in range(3)
    ]
    assert decisions(answers) == ["allow", "allow", "deny"]
    assert "Bash may run 2 times per turn" in answers[2]["hookSpecificOutput"]["permissionDecisionReason"]


def test_an_empty_workspace_list_guards_the_host_tools_like_any_other(tmp_path):
    db = tmp_path / "m.db"
    settings = tmp_path / "guards.json"
    settings.write_text(json.dumps({"workspace_tools": []}))
    extra = ("--guard-config", str(settings), "--guards", "strict")
    run_hook("claude-code", db, cc.prompt("look around"), *extra)
    answers = [
        run_hook(
            "claude-code", db, cc.pre_tool({"file_path": f"/p/{n}.py"}, f"toolu_{n}", tool="Read"), *extra
        )[0]
        for n in range(5)
    ]
    # strict: a loop is more than 3 calls of one tool among the last 6, blocked at once.
    assert decisions(answers) == ["allow", "allow", "allow", "deny", "deny"]


def test_an_unreadable_guard_config_answers_empty_with_one_stderr_line(tmp_path):
    answer, errors = run_hook(
        "claude-code",
        tmp_path / "m.db",
        cc.pre_tool({"command": "ls"}, "toolu_1"),
        "--guard-config",
        str(tmp_path / "missing.json"),
    )
    assert answer == {}
    assert len(errors) == 1 and "cannot read the guard config" in errors[0]


def run(db, command, stdout, n, tool="Bash"):
    """One run of a shell command through the hook: the check, then its result."""
    args = {"command": command}
    answer = run_hook("claude-code", db, cc.pre_tool(args, f"toolu_{n}", tool=tool))[0]
    if "permissionDecision" not in answer.get("hookSpecificOutput", {}):
        output = {"stdout": stdout, "stderr": "", "interrupted": False}
        run_hook("claude-code", db, cc.post_tool(args, output, f"toolu_{n}", tool=tool))
    return answer


def test_the_same_command_with_the_same_result_and_nothing_edited_is_stopped_by_its_sixth_run(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("why does the build fail?"))
    answers = [run(db, "make build", "error: missing header foo.h", n) for n in range(6)]
    assert decisions(answers) == ["allow"] * 5 + ["deny"]
    reason = answers[-1]["hookSpecificOutput"]["permissionDecisionReason"]
    assert "ran 5 times this turn" in reason and "nothing edited in between" in reason


def test_test_edit_test_and_a_command_whose_output_changes_are_never_stopped(tmp_path):
    db = tmp_path / "m.db"
    run_hook("claude-code", db, cc.prompt("make the tests pass"))
    answers = []
    for n in range(8):
        answers.append(run(db, "pytest -q", "1 failed, 11 passed", 2 * n))
        edit = {"file_path": "/p/src/parser.py", "old_string": f"a{n}", "new_string": f"b{n}"}
        answers.append(run_hook("claude-code", db, cc.pre_tool(edit, f"toolu_e{n}", tool="Edit"))[0])
        run_hook(
            "claude-code",
            db,
            cc.post_tool(edit, {"filePath": "/p/src/parser.py"}, f"toolu_e{n}", tool="Edit"),
        )
    # Waiting on a deploy: the same command, a new answer each time.
    answers += [run(db, "kubectl rollout status deploy/web", f"{n} of 3 updated", 100 + n) for n in range(8)]
    assert decisions(answers) == ["allow"] * len(answers)


def test_an_unsourced_number_under_a_hook_warns_and_denies_only_calls_marked_consequential(tmp_path):
    db = tmp_path / "m.db"
    settings = tmp_path / "guards.json"
    settings.write_text(json.dumps({"consequential_tools": ["mcp__pay__*", "*delete*"]}))
    extra = ("--guard-config", str(settings))
    run_hook("claude-code", db, cc.prompt("pay the 120 EUR invoice and look up a few orders"), *extra)
    lookups = [
        run_hook(
            "claude-code",
            db,
            cc.pre_tool({"order": 9000 + n}, f"toolu_{n}", tool="mcp__shop__get_order"),
            *extra,
        )[0]
        for n in range(4)
    ]
    assert decisions(lookups) == ["warn"] * 4  # ordinary work: a word to the model, never a stop
    assert "No source for order=9000" in lookups[0]["hookSpecificOutput"]["additionalContext"]

    invented = run_hook(
        "claude-code", db, cc.pre_tool({"eur": 125}, "toolu_p1", tool="mcp__pay__send"), *extra
    )[0]
    assert decisions([invented]) == ["deny"]
    assert "No source for eur=125" in invented["hookSpecificOutput"]["permissionDecisionReason"]
    given = run_hook("claude-code", db, cc.pre_tool({"eur": 120}, "toolu_p2", tool="mcp__pay__send"), *extra)[
        0
    ]
    assert decisions([given]) == ["allow"]
