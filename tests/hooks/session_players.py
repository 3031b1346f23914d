"""Playing a recorded host session through `memvm hook`, one event at a time: each event carries the
session's id, working directory and transcript file, each answer is kept for the wording check,
and the transcript file grows as the host writes it (Claude Code: JSON lines of its conversation;
Gemini CLI: its session file of messages).

The players send each event and return the answer; the tests assert on every answer they get.
"""

import itertools
import json
import random
import re
import string
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.hooks import claude_code_events as cc
from tests.hooks import claude_code_transcripts as ct
from tests.hooks import gemini_cli_events as gc
from tests.hooks import gemini_cli_transcripts as gt
from tests.hooks.runner import Answer
from tests.hooks.uncheckable import ARGUMENTS, PLACEHOLDER, with_arguments

Runner = Callable[..., Answer]

# What only a model with memvm's own tools could act on, and a page id (`msg_000123`): the host's
# model has neither, so no answer it reads may name one.
_MEMVM_ONLY = re.compile(r"bind_value|cached_result|\$v|page_fault|\b(?:msg|note|tool|pref)_\d+")


def work_tree(root: Path, name: str) -> Path:
    """A git work tree (a folder with a `.git` directory) with a `src` folder."""
    tree = root / name
    (tree / ".git").mkdir(parents=True)
    (tree / "src").mkdir()
    return tree


def stripe_key() -> str:
    rng = random.Random(16)
    return "sk_live_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))


def told(answer: dict[str, Any]) -> list[str]:
    """Everything of an answer the host's model reads: context, a deny's reason."""
    output = answer.get("hookSpecificOutput", {})
    said = [output.get("additionalContext"), output.get("permissionDecisionReason"), answer.get("reason")]
    return [text for text in said if text]


def memvm_words(answers: list[dict[str, Any]]) -> list[str]:
    """The names of memvm's own tools, references and page ids the answers show the model."""
    return [
        found.group() for answer in answers for text in told(answer) for found in _MEMVM_ONLY.finditer(text)
    ]


class HostSession:
    """One host session in `cwd`, its transcript file at `path`: the events it sends, and the
    answers it got."""

    host = ""

    def __init__(self, run: Runner, db: str, session: str, cwd: Path, path: Path) -> None:
        self.run, self.db, self.session, self.cwd, self.path = run, db, session, cwd, path
        self.answers: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def _common(self, event: dict[str, Any]) -> dict[str, Any]:
        return {**event, "session_id": self.session, "cwd": str(self.cwd), "transcript_path": str(self.path)}

    def send(self, event: dict[str, Any] | bytes, *extra: str, stderr: Sequence[str] = ()) -> dict[str, Any]:
        """The answer to `event` (as this session's; bytes are sent as they are), which logs
        nothing but `stderr`."""
        if isinstance(event, dict):
            event = self._common(event)
        answer, errors = self.run(self.host, self.db, event, *extra)
        assert errors == list(stderr), errors
        self.answers.append(answer)
        return dict(answer)


class ClaudeCodeSession(HostSession):
    """A Claude Code session; its transcript file is JSON lines of the conversation."""

    host = "claude-code"

    def __init__(self, run: Runner, db: str, session: str, cwd: Path, path: Path) -> None:
        super().__init__(run, db, session, cwd, path)
        self.lines: list[Any] = []

    def prompt(self, text: str) -> dict[str, Any]:
        self.lines.append(ct.prompt(text))
        return self.send(cc.prompt(text))

    def call(
        self, tool: str, args: dict[str, Any], result: Any = None, *extra: str, error: str | None = None
    ) -> dict[str, Any]:
        """One tool call: its PreToolUse answer; then its result (or failure) when it was let run."""
        tool_use_id = f"toolu_{next(self._ids):02d}"
        self.lines.append(ct.assistant(ct.tool_use(tool_use_id, tool, args), stop_reason="tool_use"))
        answer = self.send(cc.pre_tool(args, tool_use_id, tool=tool), *extra)
        decision = answer.get("hookSpecificOutput", {})
        if decision.get("permissionDecision") == "deny":
            # The model gets the reason as the call's error result.
            self.lines.append(
                ct.tool_result(tool_use_id, decision["permissionDecisionReason"], is_error=True)
            )
            return answer
        if error is None:
            after = cc.post_tool(args, result, tool_use_id, tool=tool)
            self.lines.append(ct.tool_result(tool_use_id, json.dumps(result)))
        else:
            after = cc.tool_failure(args, error, tool_use_id, tool=tool)
            self.lines.append(ct.tool_result(tool_use_id, error, is_error=True))
        assert self.send(after, *extra) == {}
        return answer

    def interrupted(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A call that starts and that the user stops (PostToolUseFailure with `is_interrupt`)."""
        tool_use_id = f"toolu_{next(self._ids):02d}"
        self.lines.append(ct.assistant(ct.tool_use(tool_use_id, tool, args), stop_reason="tool_use"))
        answer = self.send(cc.pre_tool(args, tool_use_id, tool=tool))
        stopped = {
            **cc.tool_failure(args, "Interrupted by user", tool_use_id, tool=tool),
            "is_interrupt": True,
        }
        self.lines.append(
            ct.tool_result(tool_use_id, "[Request interrupted by user for tool use]", is_error=True)
        )
        assert self.send(stopped) == {}
        return answer

    def uncheckable(self, tool: str) -> list[dict[str, Any]]:
        """The answers to calls whose arguments cannot be checked (tests/hooks/uncheckable.py)."""
        answers = []
        for arguments in ARGUMENTS:
            tool_use_id = f"toolu_{next(self._ids):02d}"
            use = ct.assistant(ct.tool_use(tool_use_id, tool, PLACEHOLDER), stop_reason="tool_use")
            self.lines.append(with_arguments(use, arguments))
            answer = self.send(
                with_arguments(self._common(cc.pre_tool(PLACEHOLDER, tool_use_id, tool=tool)), arguments)
            )
            reason = answer.get("hookSpecificOutput", {}).get("permissionDecisionReason", "")
            self.lines.append(ct.tool_result(tool_use_id, reason, is_error=True))
            answers.append(answer)
        return answers

    def reply(self, text: str, *, in_event: bool = True) -> dict[str, Any]:
        """The turn's final reply, written to the transcript; the Stop event carries it, or (an older
        host) leaves it to the transcript."""
        self.lines.append(ct.assistant(ct.text(text)))
        self.write()
        stop = cc.stop(text)
        if not in_event:
            del stop["last_assistant_message"]
        return self.send(stop)

    def write(self) -> None:
        ct.write(self.path, self.lines)


class GeminiCliSession(HostSession):
    """A Gemini CLI session; its session file holds the messages. Gemini CLI's events carry no call
    id, and an event differs from its replay only by `timestamp`: each gets a moment of its own."""

    host = "gemini-cli"
    _moments = itertools.count(1)

    def __init__(self, run: Runner, db: str, session: str, cwd: Path, path: Path) -> None:
        super().__init__(run, db, session, cwd, path)
        self.records: list[dict[str, Any]] = []
        self.prompted = ""  # the turn's prompt, which AfterAgent repeats

    def _common(self, event: dict[str, Any]) -> dict[str, Any]:
        moment = next(self._moments)
        at = f"2025-12-01T{10 + moment // 3600:02d}:{moment // 60 % 60:02d}:{moment % 60:02d}Z"
        return {**super()._common(event), "timestamp": at}

    def prompt(self, text: str) -> dict[str, Any]:
        self.records.append(gt.user(f"m{next(self._ids)}", text))
        self.prompted = text
        return self.send(gc.before_agent(text))

    def call(
        self, tool: str, args: dict[str, Any], output: Any = "", *extra: str, error: str | None = None
    ) -> dict[str, Any]:
        """One tool call: its BeforeTool answer; then its AfterTool when it was let run. An MCP
        tool's `output` is its text content (`llmContent` as parts)."""
        answer = self.send(gc.before_tool(args, tool=tool), *extra)
        if answer.get("decision") == "deny":
            return answer
        if error is not None:
            after = gc.after_tool(
                args, output, error={"message": error, "type": "execution_failed"}, tool=tool
            )
        elif tool.startswith("mcp_"):
            after = gc.after_mcp_tool(args, output, tool=tool)
        else:
            after = gc.after_tool(args, output, tool=tool)
        assert self.send(after, *extra) == {}
        return answer

    def uncheckable(self, tool: str) -> list[dict[str, Any]]:
        """The answers to calls whose arguments cannot be checked (tests/hooks/uncheckable.py)."""
        event = self._common(gc.before_tool(PLACEHOLDER, tool=tool))
        return [self.send(with_arguments(event, arguments)) for arguments in ARGUMENTS]

    def reply(self, text: str) -> dict[str, Any]:
        self.records.append(gt.gemini(f"m{next(self._ids)}", text))
        self.write()
        return self.send(gc.after_agent(self.prompted, text))

    def write(self) -> None:
        gt.write_jsonl(self.path, self.records)
