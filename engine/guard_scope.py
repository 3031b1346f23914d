"""A session's guards: bind a value, check a call's numbers, check a call against every guard.

Apart from the rest of a session's operations (scope.py), which inherits these: a host's pre-tool
hook answered in its own process checks one call, and imports only the guards and storage, not
paging, recall and the models the tools answer with (engine.guards()).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvm.engine.guard_config import GuardConfig
from memvm.engine.guards import guards
from memvm.engine.guards.bindings import bind
from memvm.engine.guards.call_log import CallLog
from memvm.engine.guards.grounding import check_ungrounded
from memvm.engine.models.guards import BindResult, GroundingResult, ToolCallCheck
from memvm.engine.sessions import touch_session, touch_with_allowance

if TYPE_CHECKING:
    from memvm.engine.engine import Engine


@dataclass(frozen=True, kw_only=True)
class GuardScope:
    """The guards of `session` in `namespace`; an ad-hoc session's calls are judged and charged in
    `host_session` (see scope.py)."""

    engine: "Engine"
    namespace: str
    session: str
    project: str | None = None
    host_session: str | None = None

    async def bind_value(self, *, tool: str, args: Any, value: Any, name: str | None = None) -> BindResult:
        redaction = self.engine.redaction
        redaction.name(name, "alias")
        args, value = redaction.value(args), redaction.value(value)
        async with self.engine.db.write(self.namespace) as conn:
            state = await touch_session(
                conn, self.namespace, self.session, conn.now, self.engine.config.turn_idle_seconds
            )
            return await bind(
                conn,
                namespace=self.namespace,
                session=self.session,
                turn=state.turn,
                now=conn.now,
                tool=tool,
                args=args,
                value=value,
                name=name,
            )

    async def check_ungrounded(self, *, args: Any) -> GroundingResult:
        guards_config = self.engine.config.guards
        async with self.engine.db.read(self.namespace) as conn:
            return await check_ungrounded(
                conn,
                namespace=self.namespace,
                session=self.session,
                args=args,
                structural_constants=guards_config.structural_constants,
                memvm_tools=guards_config.memvm_tools,
            )

    async def check_tool_call(
        self, *, tool: str, args: Any, guards_config: GuardConfig | None = None, will_run: bool = False
    ) -> ToolCallCheck:
        """Every guard at once, on the session's calls this turn.

        `guards_config` replaces the engine's guard settings for this call (a host hook's own).
        `will_run`: the call runs once allowed (a host's pre-tool hook), so checking it again is a
        second call; otherwise a check repeated before any outcome is recorded gets the same verdict.
        """
        engine = self.engine
        async with engine.db.write(self.namespace) as conn:
            _, state = await touch_with_allowance(
                conn,
                self.namespace,
                self.session,
                self.host_session,
                conn.now,
                engine.config.turn_idle_seconds,
            )
            log = CallLog(
                conn=conn,
                namespace=self.namespace,
                session=state.session,
                turn=state.turn,
                redaction=engine.redaction,
            )
            config = guards_config or engine.config.guards
            return await guards.check_tool_call(
                log, tool=tool, args=args, config=config, now=conn.now, will_run=will_run
            )
