"""The agent hosts memvm serves, by name: the one list of them.

A host is one `HostSpec` in a module of its own; adding one is writing that module and naming it
here. The command lines (`memvm hook HOST`, `memvm hooks install HOST`), the background process
and the handling of every event find hosts here.
"""

from memvm.hooks import claude_code, gemini_cli
from memvm.hooks.host_spec import HostSpec

HOSTS: dict[str, HostSpec] = {spec.name: spec for spec in (claude_code.HOST, gemini_cli.HOST)}
