"""Tracebacks for the stall watchdog (`spotrun run --stall-timeout`).

When stall detection is on, the wrapper gives the job SPOTRUN_STALL_SIGNAL
(a signal number) and SPOTRUN_STALL_DIR (a directory of this attempt). At
import, this module asks faulthandler to dump every thread's traceback on
that signal into <dir>/<pid>.tb, and only then gives the file its name: the
wrapper signals only processes whose file exists (a process that did not
register would be killed by the signal's default action). faulthandler
writes from its C signal handler, so a process spinning in Python or
blocked in a call still answers.

A process forked from a registered one inherits the handler but has no file
of its own: it is never signalled. Nothing happens outside spotrun or when
the variables are absent or malformed.
"""
import os

_file = None  # kept open for the life of the process: faulthandler writes to its fd


def _register() -> None:
    global _file
    sig = os.environ.get("SPOTRUN_STALL_SIGNAL")
    where = os.environ.get("SPOTRUN_STALL_DIR")
    if _file is not None or not sig or not where or not os.path.isdir(where):
        return
    try:
        signo = int(sig)
    except ValueError:
        return
    import faulthandler
    pid = os.getpid()
    final = os.path.join(where, "%d.tb" % pid)
    tmp = final + ".tmp"
    try:
        f = open(tmp, "w")
        try:
            faulthandler.register(signo, file=f, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError):
            f.close()
            os.unlink(tmp)
            return
        os.replace(tmp, final)
    except OSError:
        return
    _file = f


_register()
