"""spotrun.torch: an exact resume for a PyTorch script in five lines of glue.

    import spotrun.torch as st
    loader = st.loader(dataset, batch_size=32, shuffle=True, num_workers=2, seed=0)  # was DataLoader(...)
    state = st.State(model=model, optimizer=opt, scheduler=sched, loader=loader)     # restores if resumed
    for epoch in state.epochs(10):              # was range(10): resumes at the saved epoch
        for x, y in loader:                     # resumes mid-epoch, skipping by index
            ...the training step...
            state.step_done()                   # saves and commits when a checkpoint is due

State bundles what an exact resume needs: the state_dicts of the model(s),
optimizer(s), LR scheduler(s) and GradScaler(s); the RNG states of torch
(CPU, and CUDA on every device when CUDA is initialised), numpy (when
importable) and Python's `random`; the step, the epoch and the position
inside the epoch; and `state.extra`, a dict of your own. It is saved with
spotrun.saving() and committed with spotrun.commit(step), by default in
the background: save() copies the state into host memory and a thread
writes and commits it (State(background=False): before save() returns);
under torch.distributed each rank saves its own file (`spotrun-torch.rankR.pt`:
its RNG streams and data position are its own) and the ranks agree through
spotrun.distributed.checkpoint_due() / commit(). Constructing a State under
a resumed run loads it back.

loader() is a DataLoader whose order is a function of (seed, epoch) alone:
the shuffle comes from a generator seeded with (seed, epoch), the
DataLoader's own generator (the workers' base seed, drawn from the global
RNG on every iter() when it is not given) is seeded the same way, each
worker seeds torch / random / numpy from (seed, epoch, worker), and a
sample loaded in a worker sees RNGs seeded from (seed, epoch, its position
in the epoch), so augmentation is the same after a resume. Under
torch.distributed it shards like DistributedSampler. A resume mid-epoch
skips the samples already trained on by index: they are never loaded.

Loops as they are written (docs/python.md, "Loops as they are written"):
state.batches(iterable) resumes one pass over an index range or over the
user's own DataLoader (DistributedSampler, RandomSampler: its draws are
replayed, the batches done skipped by index) and counts the steps itself;
State(keep=...) and state.carry() save values that change every step
(an annealed learning rate, an RNN's hidden state) and hand them back.

Outside spotrun the script runs unchanged: nothing is restored, nothing is
saved (unless $SPOTRUN_CKPT_DIR is set by hand), commits are no-ops.

torch is imported by this module, never by `import spotrun`.
"""
import atexit
import copy
import hashlib
import importlib.util
import itertools
import os
import random
import signal
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
import torch.utils.data as _data

import spotrun
from . import _request
from . import distributed as _sd
from ._errors import CommitError, Error, WrapperGone

__all__ = ["State", "Loader", "loader", "ResumableSampler", "CKPT_NAME"]

CKPT_NAME = "spotrun-torch.pt"  # rankR is inserted under torch.distributed
_FORMAT = 1


def _mix(*parts: int) -> int:
    """A 63-bit seed from integers, stable across processes and Python versions."""
    h = hashlib.blake2b(b":".join(b"%d" % p for p in parts), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1


def _dist() -> Tuple[int, int]:
    """(rank, world size) of the default process group; (0, 1) without one."""
    if _sd._initialized():
        import torch.distributed as dist
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


# ---- the data side ---------------------------------------------------------------

class ResumableSampler(_data.Sampler):
    """Indices of one epoch in an order that depends on (seed, epoch) only,
    this rank's share of them (DistributedSampler's layout: padded by
    wrapping around, or cut with drop_last, then every world-th), minus the
    first `skip` of them. Yields (epoch, position, index) so that a worker
    can seed a sample's randomness from its place in the epoch; Loader
    unwraps it before your dataset sees it."""

    def __init__(self, n: int, shuffle: bool = True, seed: int = 0, rank: int = 0,
                 world_size: int = 1, drop_last: bool = False):
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError("rank %d of world size %d: need 0 <= rank < world_size"
                             % (rank, world_size))
        self.n, self.shuffle, self.seed = n, shuffle, seed
        self.rank, self.world_size, self.drop_last = rank, world_size, drop_last
        self.epoch, self.skip = 0, 0
        if drop_last:
            self.per_rank = n // world_size
        else:
            self.per_rank = -(-n // world_size)

    def order(self, epoch: int) -> List[int]:
        """The whole epoch's order (every rank's), before sharding."""
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(_mix(self.seed, epoch, 0x5EED))
            idx = torch.randperm(self.n, generator=g).tolist()
        else:
            idx = list(range(self.n))
        total = self.per_rank * self.world_size
        if total > len(idx) and idx:
            idx += (idx * (-(-total // len(idx))))[:total - len(idx)]
        return idx[:total]

    def __iter__(self) -> Iterator[Tuple[int, int, int]]:
        idx = self.order(self.epoch)
        for i in range(self.rank + self.skip * self.world_size, len(idx), self.world_size):
            yield (self.epoch, i, idx[i])

    def __len__(self) -> int:
        return max(0, self.per_rank - self.skip)


class _Seeded(_data.Dataset):
    """dataset[index] with, in a worker, torch / random / numpy seeded from
    (seed, epoch, position) first: a sample's augmentation does not depend on
    which worker loads it or where a resume started. In the main process
    (num_workers=0) the global RNGs are left alone: they are in the
    checkpoint already."""

    def __init__(self, dataset, seed: int):
        self.dataset, self.seed = dataset, seed

    def __getitem__(self, key):
        epoch, pos, index = key
        if _data.get_worker_info() is not None:
            s = _mix(self.seed, epoch, pos)
            torch.default_generator.manual_seed(s)
            random.seed(s)
            np = sys.modules.get("numpy")
            if np is not None:
                np.random.seed(s % (1 << 32))
        return self.dataset[index]

    def __len__(self):
        return len(self.dataset)


class _WorkerInit:
    """The loader's worker_init_fn: seeds the worker from (seed, epoch,
    worker id), then calls yours, then spotrun.workers.worker_init when
    that module exists. A class, not a closure, so that it pickles."""

    def __init__(self, seed: int, user_fn):
        self.seed, self.user_fn, self.epoch = seed, user_fn, 0

    def __call__(self, worker_id: int) -> None:
        s = _mix(self.seed, self.epoch, worker_id, 0xC0DE)
        torch.default_generator.manual_seed(s)
        random.seed(s)
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed(s % (1 << 32))
        if self.user_fn is not None:
            self.user_fn(worker_id)
        if importlib.util.find_spec("spotrun.workers") is not None:
            from . import workers  # type: ignore[attr-defined]
            workers.worker_init(worker_id)


class Loader:
    """A DataLoader that knows its epoch and how many batches of it are done.

    Iterating it goes through epoch `epoch` from batch `batches_done` on and
    counts the batches it hands out; once an epoch ran to its end, the next
    iteration starts the next epoch (State.epochs() sets the epoch
    explicitly). state_dict() / load_state_dict() carry (epoch,
    batches_done); State saves them for you."""

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, seed: int = 0,
                 num_workers: int = 0, drop_last: bool = False,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 worker_init_fn=None, generator=None, **kwargs):
        if isinstance(dataset, _data.IterableDataset):
            raise TypeError("spotrun.torch.loader: an IterableDataset has no indices to skip by; "
                            "use a map-style dataset (__getitem__ and __len__)")
        for k in ("sampler", "batch_sampler"):
            if kwargs.get(k) is not None:
                raise TypeError("spotrun.torch.loader: %s= is not supported: the loader brings its "
                                "own (epoch-seeded, resumable) sampler" % k)
        if generator is not None:
            raise TypeError("spotrun.torch.loader: generator= is not supported: the loader seeds "
                            "its own from (seed, epoch)")
        r, w = _dist()
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
        self.dataset, self.batch_size, self.seed = dataset, batch_size, seed
        self.drop_last = drop_last
        self.sampler = ResumableSampler(len(dataset), shuffle=shuffle, seed=seed, rank=rank,
                                        world_size=world_size, drop_last=drop_last)
        self._generator = torch.Generator()
        self._init = _WorkerInit(seed, worker_init_fn)
        self.loader = _data.DataLoader(_Seeded(dataset, seed), batch_size=batch_size,
                                       sampler=self.sampler, num_workers=num_workers,
                                       drop_last=drop_last, generator=self._generator,
                                       worker_init_fn=self._init, **kwargs)
        self.epoch, self.batches_done = 0, 0
        self._finished = False

    def set_epoch(self, epoch: int) -> None:
        """Iterate epoch `epoch` next; from its start unless it is the epoch
        the loader is already in (a resume keeps its position)."""
        if epoch != self.epoch:
            self.epoch, self.batches_done = epoch, 0
        self._finished = False

    def __len__(self) -> int:
        """Batches in a whole epoch of this rank."""
        n = self.sampler.per_rank
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        if self._finished:
            self.epoch, self.batches_done = self.epoch + 1, 0
        self._finished = False
        self.sampler.epoch = self.epoch
        self.sampler.skip = self.batches_done * self.batch_size
        self._generator.manual_seed(_mix(self.seed, self.epoch, 0xBA5E))
        self._init.epoch = self.epoch
        for batch in self.loader:
            self.batches_done += 1
            yield batch
        self._finished = True

    def state_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch, "batches_done": self.batches_done, "seed": self.seed,
                "samples": self.sampler.n, "world_size": self.sampler.world_size,
                "batch_size": self.batch_size}

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        mine = self.state_dict()
        for k in ("seed", "samples", "world_size", "batch_size"):
            if sd.get(k) != mine[k]:
                raise Error("spotrun.torch: the checkpoint's loader had %s=%r, this one has %r: "
                            "the data order would differ, so the resume cannot be exact; "
                            "start a new run (another --run-id) or restore the old setting"
                            % (k, sd.get(k), mine[k]))
        self.epoch, self.batches_done = int(sd["epoch"]), int(sd["batches_done"])
        self._finished = False


def loader(dataset, batch_size: int = 1, shuffle: bool = False, seed: int = 0,
           num_workers: int = 0, **kwargs) -> Loader:
    """A resumable DataLoader: takes DataLoader's arguments (not sampler,
    batch_sampler or generator) plus seed, and rank / world_size (default:
    the process group's)."""
    return Loader(dataset, batch_size=batch_size, shuffle=shuffle, seed=seed,
                  num_workers=num_workers, **kwargs)


# ---- state between steps, and the user's own DataLoader ------------------------------


def _detached(v):
    """v with its tensors detached (a carried hidden state holds a graph)."""
    if isinstance(v, torch.Tensor):
        return v.detach()
    if isinstance(v, (tuple, list)):
        return type(v)(_detached(x) for x in v)
    if isinstance(v, dict):
        return {k: _detached(x) for k, x in v.items()}
    return v


class _Keep:
    """State(keep=...): values read at every save and handed back at a
    resume. A callable returns a dict (restored values: state.kept); a dict
    is saved as it stands and updated in place; a list of names names
    variables of the module that builds the State (read there at every
    save, assigned there at a resume)."""

    def __init__(self, keep, module_globals: Dict[str, Any]):
        if keep is not None and not (callable(keep) or isinstance(keep, (dict, list, tuple))):
            raise TypeError("spotrun.torch.State: keep= takes a callable returning a dict, a dict "
                            "or a list of variable names, not %s" % type(keep).__name__)
        if isinstance(keep, (list, tuple)) and not all(isinstance(k, str) for k in keep):
            raise TypeError("spotrun.torch.State: keep= as a list takes the names of variables")
        self.keep, self.globals = keep, module_globals

    def read(self) -> Dict[str, Any]:
        k = self.keep
        if k is None:
            return {}
        if isinstance(k, dict):
            return _detached(dict(k))
        if isinstance(k, (list, tuple)):
            missing = [n for n in k if n not in self.globals]
            if missing:
                raise Error("spotrun.torch.State: keep= names %s, which the script does not "
                            "define (at module level) at this save" % ", ".join(missing))
            return _detached({n: self.globals[n] for n in k})
        d = k()
        if not isinstance(d, dict):
            raise TypeError("spotrun.torch.State: keep() must return a dict, not %s"
                            % type(d).__name__)
        return _detached(d)

    def write(self, values: Dict[str, Any]) -> None:
        if isinstance(self.keep, dict):
            self.keep.update(values)
        elif isinstance(self.keep, (list, tuple)):
            self.globals.update({n: values[n] for n in self.keep if n in values})


class _SkipIter:
    """The index sampler's iterator, the first `skip` entries dropped when
    first pulled (prime()), so that the random draws happen where the
    DataLoader makes them."""

    def __init__(self, inner, skip: int):
        self.inner, self.skip, self.it = inner, skip, None

    def prime(self) -> None:
        if self.it is None:
            self.it = iter(self.inner)
            for _ in itertools.islice(self.it, self.skip):
                pass

    def __iter__(self):
        return self

    def __next__(self):
        self.prime()
        return next(self.it)


class _Skip:
    def __init__(self, inner, skip: int):
        self.inner, self.skip, self.last = inner, skip, None

    def __iter__(self):
        self.last = _SkipIter(self.inner, self.skip)
        return self.last

    def __len__(self):
        return max(0, len(self.inner) - self.skip)


def _generators(dl) -> List[Any]:
    """The torch.Generators a DataLoader draws from when a pass begins."""
    gens = [dl.generator]
    for s in (dl.sampler, dl.batch_sampler, getattr(dl.batch_sampler, "sampler", None)):
        gens.append(getattr(s, "generator", None))
    out: List[Any] = []
    for g in gens:
        if isinstance(g, torch.Generator) and all(g is not o for o in out):
            out.append(g)
    return out


def _dataloader_pass(state: "State", dl, skip: int):
    """An iterator over one pass of the user's DataLoader: a fresh pass
    notes the RNG states its iter() starts from; a resumed one replays
    them, skips `skip` batches by index, and puts the step's RNG back."""
    gens = _generators(dl)
    if skip == 0 or state._pass_rng is None:
        state._pass_rng = {"torch": torch.get_rng_state(), "gens": [g.get_state() for g in gens]}
        return iter(dl)
    if dl.persistent_workers:
        raise Error("spotrun.torch: a DataLoader with persistent_workers=True cannot resume "
                    "mid-epoch; drop persistent_workers or use spotrun.torch.loader()")
    saved = state._pass_rng
    if len(saved["gens"]) != len(gens):
        raise Error("spotrun.torch: the DataLoader draws from %d generators, the checkpoint's "
                    "drew from %d: build it as the run that saved it did"
                    % (len(gens), len(saved["gens"])))
    torch.set_rng_state(saved["torch"])
    for g, st in zip(gens, saved["gens"]):
        g.set_state(st)
    attr = "batch_sampler" if dl._auto_collation else "sampler"
    inner = getattr(dl, attr)
    wrap = _Skip(inner, skip)
    object.__setattr__(dl, attr, wrap)  # DataLoader refuses a plain setattr once built
    try:
        it = iter(dl)
    finally:
        object.__setattr__(dl, attr, inner)
    if wrap.last is not None:
        wrap.last.prime()
    if state._resume_rng is not None:
        _set_rng_state(state._resume_rng)  # the step's, whatever ran since State() restored it
    return it



# ---- the training state ----------------------------------------------------------

def _named(kind: str, obj) -> Dict[str, Any]:
    """{name: object} from None, one object, a list/tuple or a dict."""
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return {"%s.%s" % (kind, k): v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return {"%s.%d" % (kind, i): v for i, v in enumerate(obj)}
    return {kind: obj}


def _rng_state() -> Dict[str, Any]:
    st = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        st["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np
        st["numpy"] = np.random.get_state()
    except ImportError:
        pass
    return st


def _set_rng_state(st: Dict[str, Any]) -> None:
    torch.set_rng_state(st["torch"])
    random.setstate(st["random"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])
    if "numpy" in st:
        import numpy as np
        np.random.set_state(st["numpy"])


class _Snapshot:
    """Copies of a state dict in host memory, their tensors in buffers kept
    from one save to the next (same place, shape and dtype: copy_ into the
    old buffer, no allocation). With CUDA the buffers are pinned and the
    copies non-blocking, followed by one synchronize. A tensor met twice
    (tied weights) is copied once, and stays shared in the copy."""

    def __init__(self) -> None:
        self.buffers: Dict[Tuple[Any, ...], torch.Tensor] = {}
        self.pin = torch.cuda.is_available()

    def take(self, sd: Dict[str, Any]) -> Dict[str, Any]:
        seen: Dict[int, torch.Tensor] = {}
        used: Dict[Tuple[Any, ...], torch.Tensor] = {}
        cuda = [False]
        out = self._copy(sd, (), seen, used, cuda)
        if cuda[0]:
            torch.cuda.synchronize()
        self.buffers = used  # a buffer whose tensor is gone is dropped
        return out

    def _copy(self, v: Any, path: Tuple[Any, ...], seen: Dict[int, torch.Tensor],
              used: Dict[Tuple[Any, ...], torch.Tensor], cuda: List[bool]) -> Any:
        if isinstance(v, torch.Tensor):
            if id(v) in seen:
                return seen[id(v)]
            t = v.detach()
            if t.layout != torch.strided or t.is_quantized:
                c = t.to("cpu", copy=True)
            else:
                c = self.buffers.get(path)
                if c is None or c.shape != t.shape or c.dtype != t.dtype:
                    c = torch.empty(t.shape, dtype=t.dtype, device="cpu",
                                    pin_memory=self.pin and t.is_cuda)
                c.copy_(t, non_blocking=t.is_cuda and c.is_pinned())
                cuda[0] = cuda[0] or t.is_cuda
                used[path] = c
            seen[id(v)] = c
            return c
        if isinstance(v, dict):
            items = [(k, self._copy(x, path + (k,), seen, used, cuda)) for k, x in v.items()]
            try:
                return type(v)(items)
            except TypeError:
                return dict(items)
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(self._copy(x, path + (i,), seen, used, cuda) for i, x in enumerate(v))
        return copy.deepcopy(v)


_live: "weakref.WeakSet[State]" = weakref.WeakSet()  # States that may have a save in flight


def _finish_all() -> None:
    """Finishes every State's save in flight (at exit, at SIGTERM)."""
    for s in list(_live):
        s._finish()


def _on_term(signum, frame) -> None:
    """SIGTERM while a background save is in flight (installed only then,
    only over SIG_DFL): finish that save, then die of SIGTERM as before."""
    _finish_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _term_guard(on: bool) -> None:
    """Installs _on_term over SIG_DFL (on) or puts SIG_DFL back once no save
    is in flight (off). Main thread only; a handler of the script's own is
    left alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        cur = signal.getsignal(signal.SIGTERM)
        if on and cur is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_term)
        elif not on and cur is _on_term and not any(s._in_flight() for s in list(_live)):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):
        pass


atexit.register(_finish_all)


class State:
    """What an exact resume needs, saved at a checkpoint request (and every
    `every` steps) and restored when the run resumes.

    model, optimizer, scheduler, scaler: one object, a list or a dict of
    them (anything with state_dict() / load_state_dict()). loader: a
    spotrun.torch.Loader, whose epoch and position are saved. every: also
    save every that many steps (a crash then loses at most that many).
    name: the checkpoint file (rank-suffixed under torch.distributed).
    background: a save copies the state into host memory and returns; a
    thread serialises and commits it (False: the save and the commit are
    made before save() returns, as before).

    Constructing it restores everything when spotrun.resumed(); then
    state.resumed is True and state.step / state.epoch are the saved ones.
    Under torch.distributed with background=True it is a collective (it
    creates the gloo group the background commits use).
    """

    def __init__(self, model=None, optimizer=None, scheduler=None, scaler=None,
                 loader: Optional[Loader] = None, every: Optional[int] = None,
                 name: str = CKPT_NAME, keep=None, background: bool = True):
        if loader is not None and not isinstance(loader, Loader):
            raise TypeError("spotrun.torch.State: loader= takes a spotrun.torch.loader(...), not %s "
                            "(a plain DataLoader cannot resume mid-epoch)" % type(loader).__name__)
        if every is not None and (isinstance(every, bool) or int(every) < 1):
            raise ValueError("every must be a positive number of steps (got %r)" % (every,))
        self.objects: Dict[str, Any] = {}
        for kind, obj in (("model", model), ("optimizer", optimizer), ("scheduler", scheduler),
                          ("scaler", scaler)):
            self.objects.update(_named(kind, obj))
        self.loader, self.every = loader, every
        self.step, self.epoch = 0, 0
        self.extra: Dict[str, Any] = {}  # yours: saved and restored with the rest
        self.kept: Dict[str, Any] = {}  # the values keep= restored (empty when fresh)
        self._keep = _Keep(keep, sys._getframe(1).f_globals)
        self._carry: Dict[str, Any] = {}  # name -> getter (carry())
        self._carried: Dict[str, Any] = {}  # name -> restored value, until carry() takes it
        self.position = 0  # steps done in this pass of batches()
        self._pass_rng: Optional[Dict[str, Any]] = None  # RNGs before this pass's iter()
        self._replay = False  # the next batches() resumes a pass mid-way
        self._resume_rng: Optional[Dict[str, Any]] = None
        self.resumed = False
        self.rank, self.world_size = _dist()
        base, ext = os.path.splitext(name)
        self.name = name if self.world_size == 1 else "%s.rank%d%s" % (base, self.rank, ext)
        self._committing = spotrun.ckpt_dir() is not None
        self.background = bool(background)
        # the last save: pause_s (training stopped: wait_s + copy_s), wait_s
        # (for the save before it), copy_s, background_s (serialise and
        # commit, in the thread), seq, step; saves, waits (how many waited)
        self.save_stats: Dict[str, Any] = {"saves": 0, "waits": 0}
        self._snap = _Snapshot()
        self._thread: Optional[threading.Thread] = None
        # (ok|unsaved|failed|gone, seq|error, step) of the save that ended
        self._result: Optional[Tuple[str, Any, int]] = None
        self._gone = False  # a background commit found the wrapper gone (agreed across ranks)
        self._warned_wait = False
        self._group = None  # the background commits' own gloo group
        if self.background and self.world_size > 1:
            import torch.distributed as dist
            self._group = dist.new_group(backend="gloo")
        _live.add(self)
        if spotrun.resumed():
            self.load()

    # -- what is saved
    def state_dict(self) -> Dict[str, Any]:
        return {"format": _FORMAT, "step": self.step, "epoch": self.epoch,
                "world_size": self.world_size, "rank": self.rank,
                "objects": {k: v.state_dict() for k, v in self.objects.items()},
                "loader": self.loader.state_dict() if self.loader is not None else None,
                "rng": _rng_state(), "extra": self.extra, "kept": self._keep.read(),
                "carry": {k: _detached(get()) for k, get in self._carry.items()},
                "position": self.position, "pass_rng": self._pass_rng}

    def load_state_dict(self, sd: Dict[str, Any]) -> None:
        if sd.get("world_size", 1) != self.world_size:
            raise Error("spotrun.torch: the checkpoint was saved by %d ranks, this job has %d: "
                        "resume with the same world size" % (sd.get("world_size", 1),
                                                               self.world_size))
        missing = sorted(set(self.objects) - set(sd["objects"]))
        if missing:
            raise Error("spotrun.torch: the checkpoint has no %s (it holds %s): pass the same "
                        "objects to State as the run that saved it"
                        % (", ".join(missing), ", ".join(sorted(sd["objects"])) or "none"))
        for k, obj in self.objects.items():
            obj.load_state_dict(sd["objects"][k])
        if self.loader is not None and sd.get("loader") is not None:
            self.loader.load_state_dict(sd["loader"])
        self.step, self.epoch = int(sd["step"]), int(sd["epoch"])
        self.extra = sd.get("extra") or {}
        self.kept = sd.get("kept") or {}
        self._keep.write(self.kept)
        self._carried = dict(sd.get("carry") or {})
        self.position, self._pass_rng = int(sd.get("position") or 0), sd.get("pass_rng")
        self._replay = self.position > 0
        self._resume_rng = sd["rng"]
        _set_rng_state(sd["rng"])

    def load(self) -> None:
        """Restores the checkpoint's state (State() does it when resumed)."""
        path = spotrun.path(self.name)
        if not os.path.exists(path):
            raise Error("spotrun.torch: the run resumed, but the checkpoint has no %s (in %s): "
                        "it was not saved by spotrun.torch.State (or by another rank count)"
                        % (self.name, spotrun.ckpt_dir()))
        self.load_state_dict(torch.load(path, map_location="cpu"))
        self.resumed = True

    # -- the loop
    def epochs(self, start: int, stop: Optional[int] = None) -> Iterator[int]:
        """range(start, stop) (or range(n)), from the saved epoch on; sets
        the loader's epoch."""
        if stop is None:
            start, stop = 0, start
        if not self.resumed and self.epoch < start:
            self.epoch = start
        while self.epoch < stop:
            if self.loader is not None:
                self.loader.set_epoch(self.epoch)
            yield self.epoch
            self.epoch += 1
            self.position = 0
        self.wait()  # the loop is over: its last save is committed before the script goes on

    def carry(self, name: str, get, initial: Any = None) -> Any:
        """A value carried from step to step inside a pass (an RNN's hidden
        state): get() is called at every save and its value saved as
        `name`. Returns the restored value on the first call after a resume
        mid-pass, `initial` otherwise.

            hidden = state.carry("hidden", lambda: hidden, model.init_hidden(bsz))
        """
        self._carry[name] = get
        if name in self._carried:
            return self._carried.pop(name)
        return initial

    def batches(self, iterable) -> Iterator[Any]:
        """The items of one pass (an epoch) over iterable, from where the
        saved pass stopped; a step is done each time the loop asks for the
        next item (and when the pass ends): it counts it and saves when a
        checkpoint is due, as step_done() does (do not call both).

        A torch DataLoader (with its own sampler: DistributedSampler,
        RandomSampler with a generator, ...) resumes in the order it would
        have had: its random draws are replayed from the state they had
        when the pass began, and the batches already done are skipped by
        index, never loaded. Any other iterable (range(0, n, bptt),
        enumerate(...)) is advanced past the items already done."""
        skip = self.position if self._replay else 0
        self._replay = False
        if skip == 0:
            self._resume_rng = None
        self.position = skip
        if isinstance(iterable, _data.DataLoader):
            it = _dataloader_pass(self, iterable, skip)
        else:
            it = itertools.islice(iter(iterable), skip, None)
        for item in it:
            yield item
            self.step_done()
        self.position = 0

    def step_done(self) -> bool:
        """Counts a step; saves when a checkpoint is due (a request from
        spotrun, agreed across ranks, or every `every` steps). Returns
        whether it saved. A request pending while a background save is in
        flight is answered by that save's commit (the wrapper marks every
        request made before a commit served), so it starts no other one. A
        collective under torch.distributed: every rank calls it after every
        step."""
        self.step += 1
        self.position += 1
        self._collect()
        due = False
        if self._committing:
            local = _request.checkpoint_due() and not self._in_flight()
            due = _sd._agree(local)
        if self.every and self.step % self.every == 0:
            due = True
        if due:
            self.save()
        return due

    def save(self) -> Optional[int]:
        """Saves now. With background=False: saves and commits, and returns
        the checkpoint's seq. With background=True (the default): copies
        the state into host memory, starts the thread that serialises and
        commits it, and returns None (wait() gives the seq); a save still
        in flight is waited for first. A failed save or commit warns and
        training goes on (the wrapper decides whether to stop the job);
        once the wrapper is gone, nothing more is saved. None outside
        spotrun."""
        if not self._committing:
            return None
        t0 = time.perf_counter()
        waited = self._wait_thread()
        if self._gone:
            self._committing = False
            return None
        if not self.background:
            seq = self._save_now()
            self.save_stats.update(pause_s=time.perf_counter() - t0, wait_s=0.0,
                                   copy_s=None, background_s=None, seq=seq, step=self.step)
            self.save_stats["saves"] += 1
            return seq
        if waited > 0.0005:
            self.save_stats["waits"] += 1
            if not self._warned_wait:
                self._warned_wait = True
                warnings.warn("spotrun.torch: the save of step %d waited %.2fs for the previous "
                              "one, still being written (saves come faster than they are "
                              "written; state.save_stats has the times)" % (self.step, waited),
                              RuntimeWarning, stacklevel=3)
        t1 = time.perf_counter()
        sd = self._snap.take(self.state_dict())
        t2 = time.perf_counter()
        self.save_stats.update(pause_s=t2 - t0, wait_s=t1 - t0, copy_s=t2 - t1,
                               background_s=None, seq=None, step=self.step)
        self.save_stats["saves"] += 1
        self._result = None
        self._thread = threading.Thread(target=self._write, name="spotrun-save",
                                        args=(sd, self.step, int((t2 - t0) * 1000)), daemon=True)
        _term_guard(True)
        self._thread.start()
        return None

    def wait(self) -> Optional[int]:
        """Waits for the save in flight, if any; returns the seq of the
        newest background save (None when it failed or outside spotrun).
        state.epochs() calls it when its loop ends; exit and SIGTERM (when
        the script has no handler of its own) finish a save in flight too.
        Under torch.distributed call it on every rank (the ranks' commits
        meet on a collective), and before destroy_process_group()."""
        self._wait_thread()
        r = self.save_stats.get("seq")
        return r if isinstance(r, int) else None

    # -- the background save
    def _in_flight(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _wait_thread(self) -> float:
        """Joins the save in flight; reports its outcome; the seconds waited."""
        t = self._thread
        if t is None:
            return 0.0
        t0 = time.perf_counter()
        t.join()
        waited = time.perf_counter() - t0
        self._collect()
        return waited

    def _finish(self) -> None:
        if self._thread is not None:
            self._wait_thread()

    def _collect(self) -> None:
        """The outcome of a background save that ended, once: warnings here,
        in the training thread."""
        if self._thread is None or self._thread.is_alive():
            return
        self._thread = None
        _term_guard(False)
        r, self._result = self._result, None
        if r is None:
            return
        kind, what, step = r
        if kind == "ok":
            self.save_stats["seq"] = what
        elif kind == "gone":
            self._gone = True
            warnings.warn("spotrun.torch: %s; training goes on without checkpoints" % what,
                          RuntimeWarning, stacklevel=3)
        elif kind == "unsaved":
            warnings.warn("spotrun.torch: the background save of step %d failed (%s); training "
                          "goes on" % (step, what), RuntimeWarning, stacklevel=3)
        else:
            warnings.warn("spotrun.torch: commit of step %d failed (%s); training goes on"
                          % (step, what), RuntimeWarning, stacklevel=3)

    def _write(self, sd: Dict[str, Any], step: int, pause_ms: int) -> None:
        """The thread: serialise, then one commit (every rank's files in
        place first: ranks agree on the outcome over the State's own group)."""
        t0 = time.perf_counter()
        err: Optional[BaseException] = None
        try:
            with spotrun.saving(self.name) as p, open(p, "wb") as f:
                # to a file object: torch.save to a path holds the GIL for
                # the whole write (training stops); a file's writes free it
                torch.save(sd, f)
        except Exception as e:  # a full disk, an unpicklable extra: warned, training goes on
            err = e
        del sd
        multi = self._group is not None
        if multi:
            import torch.distributed as dist
            flag = _sd._buf("saved", torch.device("cpu"), 1 if err is not None else 0,
                            self._group)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self._group)
            if flag.item() and err is None:
                err = CommitError("the save failed on another rank")
        if err is not None:
            self._result = ("unsaved", err, step)
            self.save_stats["background_s"] = time.perf_counter() - t0
            return
        try:
            seq = _sd.commit(step, group=self._group, pause_ms=pause_ms)
            self._result = ("ok", seq, step)
        except Error as e:
            gone = isinstance(e, WrapperGone)
            if multi:
                # Only the committing rank saw WrapperGone: agree, so that
                # every rank stops saving at the same save.
                import torch.distributed as dist
                flag = _sd._buf("gone", torch.device("cpu"), 1 if gone else 0, self._group)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self._group)
                gone = bool(flag.item())
            self._result = ("gone" if gone else "failed", e, step)
        self.save_stats["background_s"] = time.perf_counter() - t0

    def _save_now(self) -> Optional[int]:
        """background=False: the save and its commit, before returning."""
        with spotrun.saving(self.name) as p:
            torch.save(self.state_dict(), p)
        try:
            return _sd.commit(self.step)
        except Error as e:
            gone = isinstance(e, WrapperGone)
            if self.world_size > 1:
                # Only the committing rank saw WrapperGone (the others got
                # CommitError), and every rank raised here: agree, so that
                # all stop polling (a collective) together.
                import torch.distributed as dist
                flag = _sd._buf("gone", _sd._device(None), 1 if gone else 0)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                gone = bool(flag.item())
            if gone:
                warnings.warn("spotrun.torch: %s; training goes on without checkpoints" % e,
                              RuntimeWarning, stacklevel=3)
                self._committing = False
            else:
                warnings.warn("spotrun.torch: commit of step %d failed (%s); training goes on"
                              % (self.step, e), RuntimeWarning, stacklevel=3)
        return None
