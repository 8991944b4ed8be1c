"""torch.distributed helpers: every rank agrees on when to checkpoint, one
process per wrapper commits.

    import spotrun, spotrun.distributed as sd
    for step in ...:
        train_step()
        if sd.checkpoint_due() or step % 1000 == 0:     # a collective: every rank calls it
            with spotrun.saving("rank%d.pt" % rank) as p: torch.save(my_state(), p)
            sd.commit(step)                              # barrier, one commit, result to all

The request reaches every process of the job, but not at the same instant:
rank 0 may see it at step 100 and rank 1 at step 101. checkpoint_due()
takes the all_reduce(MAX) of each rank's flag, so all ranks save the same
step. commit() waits for every rank's save (a barrier), lets one process
per wrapper commit (LOCAL_RANK 0; under a multi-node run each node has its
own wrapper and commits its own part), and shares the outcome, so no rank
reads a request that this commit already answered.

torch is imported on first use. Both functions are collectives: call them
on every rank of the group, at the same points, or they hang.
"""
import os
from typing import Optional

from . import _request
from . import commit as _commit
from ._errors import CommitError, Error


def _committer() -> bool:
    import torch.distributed as dist
    local = os.environ.get("LOCAL_RANK")
    if local is not None and local.strip().isdigit():
        return int(local) == 0
    return dist.get_rank() == 0


def _device(group):
    import torch
    import torch.distributed as dist
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


# The tensors the collectives reduce, kept for the life of the process: a
# tensor whose last reference a gloo worker thread drops needs the GIL to
# free its Python object, and if the process group is being destroyed at
# that moment (a DDP model freed at exit holds the GIL while it joins the
# workers) the process hangs at exit (torch 1.13). Held here, the worker
# never drops the last reference.
_buffers = {}  # (name, device, group) -> a 1-element int64 tensor


def _buf(name: str, device, value: int, group=None):
    """The buffer `name` for collectives on `group` (each group its own: a
    background save commits on its own group while training goes on)."""
    import torch
    key = (name, str(device), id(group) if group is not None else 0)
    t = _buffers.get(key)
    if t is None:
        t = _buffers[key] = torch.zeros(1, dtype=torch.int64, device=device)
    t.fill_(value)
    return t


def _initialized() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_initialized()


def checkpoint_due(group=None) -> bool:
    """True on every rank when a request is pending on any rank (all_reduce
    MAX of spotrun.checkpoint_due()). Without an initialized process group it
    is spotrun.checkpoint_due()."""
    return _agree(_request.checkpoint_due(), group)


def _agree(local: bool, group=None) -> bool:
    """True on every rank when local is true on any rank (all_reduce MAX);
    local itself without a process group. A collective."""
    if not _initialized():
        return local
    import torch.distributed as dist
    flag = _buf("due", _device(group), 1 if local else 0, group)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
    return bool(flag.item())


def commit(step: int, group=None, timeout: Optional[float] = None,
           pause_ms: Optional[int] = None) -> Optional[int]:
    """After every rank saved its part: a barrier, then the process with
    LOCAL_RANK 0 (rank 0 without LOCAL_RANK) commits step, then every rank
    learns the outcome. Returns the checkpoint's seq on every rank (None
    outside spotrun). A failed commit raises CommitError on every rank
    (WrapperGone and other errors as spotrun.commit raises them on the
    committing process; the others get CommitError)."""
    if not _initialized():
        return _commit(step, timeout=timeout, pause_ms=pause_ms)
    import torch.distributed as dist
    dist.barrier(group=group)  # every rank's files are in place
    seq, err = -1, None
    if _committer():
        try:
            got = _commit(step, timeout=timeout, pause_ms=pause_ms)
            seq = -1 if got is None else got
        except Error as e:
            seq, err = -2, e
    # MIN over the committers' answers (non-committers send a neutral large
    # value): the result on every rank, and a barrier so that no rank polls
    # before the request this commit answered is marked served.
    big = 1 << 62
    out = _buf("commit", _device(group), seq if _committer() else big, group)
    dist.all_reduce(out, op=dist.ReduceOp.MIN, group=group)
    got = int(out.item())
    if err is not None:
        raise err
    if got == -2:
        raise CommitError("spotrun commit of step %d failed on another rank" % step)
    return None if got in (-1, big) else got
