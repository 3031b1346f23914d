"""The vm_rules prompt: memvm's rules for the model, in the mode the host picks."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from memvm.resources.rules import MODE_MEANINGS, RuleMode, rules_text
from memvm.server.app_state import Runtime, RuntimeHolder
from pydantic import Field

MODES = ", ".join(mode.value for mode in RuleMode)

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
        raise MCPError(
            code=INVALID_PARAMS, message=f"vm_rules has no such mode; use one of {MODES}."
        ) from None


def register(server: MCPServer[Runtime], holder: RuntimeHolder) -> None:
    @server.prompt(
        name="vm_rules",
        description="Rules for using memvm's paged memory, in strict, relaxed or passive mode.",
    )
    async def vm_rules(mode: ModeName = RuleMode.STRICT.value) -> str:
        return rules_text(
            rule_mode(mode), max_faults_per_turn=holder.runtime.engine.config.max_faults_per_turn
        )
