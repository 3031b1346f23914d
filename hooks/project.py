"""Which project's memory a hook event belongs to: the work tree of the host's directory."""

import os

from memvm.engine.paging.projects import work_tree
from memvm.hooks.events import HookEvent


def event_project(event: HookEvent) -> str | None:
    """The project the event's working directory is in (see engine/paging/projects.py); None for
    an event that names no usable directory, whose reads see every project."""
    cwd = event.cwd
    if not cwd or "\0" in cwd or not os.path.isabs(cwd):
        return None
    return work_tree(cwd)
