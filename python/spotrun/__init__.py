"""spotrun: the job's side of `spotrun run` in Python (no dependencies).

The contract by hand (see docs/python.md):

    import spotrun
    step = 0
    if spotrun.resumed():
        step = load_state(spotrun.path("state.pt"))    # model, optimizer, RNGs, step
    while step < steps:
        train_step(); step += 1
        if spotrun.checkpoint_due() or step % 1000 == 0:
            with spotrun.saving("state.pt") as p: save_state(p, step)
            spotrun.commit(step)

With PyTorch, spotrun.torch does all of that (and the position inside the
epoch) in five lines of glue: st.loader(...), st.State(...),
state.epochs(n), state.step_done(). Importing spotrun never imports torch;
importing spotrun.torch does.

The module talks to the wrapper directly: it polls the job page
($SPOTRUN_JOB_PAGE, a shared 4 KiB page; a poll costs well under a
microsecond) and commits over the control socket ($SPOTRUN_CONTROL); it
never starts a process.

Outside spotrun (no SPOTRUN_CONTROL) the same script runs unchanged:
active() is False, checkpoint_due() is False, commit() and metric() do
nothing and return None, saving() writes into $SPOTRUN_CKPT_DIR when it is
set (a resume tried by hand) and otherwise into a scratch directory that
is thrown away.
"""
import contextlib
import json
import math
import operator
import os
import re
import secrets
import shutil
import tempfile
import time
import warnings
from typing import Any, Dict, Iterator, Optional, Union

from . import _control, _stall  # noqa: F401 (_stall: tracebacks for --stall-timeout)
from ._errors import CommitError, Error, NotUnderSpotrun, WrapperGone
from ._request import checkpoint_due, heartbeat, listen

__version__ = "0.1.0"
__all__ = [
    "active", "run_id", "ckpt_dir", "resumed", "restored_step", "attempt", "params", "path",
    "checkpoint_due", "heartbeat", "listen", "saving", "save", "commit", "wait_durable",
    "metric", "status",
    "Error", "NotUnderSpotrun", "WrapperGone", "CommitError",
]

_METRIC_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


# ---- the environment the wrapper gives the job -------------------------------

def active() -> bool:
    """True when running under a spotrun wrapper (SPOTRUN_CONTROL is set)."""
    return bool(os.environ.get("SPOTRUN_CONTROL"))


def run_id() -> Optional[str]:
    """The run's id, stable across restarts and nodes; None outside spotrun."""
    return os.environ.get("SPOTRUN_RUN_ID") or None


def ckpt_dir() -> Optional[str]:
    """The checkpoint directory ($SPOTRUN_CKPT_DIR); None when unset."""
    return os.environ.get("SPOTRUN_CKPT_DIR") or None


def resumed() -> bool:
    """True when the wrapper restored a checkpoint into ckpt_dir()."""
    return os.environ.get("SPOTRUN_RESUMED") == "1"


def restored_step() -> Optional[int]:
    """The step recorded with the restored checkpoint; None when fresh or unknown."""
    v = os.environ.get("SPOTRUN_STEP")
    try:
        return int(v) if v else None
    except ValueError:
        return None


def _typed(v: str) -> Union[int, float, str]:
    try:
        return int(v)
    except ValueError:
        pass
    try:
        f = float(v)
        return f if math.isfinite(f) else v
    except ValueError:
        return v


def params() -> Dict[str, Union[int, float, str]]:
    """A sweep trial's current parameters, typed (an int, a float, else the
    string): {} outside a sweep. Read at every start: under population-based
    training they change when the trial takes another trial's checkpoint.
    From $SPOTRUN_PARAMS (every name as written), else SPOTRUN_PARAM_<NAME>
    (names lowercased)."""
    raw = os.environ.get("SPOTRUN_PARAMS")
    if raw:
        try:
            d = json.loads(raw)
            if isinstance(d, dict):
                return {str(k): _typed(str(v)) for k, v in d.items()}
        except ValueError:
            pass
    return {k[len("SPOTRUN_PARAM_"):].lower(): _typed(v) for k, v in os.environ.items()
            if k.startswith("SPOTRUN_PARAM_") and len(k) > len("SPOTRUN_PARAM_")}


def attempt() -> int:
    """0 on the run's first start, +1 on every restart or resume."""
    try:
        return int(os.environ.get("SPOTRUN_ATTEMPT") or 0)
    except ValueError:
        return 0


def _relative(name: str) -> str:
    parts = name.replace(os.sep, "/").split("/")
    if not name or os.path.isabs(name) or ".." in parts:
        raise ValueError("%r: a name inside the checkpoint directory (relative, no '..')" % name)
    return name


def path(name: str) -> str:
    """ckpt_dir()/name. Raises NotUnderSpotrun when there is no checkpoint dir."""
    d = ckpt_dir()
    if d is None:
        raise NotUnderSpotrun("no SPOTRUN_CKPT_DIR: not running under `spotrun run`")
    return os.path.join(d, _relative(name))


# ---- saving --------------------------------------------------------------------

_scratch: Optional[str] = None


def _scratch_dir() -> str:
    """Where saving() writes outside spotrun: a private directory removed at exit."""
    global _scratch
    if _scratch is None:
        import atexit
        _scratch = tempfile.mkdtemp(prefix="spotrun-scratch-")
        atexit.register(shutil.rmtree, _scratch, True)
        warnings.warn("spotrun: no SPOTRUN_CKPT_DIR (not under `spotrun run`): checkpoints are "
                      "written to %s and discarded at exit" % _scratch, RuntimeWarning,
                      stacklevel=4)
    return _scratch


def _remove(p: str) -> None:
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


@contextlib.contextmanager
def saving(name: str) -> Iterator[str]:
    """Atomic save of ckpt_dir()/name: yields a temporary path in the same
    directory for the caller to write (a file, or a directory such as a
    save_pretrained() output); on success it is renamed over name, on an
    exception it is removed and name is left as it was.

        with spotrun.saving("state.pt") as p:
            torch.save(state, p)

    No fsync: the wrapper snapshots the directory at commit, and the rename
    is what keeps a crash from leaving half a file. A directory replaces an
    existing one in two renames (the old one is moved aside, then removed).
    """
    d = ckpt_dir() or _scratch_dir()
    target = os.path.join(d, _relative(name))
    parent, base = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, ".%s.tmp-%d-%s" % (base, os.getpid(), secrets.token_hex(4)))
    try:
        yield tmp
        if not os.path.lexists(tmp):
            raise Error("nothing was written to %s (saving %r)" % (tmp, name))
        if os.path.isdir(tmp) and os.path.isdir(target) and not os.path.islink(target):
            old = tmp + ".old"
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def save(name: str, data: Union[bytes, str]) -> str:
    """Writes data (bytes, or str as UTF-8) to ckpt_dir()/name atomically;
    returns the final path."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with saving(name) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return os.path.join(ckpt_dir() or _scratch_dir(), name)


# ---- talking to the wrapper ------------------------------------------------------

def _step_arg(step: Optional[int]) -> str:
    if step is None:
        return "-"
    if isinstance(step, bool):
        raise TypeError("step must be an int, not bool")
    s = operator.index(step)  # int, numpy or one-element integer tensor; never a float
    if s < 0:
        raise ValueError("step must not be negative (got %d)" % s)
    return str(s)


def commit(step: Optional[int] = None, timeout: Optional[float] = None,
           pause_ms: Optional[int] = None) -> Optional[int]:
    """Tells the wrapper that ckpt_dir() holds a complete checkpoint of step.

    Returns the checkpoint's sequence number once the wrapper has taken a
    snapshot of the directory (hard links of the files saving() replaced,
    copies of files written in place: O(files), not the packing): the job
    may overwrite the directory right after. Packing, compressing and the
    upload go on in the background; the checkpoint is durable later
    (wait_durable(seq) waits for that), or fails then, leaving the previous
    checkpoint as the newest. Waits without a timeout unless given one.
    This commit answers every checkpoint request made before it.

    pause_ms: how long training stopped for this checkpoint, when the job
    saves in the background (spotrun.torch.State does): `--every auto`
    then weighs that pause, not the commit's wait (docs/interval.md).

    Outside spotrun (no SPOTRUN_CONTROL) it does nothing and returns None.
    Raises CommitError when the wrapper answers ERR, WrapperGone when the
    wrapper is gone or closes the connection before answering.
    """
    arg = _step_arg(step)
    if pause_ms is not None:
        arg += " pause_ms=%d" % max(0, int(pause_ms))
    sock = os.environ.get("SPOTRUN_CONTROL")
    if not sock:
        return None
    from ._request import note_commit
    note_commit()
    heartbeat()
    ok, rest = _control.split_reply(sock, "COMMIT", _control.call(sock, "COMMIT " + arg, timeout))
    if not ok:
        raise CommitError("spotrun commit failed: " + rest)
    global _last_seq
    try:
        _last_seq = int(rest)
        return _last_seq
    except ValueError:
        raise Error("unexpected answer to COMMIT from the spotrun wrapper at %s: %r"
                    % (sock, "OK " + rest)) from None


_last_seq: Optional[int] = None


def wait_durable(seq: Optional[int] = None, timeout: Optional[float] = None) -> bool:
    """Waits until checkpoint seq (default: this process's newest commit)
    is durable in the store: True once it is (or a newer one is: a
    checkpoint skipped at a notice for a newer one counts as superseded),
    False when timeout (seconds) passed first. Polls STATUS.

    Raises CommitError when that checkpoint failed after its commit
    returned (packing or storing it; the wrapper's log says why), and
    WrapperGone when the wrapper goes away. Outside spotrun returns None.
    """
    sock = os.environ.get("SPOTRUN_CONTROL")
    if not sock:
        return None
    if seq is None:
        seq = _last_seq
    if seq is None:
        raise ValueError("wait_durable(): no commit made yet and no seq given")
    seq = operator.index(seq)
    deadline = None if timeout is None else time.monotonic() + timeout
    nap = 0.02
    while True:
        st = status(timeout=30.0)
        if seq in st.get("failed", []):
            raise CommitError("checkpoint %d failed after its commit returned (the wrapper's "
                              "log says why); the previous checkpoint stands" % seq)
        if st.get("durable_seq", 0) >= seq:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        left = nap if deadline is None else min(nap, max(0.0, deadline - time.monotonic()))
        time.sleep(left)
        nap = min(nap * 2, 0.25)


def metric(name: str, value: Any, step: Optional[int] = None,
           timeout: Optional[float] = 30.0) -> None:
    """Records a number in the run's event log (`spotrun show`, metric events).

    name: [A-Za-z0-9_.:-]{1,64}; value: anything float() takes that is
    finite (a Python number, a one-element tensor, a numpy scalar).
    Raises ValueError for a bad name or value, even outside spotrun, where
    it otherwise does nothing.
    """
    if not isinstance(name, str) or not _METRIC_NAME.fullmatch(name):
        raise ValueError("metric name %r: 1 to 64 of A-Z a-z 0-9 _ . : -" % (name,))
    v = float(value)
    if not math.isfinite(v):
        raise ValueError("metric %s: value %r is not a finite number" % (name, value))
    arg = _step_arg(step)
    sock = os.environ.get("SPOTRUN_CONTROL")
    if not sock:
        return None
    heartbeat()
    ok, rest = _control.split_reply(sock, "METRIC",
                                    _control.call(sock, "METRIC %s %s %r" % (arg, name, v),
                                                  timeout))
    if not ok:
        raise Error("spotrun metric %s failed: %s" % (name, rest))
    return None


def status(timeout: Optional[float] = 30.0) -> Optional[Dict[str, Any]]:
    """The wrapper's view of the run (run_id, state, attempt, pid,
    durable_seq, pending, failed: seqs of recent commits that failed after
    they returned); None outside spotrun."""
    sock = os.environ.get("SPOTRUN_CONTROL")
    if not sock:
        return None
    ok, rest = _control.split_reply(sock, "STATUS", _control.call(sock, "STATUS", timeout))
    if not ok:
        raise Error("spotrun status failed: " + rest)
    try:
        return json.loads(rest)
    except ValueError:
        raise Error("unexpected answer to STATUS from the spotrun wrapper at %s" % sock) from None
