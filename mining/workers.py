"""The crawl's parsing processes, which never outlive the crawl.

Reads and writes nothing. A pool worker waits on a queue whose pipe it holds open itself, so
it never sees EOF when the crawl dies: killed with SIGKILL, the crawl would leave its workers
behind for good. Each worker therefore asks the kernel to kill it when its parent dies
(`prctl(PR_SET_PDEATHSIG)`, Linux), or, where that is not available, watches its parent id
from a thread. Workers are spawned (fork + exec) straight from the crawl, so the crawl is their
parent, and they do not inherit the crawl's `git cat-file` pipes, which would keep git from
ever seeing EOF.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A process pool of `jobs` workers that die with this process."""
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )


def die_with_parent(parent: int) -> None:
    """Pool initializer: end this process when `parent` (its parent) ends."""
    if not _death_signal():
        threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    # The parent may have died before the signal was armed: then nobody will send it.
    if os.getppid() != parent:
        os._exit(1)


def _death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
