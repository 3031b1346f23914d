"""Opening a file whose path someone else may choose: a regular file, or an error, never a wait.

A host's event names its transcript, and the hooks' journal sits in a folder others may write
to. A FIFO there would hold the process on its open or its first read, a device would read
forever, and a link planted where memvm writes would send the write to a file of the planter's
choosing. So the file is opened without waiting (`O_NONBLOCK`), its descriptor's own type is
checked (what the path names may change between a check and an open; the descriptor cannot), and
where memvm writes, a link is not followed at all (`O_NOFOLLOW`). Standard library only: the
hook's fast client writes the journal too.
"""

import os
import stat
from pathlib import Path

_NO_WAIT = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder, or (where links are not followed) a link."""


def open_regular(path: str | Path, flags: int, *, follow_links: bool, mode: int = 0o600) -> int:
    """A descriptor of the regular file at `path` opened with `flags` (`mode` when it is created).

    Raises NotRegularFile for anything else, and for a link when `follow_links` is false; other
    failures are the OSError of the open.
    """
    if not follow_links:
        if not _NO_FOLLOW and os.path.islink(path):
            raise NotRegularFile(f"{path} is a link")  # a platform without O_NOFOLLOW
        flags |= _NO_FOLLOW
    try:
        fd = os.open(path, flags | _NO_WAIT, mode)
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise NotRegularFile(f"{path} is a link") from exc  # ELOOP, as O_NOFOLLOW refuses it
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd
