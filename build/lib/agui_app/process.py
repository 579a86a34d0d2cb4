"""This process's identity: the owner stamped on every run it executes.

An owner is ``host:pid:boot`` (``boot`` tells a restarted process from its predecessor with the same
pid). It is formatted and parsed here only: admission stamps it on a run, the hub tags its
cross-process messages with it, and recovery reads it back to tell a run whose process died on
this host (its pid is gone) from one whose process may still be beating elsewhere.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

HOSTNAME = socket.gethostname()
PROCESS_ID = f"{HOSTNAME}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Owner:
    """A parsed owner string; ``pid`` is ``None`` when the string is not ours (or empty)."""

    host: str
    pid: int | None

    @classmethod
    def parse(cls, owner: str) -> Owner:
        host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        return cls(host=host, pid=int(pid) if pid.isascii() and pid.isdigit() else None)

    def died_on_this_host(self) -> bool:
        """True when the owner ran on this host and its process no longer exists."""
        return self.host == HOSTNAME and self.pid is not None and not pid_alive(self.pid)


def is_this_process(owner: str) -> bool:
    return owner == PROCESS_ID


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
