"""The checkpoint request: the job page, with the request signal as fallback.

The wrapper creates one 4 KiB job page per attempt ($SPOTRUN_JOB_PAGE; the
layout is preload/job_page.h) that every process of the job may map
MAP_SHARED. It bumps `requested` for every checkpoint request and sets
`served = requested` when it takes a COMMIT, so a request is pending while
the two differ. A process that polls writes `listening` once, so the
wrapper knows someone will answer (a job nobody listens in is not waited
for at a notice).

The page is mapped once, lazily, on the first poll; a poll then costs two
aligned 8-byte loads from shared memory (well under a microsecond). Every
field is a naturally aligned 64-bit word in the host's byte order (the
wrapper writes the C struct; little-endian on every supported host), so a
load is never torn.

Without a usable page (an older wrapper, an unreadable file) the request can
still be heard by signal, but only if the application asked for it with
listen(): this module never installs a signal handler on its own, because a
Python handler changes how the process reacts to that signal (and the shim
then reports it as listening).

Thread and fork safety: polling is lock-free and may run in any thread; a
forked child inherits the shared mapping, which stays correct (same page).
listen() must run in the main thread (a CPython rule for signal handlers).
"""
import mmap
import os
import signal
import struct
import warnings
from time import time_ns as _time_ns
from typing import Optional

MAGIC = 0x0031424F4A525053  # "SRJOB1\0\0" read as a little-endian u64
VERSION = 1
SIZE = 4096
# Word indexes of the fields (offset / 8).
_REQUESTED, _SERVED, _LISTENING, _SIGNO, _PROGRESS, _PROGRESS_MS = 2, 3, 4, 5, 6, 7

_words = None  # memoryview of the page as u64 words, once mapped
_beat = None  # the same when writable (heartbeats), else None
_tried = False  # the page was looked for (mapped or not)
_signalled = False  # the fallback flag, set by the listen() handler
_listen_signo = None  # the signal listen() handles, None = not listening
_prev_handler = None
_warned = False


def _map_page():
    """Maps $SPOTRUN_JOB_PAGE; returns its words or None (with a warning when
    the file exists but is not a job page). Sets _beat when writable."""
    global _beat
    path = os.environ.get("SPOTRUN_JOB_PAGE")
    if not path:
        return None
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            prot = mmap.PROT_READ | mmap.PROT_WRITE
        except PermissionError:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            prot = mmap.PROT_READ
        try:
            if os.fstat(fd).st_size < SIZE:
                raise ValueError("shorter than %d bytes" % SIZE)
            mm = mmap.mmap(fd, SIZE, flags=mmap.MAP_SHARED, prot=prot)
        finally:
            os.close(fd)
        magic, version, size = struct.unpack_from("=QII", mm, 0)
        if magic != MAGIC or version != VERSION or size < SIZE:
            mm.close()
            raise ValueError("magic %#x, version %d, size %d: not a version-%d job page"
                             % (magic, version, size, VERSION))
    except (OSError, ValueError) as e:
        warnings.warn("spotrun: cannot use the job page %s (%s); checkpoint requests are "
                      "heard only after spotrun.listen()" % (path, e), RuntimeWarning,
                      stacklevel=4)
        return None
    words = memoryview(mm).cast("Q")
    if prot & mmap.PROT_WRITE and not words[_LISTENING]:
        words[_LISTENING] = 1  # someone polls: the wrapper will wait for our commit
    if prot & mmap.PROT_WRITE:
        _beat = words
    return words


def heartbeat() -> None:
    """One heartbeat on the job page (progress, progress_ms), which
    `spotrun run --stall-timeout` watches. checkpoint_due() is one already;
    this is for a loop that does not poll. Without a writable page it does
    nothing. The add is not atomic across processes: a lost increment is
    harmless (the wrapper only asks whether the counter moved)."""
    global _words, _tried
    w = _beat
    if w is None:
        if _tried:
            return
        _tried = True
        _words = _map_page()
        w = _beat
        if w is None:
            return
    w[_PROGRESS_MS] = _time_ns() // 1000000
    w[_PROGRESS] += 1  # wraps after 2**64 calls: never


def _first_poll() -> bool:
    global _words, _tried, _warned
    if not _tried:
        _tried = True
        _words = _map_page()
        if _words is not None:
            return _words[_REQUESTED] != _words[_SERVED]
    if _listen_signo is not None:
        return _signalled
    if not _warned and os.environ.get("SPOTRUN_CONTROL"):
        _warned = True
        warnings.warn("spotrun: no job page (SPOTRUN_JOB_PAGE) and spotrun.listen() was not "
                      "called: checkpoint_due() cannot hear requests", RuntimeWarning,
                      stacklevel=3)
    return False


def checkpoint_due() -> bool:
    """True while a checkpoint request is pending (made and not yet answered
    by a commit). Cheap enough to call every step; never blocks. Each call
    is also one heartbeat (see heartbeat()). The literals are the word
    indexes above (a global lookup each would cost more than the load)."""
    w = _beat
    if w is not None:
        w[7] = _time_ns() // 1000000  # _PROGRESS_MS
        w[6] += 1  # _PROGRESS
        return w[2] != w[3]  # _REQUESTED, _SERVED
    w = _words
    if w is not None:
        return w[_REQUESTED] != w[_SERVED]
    due = _first_poll()
    if _beat is not None:
        heartbeat()
    return due


def page_signo() -> Optional[int]:
    """The request signal's number as the job page records it, if mapped."""
    global _words, _tried
    if not _tried:
        _tried = True
        _words = _map_page()
    return int(_words[_SIGNO]) if _words is not None and _words[_SIGNO] else None


def signal_from_name(name: str) -> int:
    """'SIGUSR1', 'USR1', 'usr1', '10', 'SIGRTMIN+2', 'SIGRTMAX-1' -> number."""
    n = name.strip().upper()
    if n.isdigit():
        return int(n)
    if not n.startswith("SIG"):
        n = "SIG" + n
    for base, sign in (("SIGRTMIN+", 1), ("SIGRTMAX-", -1)):
        if n.startswith(base) and n[len(base):].isdigit():
            off = int(n[len(base):])
            return signal.SIGRTMIN + off if sign > 0 else signal.SIGRTMAX - off
    if n in ("SIGRTMIN", "SIGRTMAX"):
        return int(getattr(signal, n))
    try:
        return int(signal.Signals[n])
    except KeyError:
        raise ValueError("unknown signal name %r" % name) from None


def _on_request(signum, frame):
    global _signalled
    _signalled = True  # acted on between steps, never here
    prev = _prev_handler
    if callable(prev):
        prev(signum, frame)


def listen() -> Optional[int]:
    """Also hear requests by the request signal ($SPOTRUN_SIGNAL), for
    wrappers without a job page. Installs a Python handler that only sets a
    flag (and calls the handler it replaces, if that was a Python one).
    Idempotent; main thread only. Returns the signal number, or None outside
    spotrun."""
    global _listen_signo, _prev_handler
    if _listen_signo is not None:
        return _listen_signo
    name = os.environ.get("SPOTRUN_SIGNAL")
    if not os.environ.get("SPOTRUN_CONTROL"):
        return None
    signo = page_signo() or signal_from_name(name or "SIGUSR1")
    prev = signal.signal(signo, _on_request)
    _prev_handler = prev if prev is not _on_request else None
    _listen_signo = signo
    return signo


def note_commit() -> None:
    """A commit is being sent: it answers the signalled request (a request
    arriving from now on stays pending). The page needs nothing: the wrapper
    sets served as it takes the COMMIT."""
    global _signalled
    _signalled = False


def _reset() -> None:
    """For tests: forget the mapping and the fallback state."""
    global _words, _tried, _signalled, _warned, _listen_signo, _prev_handler, _beat
    _beat = None
    if _listen_signo is not None:
        signal.signal(_listen_signo, _prev_handler if _prev_handler is not None
                      else signal.SIG_DFL)
    _words, _tried, _signalled, _warned, _listen_signo, _prev_handler = (
        None, False, False, False, None, None)
