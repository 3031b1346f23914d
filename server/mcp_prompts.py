"""The vm_rules prompt: memvm's rules for the model, in the mode the host picks.

A prompts/get the server cannot serve (an unknown prompt, an argument the prompt does not take,
an argument that is not a string) is answered with one sentence naming what there is, and
leaves one line in the log. Left to the SDK, the first two were an "internal error" with a
40-line traceback in the log, and the last a bare "Invalid request parameters".
"""

import logging
from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from memvm.resources.rules import MODE_MEANINGS, RuleMode, rules_text
from memvm.server.app_state import Runtime, RuntimeHolder
from pydantic import Field

logger = logging.getLogger("memvm")

MODES = ", ".join(mode.value for mode in RuleMode)
# How much of a name the client made up is repeated back, to it and to the log.
_ECHO_CHARS = 64
_MAX_NAMED = 5

ModeName = Annotated[
    # A plain string, checked here: the SDK turns a failed check of its own into an internal error
    # with a traceback in the log, where the host should read which modes there are.
    str,
    Field(description=MODE_MEANINGS),
]


def rule_mode(name: str) -> RuleMode:
    """The mode called `name`, or an invalid-params error that lists the modes."""
    try:
        return RuleMode(name)
    except ValueError:
        raise _refused(f"vm_rules has no such mode; use one of {MODES}.") from None


def _refused(message: str) -> MCPError:
    logger.info("prompts/get refused: %s", message)
    return MCPError(code=INVALID_PARAMS, message=message)


def _echo(name: object) -> str:
    """A client's name, quoted, cut short and with line breaks escaped: one line in the log."""
    return repr(str(name)[:_ECHO_CHARS])


class PromptRequestCheck:
    """Server middleware: a prompts/get the server cannot serve is refused before the SDK runs it."""

    def __init__(self, server: MCPServer[Runtime]) -> None:
        self._server = server

    async def __call__(self, ctx: ServerRequestContext[Runtime, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "prompts/get" and isinstance(ctx.params, Mapping):
            await self._check(ctx.params)
        return await call_next(ctx)

    async def _check(self, params: Mapping[str, Any]) -> None:
        name = params.get("name")
        prompts = {prompt.name: prompt for prompt in await self._server.list_prompts()}
        known = ", ".join(sorted(prompts))
        if not isinstance(name, str) or name not in prompts:
            raise _refused(f"There is no prompt named {_echo(name)}; the prompts are: {known}.")
        accepted = [argument.name for argument in prompts[name].arguments or []]
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise _refused(f"{name} takes its arguments as an object of strings: {_listed(accepted)}.")
        unknown = [_echo(key) for key in arguments if key not in accepted]
        if unknown:
            raise _refused(
                f"{name} takes only {_listed(accepted)}; leave out {', '.join(unknown[:_MAX_NAMED])}."
            )
        not_text = [key for key, value in arguments.items() if not isinstance(value, str)]
        if not_text:
            raise _refused(f"{name} takes its arguments as strings; give {', '.join(not_text)} as a string.")


def _listed(accepted: list[str]) -> str:
    if not accepted:
        return "no arguments"
    return f"the argument {accepted[0]}" if len(accepted) == 1 else f"the arguments {', '.join(accepted)}"


def register(server: MCPServer[Runtime], holder: RuntimeHolder) -> None:
    @server.prompt(
        name="vm_rules",
        description="Rules for using memvm's paged memory, in strict, relaxed or passive mode.",
    )
    async def vm_rules(mode: ModeName = RuleMode.STRICT.value) -> str:
        return rules_text(
            rule_mode(mode), max_faults_per_turn=holder.runtime.engine.config.max_faults_per_turn
        )

    server.middleware.append(PromptRequestCheck(server))
