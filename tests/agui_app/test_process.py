"""A run's owner names its process; recovery reads it back to tell a dead process from a live one."""

from __future__ import annotations

import os
import subprocess
import sys

from agui_app.process import HOSTNAME, PROCESS_ID, Owner, is_this_process


def test_this_process_reads_back_as_alive_here() -> None:
    owner = Owner.parse(PROCESS_ID)
    assert (owner.host, owner.pid) == (HOSTNAME, os.getpid())
    assert is_this_process(PROCESS_ID)
    assert not owner.died_on_this_host()


def test_a_process_that_exited_on_this_host_reads_back_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    owner = Owner.parse(f"{HOSTNAME}:{child.pid}:deadbeef")
    assert owner.died_on_this_host()
    assert not is_this_process(f"{HOSTNAME}:{child.pid}:deadbeef")


def test_a_process_on_another_host_is_never_judged_by_its_pid() -> None:
    assert not Owner.parse(f"elsewhere-{HOSTNAME}:1:abc").died_on_this_host()


def test_a_malformed_owner_has_no_pid_and_is_not_judged_dead() -> None:
    for text in ["", "host-only", f"{HOSTNAME}:", f"{HOSTNAME}:²:x", f"{HOSTNAME}:-5:x"]:
        owner = Owner.parse(text)
        assert owner.pid is None and not owner.died_on_this_host(), text
