"""What the server holds while it runs: the engine and whose memory it serves."""

from dataclasses import dataclass

from memvm.engine import Engine


@dataclass
class Runtime:
    """What a request needs: the open engine and whose memory it is."""

    engine: Engine
    namespace: str
    default_session: str

    def session(self, requested: str | None) -> str:
        return requested or self.default_session


class RuntimeHolder:
    """Static resources get no request context in the SDK; they read the runtime from here."""

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the server is not running")
        return self._runtime

    def set(self, runtime: Runtime | None) -> None:
        self._runtime = runtime
