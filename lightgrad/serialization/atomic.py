"""Atomic replacement of a file: write a temporary file next to the target, fsync it, check it,
rename it over the target, fsync the folder; the temporary files of saves that died are removed by
the next save to the same target. Shared by both checkpoint formats (safetensors and PyTorch's zip)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable

try:
    import fcntl as _fcntl
except ImportError:  # Windows: no file locks, so stale temporary files are left alone there
    _fcntl = None  # type: ignore[assignment]

_FREE_THREAD = "lightgrad-free-replaced-checkpoint"


def replace_atomically(target: str, write: Callable[[int], None], verify: Callable[[str], None]) -> None:
    """Write ``target`` through a temporary file: ``write(fd)`` fills it (and fsyncs it), ``verify(tmp)``
    checks what was written (raising leaves the previous file intact), then it is renamed over the
    target, and the rename made durable."""
    target = os.path.realpath(target)  # through a symlink, so the link survives and points at the new file
    folder, base = os.path.split(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"can't save to {target!r}: folder {folder!r} does not exist")
    _remove_stale(folder, base)  # first: a killed save's temporary file may be what filled the disk
    tmp, fd = _new_temp(folder, base)
    old = None
    try:
        write(fd)
        if os.name != "posix":  # Windows can't rename an open file (and has no lock to keep)
            os.close(fd)
            fd = -1
        verify(tmp)
        old = _hold(target)
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.close(old)
        if fd >= 0:
            os.close(fd)
            fd = -1
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    finally:
        # until here the descriptor, and with it the lock that tells other saves this file is live,
        # was held: the file has its final name now, or is gone
        if fd >= 0:
            os.close(fd)
        _forget(tmp)
    try:
        _fsync_dir(folder)
    finally:
        if old is not None:
            _close_later(old)


# Temporary files. A save writes ``.<name>.<8 hex digits>.tmp`` next to the target and renames it over
# the target at the end; a process killed mid-save (kill -9, the OOM killer, a power cut) leaves it
# behind, and nothing else would remove it, so each save removes those of its own target first. A
# live save in another thread or process must keep its file, and names, pids and ages can't tell: a
# pid may be reused, or belong to another container's namespace (every container's first process is
# pid 1), and a live save may go minutes without touching its file (an fsync, the read-back). So
# liveness is a lock: a save holds an exclusive flock on its temporary file until it is renamed; the
# kernel drops the lock when its holder dies, however it dies; whoever then gets the lock may remove
# the file. Saves in this process are also listed in _LIVE (where flock is emulated with POSIX locks,
# on NFS, a process doesn't conflict with itself). Where there are no locks (Windows) nothing is removed.
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()


def _new_temp(folder: str, base: str) -> tuple[str, int]:
    """Create, lock and register a fresh temporary file for the target ``folder/base``."""
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
        with _LIVE_LOCK:
            _LIVE.add(tmp)  # before it exists: a save in another thread never takes it for stale
        try:
            # O_EXCL with mode 0o666: a fresh name, and the usual umask-based permissions (not 0600)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            _forget(tmp)
            continue
        except BaseException:
            _forget(tmp)
            raise
        # another process may have taken the new file for stale between its creation and our lock; then
        # the name is gone (or another file's), and we start again with a new one
        if not _lock(fd, wait=True) or _same_file(tmp, fd):
            return tmp, fd
        os.close(fd)
        _forget(tmp)


def _forget(tmp: str) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(tmp)


def _remove_stale(folder: str, base: str) -> None:
    """Remove the temporary files of the target ``folder/base`` whose saves are dead (see above).
    Best effort: whatever can't be checked or removed is left as it is."""
    if _fcntl is None:
        return
    pattern = re.compile(rf"\.{re.escape(base)}\.[0-9a-f]{{8}}\.tmp")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        path = os.path.join(folder, n)
        if not pattern.fullmatch(n):
            continue
        with _LIVE_LOCK:
            if path in _LIVE:  # a save of this process, in another thread
                continue
        try:  # O_RDWR: NFS locks a file exclusively only when it is open for writing; O_NOFOLLOW: no links
            fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode) and _lock(fd, wait=False) and _same_file(path, fd):
                os.remove(path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _lock(fd: int, wait: bool) -> bool:
    """Take an exclusive flock on ``fd``; False if another holds it (``wait=False``) or there are no locks."""
    if _fcntl is None:
        return False
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | (0 if wait else _fcntl.LOCK_NB))
    except OSError:  # held elsewhere, or no locks on this file system (ENOLCK, EOPNOTSUPP)
        return False
    return True


def _same_file(path: str, fd: int) -> bool:
    try:
        return os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
    except OSError:
        return False


def _close_later(fd: int) -> None:
    """Close the replaced file in the background. Its last close frees its blocks, which can take a
    third of the time its writing took (discards, on SSDs); the new file and its name are on disk
    already, so nothing waits for it."""
    try:
        threading.Thread(target=os.close, args=(fd,), name=_FREE_THREAD, daemon=True).start()
    except RuntimeError:  # no thread to be had (at interpreter shutdown): close it here
        os.close(fd)


def _hold(target: str) -> int | None:
    """An open descriptor on the file about to be replaced, so that the rename only drops a name and
    freeing its blocks waits for our ``os.close``; None where there is none (or on Windows, where an
    open file can't be replaced)."""
    if os.name != "posix":
        return None
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _fsync_dir(folder: str) -> None:
    # makes the rename itself durable; not possible on every OS (Windows), where it is skipped
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
