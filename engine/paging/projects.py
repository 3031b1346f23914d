"""Memory per project: which pages a reader in a project sees, and what a project is.

A host that works in a directory (Claude Code, Gemini CLI) keeps each project's memory apart: a
page written while working in one git work tree is not recalled in another. A page marked for
every project (project '': what the user says about themselves, or anything written where no
project is known) is seen everywhere. A reader with no project (a desktop assistant, an
operator's tool) sees every page, and each hit says which project it came from.
"""

import hashlib
import os
import re
from pathlib import Path

# The project of a page recalled in every project.
EVERYWHERE = ""


def sees(reader: str | None, project: str) -> bool:
    """Whether a reader in project `reader` (None: no project) sees a page of `project`."""
    return reader is None or project in (reader, EVERYWHERE)


def visible_sql(reader: str | None, table: str = "p") -> tuple[str, dict[str, str]]:
    """A clause (with its leading AND) holding for the pages `reader` sees, and its parameters
    (`:project`, the reader's)."""
    if reader is None:
        return "", {}
    return f"AND {table}.project IN (:project, '')", {"project": reader}


def named_elsewhere(reader: str | None, project: str) -> str | None:
    """The project a page came from when it is not the reader's own and not everyone's."""
    return None if project in (EVERYWHERE, reader) else project


def project_session(project: str) -> str:
    """The default session of a server started for `project`: its own, so that two projects' servers
    never share a working set or a guard's call log. Readable, and a valid session name."""
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", Path(project).name).strip("-.")[:40] or "root"
    digest = hashlib.sha256(project.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"project-{name}-{digest}"


def work_tree(directory: str | Path) -> str:
    """The project of a working directory: the git work tree holding it, else the directory itself.

    Read from the file system (a `.git` directory, or the `.git` file of a linked work tree or
    submodule), never by running git: a hook answers in milliseconds and git may not be installed.
    """
    start = Path(directory).expanduser().resolve()
    for candidate in (start, *start.parents):
        # os.path.exists is False for a directory it may not read, where Path.exists raises.
        if os.path.exists(candidate / ".git"):
            return str(candidate)
    return str(start)
