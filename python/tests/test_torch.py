"""Unit tests of spotrun.torch (State, loader): the exact resume in-process,
the loader's order, skip and seeding, the errors a user sees, and a commit
to a fake wrapper. Skipped when torch is not importable (Debian's
python3-torch is importable from /usr/bin/python3 only):

    /usr/bin/python3 -m unittest discover -s python/tests -t python

tests/e2e/t0720..t0722 run the user-style scripts under a real wrapper.
"""
import hashlib
import importlib.machinery
import os
import random
import signal
import subprocess
import sys
import types
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import spotrun  # noqa: E402
from test_spotrun import Base, make_page  # noqa: E402

try:
    import torch
    from torch import nn
    from torch.utils.data import Dataset
except ImportError:  # pragma: no cover
    torch = None

if torch is not None:
    import spotrun.torch as st

    class Noisy(Dataset):
        """Fixed inputs plus noise drawn from the global RNG (augmentation);
        records the indices it was asked for (in this process)."""

        def __init__(self, n=100):
            g = torch.Generator().manual_seed(3)
            self.x = torch.randn(n, 8, generator=g)
            self.y = (self.x @ torch.randn(8, 3, generator=g)).argmax(1)
            self.loaded = []

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            self.loaded.append(i)
            return self.x[i] + 0.1 * torch.randn(8), self.y[i]


def digest(model):
    h = hashlib.sha256()
    for k, t in model.state_dict().items():
        h.update(k.encode() + t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


@unittest.skipIf(torch is None, "torch is not importable from %s (Debian: apt-get install "
                 "python3-torch, then use /usr/bin/python3)" % sys.executable)
class TorchBase(Base):
    def setUp(self):
        super().setUp()
        torch.set_num_threads(1)

    def train(self, workers=0, epochs=2, stop_at=None, every=None, batch=16):
        """The user's script: returns (digest, state, the losses)."""
        torch.manual_seed(0)
        random.seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        loader = st.loader(Noisy(), batch_size=batch, shuffle=True, num_workers=workers, seed=5)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
        state = st.State(model=model, optimizer=opt, scheduler=sched, loader=loader, every=every)
        losses = []
        for _ in state.epochs(epochs):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y) + 0.001 * random.random()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                state.step_done()
                losses.append(loss.item())
                if stop_at is not None and state.step == stop_at:
                    state.wait()  # its last save is committed before the "preemption"
                    return None, state, losses  # "preempted" after this step
        return digest(model), state, losses


class TestImport(unittest.TestCase):
    def test_import_spotrun_never_imports_torch_and_spotrun_torch_does(self):
        code = ("import sys; sys.path.insert(0, %r); import spotrun, spotrun.distributed; "
                "assert 'torch' not in sys.modules, 'import spotrun imported torch'; "
                "print('clean')" % os.path.join(HERE, ".."))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "clean", out.stderr)
        if torch is not None:
            code2 = ("import sys; sys.path.insert(0, %r); import spotrun.torch; "
                     "print('torch' in sys.modules)" % os.path.join(HERE, ".."))
            out = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True)
            self.assertEqual(out.stdout.strip(), "True", out.stderr)


class TestLoader(TorchBase):
    def test_order_is_a_function_of_seed_and_epoch(self):
        a = st.ResumableSampler(50, shuffle=True, seed=1)
        b = st.ResumableSampler(50, shuffle=True, seed=1)
        torch.manual_seed(123)  # the global RNG plays no part
        self.assertEqual(a.order(3), b.order(3))
        self.assertNotEqual(a.order(3), a.order(4))
        self.assertEqual(sorted(a.order(3)), list(range(50)))
        self.assertEqual(st.ResumableSampler(5, shuffle=False).order(9), [0, 1, 2, 3, 4])

    def test_ranks_shard_like_distributed_sampler(self):
        shards = []
        for r in range(3):
            s = st.ResumableSampler(10, shuffle=True, seed=2, rank=r, world_size=3)
            s.epoch = 1
            shards.append([i for _, _, i in s])
            self.assertEqual(len(s), 4)
        self.assertEqual(set(sum(shards, [])), set(range(10)))  # padded by wrapping around
        cut = st.ResumableSampler(10, seed=2, rank=2, world_size=3, drop_last=True)
        self.assertEqual(len(cut), 3)
        with self.assertRaises(ValueError):
            st.ResumableSampler(10, rank=3, world_size=3)

    def test_iterating_leaves_the_global_rng_alone(self):
        # DataLoader without generator= draws its workers' base seed from the
        # global RNG on every iter(), even with num_workers=0: dropout after
        # a resume would then differ.
        class Plain(Dataset):
            def __len__(self):
                return 10

            def __getitem__(self, i):
                return i
        ld = st.loader(Plain(), batch_size=3, shuffle=True)
        before = torch.get_rng_state()
        for _ in range(2):
            list(ld)
        self.assertTrue(torch.equal(before, torch.get_rng_state()))

    def test_epochs_advance_and_a_resume_skips_by_index(self):
        ds = Noisy(40)
        ld = st.loader(ds, batch_size=8, shuffle=True, seed=1)
        first = [y.tolist() for _, y in ld]
        second = [y.tolist() for _, y in ld]
        self.assertEqual(ld.epoch, 1)
        self.assertNotEqual(first, second)
        # A resume at epoch 1 after 3 batches: the rest of epoch 1, and the
        # 24 samples done are never loaded.
        ds2 = Noisy(40)
        ld2 = st.loader(ds2, batch_size=8, shuffle=True, seed=1)
        ld2.load_state_dict(dict(ld.state_dict(), epoch=1, batches_done=3))
        rest = [y.tolist() for _, y in ld2]
        self.assertEqual(rest, second[3:])
        self.assertEqual(len(ds2.loaded), 16)
        self.assertEqual(sorted(ds2.loaded), sorted(set(ds2.loaded)))

    def test_a_loop_that_broke_out_goes_on_with_the_rest_of_its_epoch(self):
        ld = st.loader(Noisy(40), batch_size=8, shuffle=True, seed=1)
        whole = [y.tolist() for _, y in ld]
        ld.set_epoch(0)
        ld.batches_done = 0
        got = []
        for _, y in ld:
            got.append(y.tolist())
            if len(got) == 2:
                break
        got += [y.tolist() for _, y in ld]
        self.assertEqual(got, whole)
        self.assertEqual((ld.epoch, ld.batches_done), (0, 5))

    def test_two_workers_resume_mid_epoch_with_the_same_augmentation(self):
        ref = [x for x, _ in st.loader(Noisy(64), batch_size=8, shuffle=True, num_workers=2)]
        ld = st.loader(Noisy(64), batch_size=8, shuffle=True, num_workers=2)
        ld.load_state_dict(dict(ld.state_dict(), epoch=0, batches_done=5))
        rest = [x for x, _ in ld]
        self.assertEqual(len(rest), 3)
        for a, b in zip(ref[5:], rest):
            self.assertTrue(torch.equal(a, b))

    def test_worker_init_seeds_then_calls_yours_then_spotrun_workers(self):
        calls = []
        fake = types.ModuleType("spotrun.workers")
        fake.__spec__ = importlib.machinery.ModuleSpec("spotrun.workers", None)
        fake.worker_init = lambda wid: calls.append(("spotrun", wid))
        init = st._WorkerInit(4, lambda wid: calls.append(("user", wid, torch.randint(1000, (1,)).item())))
        init.epoch = 2
        saved = torch.get_rng_state()
        sys.modules["spotrun.workers"] = fake
        try:
            init(1)
            init(1)
        finally:
            del sys.modules["spotrun.workers"]
            torch.set_rng_state(saved)
        self.assertEqual([c[0] for c in calls], ["user", "spotrun"] * 2)
        self.assertEqual(calls[0], calls[2])  # seeded per (seed, epoch, worker)
        calls.clear()
        init(1)  # without spotrun.workers only yours
        torch.set_rng_state(saved)
        self.assertEqual([c[0] for c in calls], ["user"])

    def test_refused_arguments_say_why(self):
        with self.assertRaisesRegex(TypeError, "brings its own"):
            st.loader(Noisy(), sampler=[1, 2])
        with self.assertRaisesRegex(TypeError, "seeds its own"):
            st.loader(Noisy(), generator=torch.Generator())
        with self.assertRaisesRegex(TypeError, "cannot resume mid-epoch"):
            st.State(loader=torch.utils.data.DataLoader(Noisy()))


class TestState(TorchBase):
    def resume_matches(self, workers, stop_at, every):
        ref, _, ref_losses = self.train(workers=workers)
        self.ckpt()
        _, state, _ = self.train(workers=workers, stop_at=stop_at, every=every)
        saved_step = stop_at - stop_at % every
        os.environ["SPOTRUN_RESUMED"] = "1"
        torch.manual_seed(999)  # the "new process" starts elsewhere
        random.seed(999)
        got, state, losses = self.train(workers=workers, every=every)
        self.assertEqual(state.step, 14)
        self.assertEqual(losses, ref_losses[saved_step:])
        self.assertEqual(got, ref)

    def test_resume_mid_epoch_is_bit_exact_without_workers(self):
        self.resume_matches(workers=0, stop_at=11, every=3)  # saved at 9: epoch 1, batch 2

    def test_resume_mid_epoch_is_bit_exact_with_two_workers(self):
        self.resume_matches(workers=2, stop_at=5, every=4)  # saved at 4: epoch 0, batch 4

    def test_resume_at_an_epoch_boundary(self):
        self.resume_matches(workers=0, stop_at=8, every=7)  # 7 batches an epoch

    def test_step_epoch_and_extra_are_restored(self):
        d = self.ckpt()
        _, state, _ = self.train(stop_at=9, every=9)
        self.assertEqual((state.step, state.epoch), (9, 1))
        self.assertEqual(os.listdir(d), ["spotrun-torch.pt"])
        saved = torch.load(os.path.join(d, "spotrun-torch.pt"))
        self.assertEqual(sorted(saved["objects"]), ["model", "optimizer", "scheduler"])
        self.assertEqual(saved["loader"]["batches_done"], 2)
        self.assertEqual(sorted(saved["rng"]), ["numpy", "random", "torch"])
        os.environ["SPOTRUN_RESUMED"] = "1"
        s = st.State()  # fewer objects than saved: fine
        self.assertTrue(s.resumed)
        self.assertEqual((s.step, s.epoch), (9, 1))

    def test_several_models_and_optimizers(self):
        d = self.ckpt()
        a, b = nn.Linear(2, 2), nn.Linear(2, 3)
        oa = torch.optim.SGD(a.parameters(), lr=0.1)
        ob = torch.optim.Adam(b.parameters())
        s = st.State(model={"g": a, "d": b}, optimizer=[oa, ob],
                     scaler=torch.cuda.amp.GradScaler(enabled=False))
        s.extra["best"] = 0.25
        s.save()
        s.wait()
        saved = torch.load(os.path.join(d, "spotrun-torch.pt"))
        self.assertEqual(sorted(saved["objects"]),
                         ["model.d", "model.g", "optimizer.0", "optimizer.1", "scaler"])
        os.environ["SPOTRUN_RESUMED"] = "1"
        a2 = nn.Linear(2, 2)
        st.State(model={"g": a2, "d": nn.Linear(2, 3)},
                 optimizer=[torch.optim.SGD(a2.parameters(), lr=0.1), torch.optim.Adam(b.parameters())],
                 scaler=torch.cuda.amp.GradScaler(enabled=False))
        self.assertTrue(torch.equal(a.weight, a2.weight))
        self.assertEqual(st.State(model={"g": nn.Linear(2, 2)}).extra, {"best": 0.25})

    def test_outside_spotrun_nothing_is_saved_or_restored(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # not even the scratch-dir warning of saving()
            got, state, _ = self.train(every=2)
        self.assertEqual(state.step, 14)
        self.assertIsNone(state.save())
        self.assertFalse(state.resumed)

    def test_resumed_without_its_file_or_with_another_loader_is_an_error(self):
        self.ckpt()
        os.environ["SPOTRUN_RESUMED"] = "1"
        with self.assertRaisesRegex(spotrun.Error, "no spotrun-torch.pt"):
            st.State(model=nn.Linear(1, 1))
        os.environ.pop("SPOTRUN_RESUMED")
        s = st.State(loader=st.loader(Noisy(), batch_size=4, seed=1))
        s.save()
        s.wait()
        os.environ["SPOTRUN_RESUMED"] = "1"
        with self.assertRaisesRegex(spotrun.Error, "seed=1, this one has 2"):
            st.State(loader=st.loader(Noisy(), batch_size=4, seed=2))
        with self.assertRaisesRegex(spotrun.Error, "has no model"):
            st.State(model=nn.Linear(1, 1))

    def test_a_request_saves_and_commits_the_step(self):
        d = self.ckpt()
        page = os.path.join(self.tmp, "page")
        make_page(page, requested=1, served=0)
        os.environ["SPOTRUN_JOB_PAGE"] = page
        w = self.wrapper(lambda line: b"OK 7\n")
        s = st.State(model=nn.Linear(1, 1), background=False)
        self.assertTrue(s.step_done())
        self.assertEqual(w.lines, ["COMMIT 1"])
        self.assertEqual(s.save(), 7)
        self.assertTrue(os.path.exists(os.path.join(d, "spotrun-torch.pt")))

    def test_a_request_saves_in_the_background_and_commits_the_step_with_its_pause(self):
        d = self.ckpt()
        page = os.path.join(self.tmp, "page")
        make_page(page, requested=1, served=0)  # the fake wrapper never marks it served
        os.environ["SPOTRUN_JOB_PAGE"] = page
        w = self.wrapper(lambda line: b"OK 7\n")
        s = st.State(model=nn.Linear(1, 1))
        self.assertTrue(s.step_done())
        self.assertEqual(s.wait(), 7)
        self.assertEqual(len(w.lines), 1)
        self.assertRegex(w.lines[0], r"^COMMIT 1 pause_ms=[0-9]+$")
        self.assertTrue(os.path.exists(os.path.join(d, "spotrun-torch.pt")))
        self.assertEqual(s.save_stats["seq"], 7)
        self.assertEqual(s.save_stats["pause_s"], s.save_stats["wait_s"] + s.save_stats["copy_s"])
        self.assertGreater(s.save_stats["background_s"], 0)

    def test_a_gone_wrapper_stops_the_saves(self):
        self.ckpt()
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "nobody.sock")
        page = os.path.join(self.tmp, "page")
        make_page(page)
        os.environ["SPOTRUN_JOB_PAGE"] = page
        s = st.State(model=nn.Linear(1, 1), every=1)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            s.step_done()
            s.step_done()
        self.assertEqual(len(got), 1, [str(w.message) for w in got])
        self.assertIn("training goes on without checkpoints", str(got[0].message))
        self.assertIsNone(s.save())

    def test_a_failed_commit_warns_and_training_goes_on(self):
        self.ckpt()
        page = os.path.join(self.tmp, "page")
        make_page(page)  # no request pending: every=1 is what saves
        os.environ["SPOTRUN_JOB_PAGE"] = page
        self.wrapper(lambda line: b"ERR store is full\n")
        for background in (False, True):
            s = st.State(model=nn.Linear(1, 1), every=1, background=background)
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                self.assertTrue(s.step_done())
                s.wait()  # a background save's failure is said once it is known
            self.assertEqual(len(got), 1, [str(w.message) for w in got])
            self.assertIn("commit of step 1 failed (spotrun commit failed: store is full)",
                          str(got[0].message))
            self.assertEqual(s.step, 1)



class TestBackgroundEnd(TorchBase):
    """A background save in flight when the script ends or gets SIGTERM is
    finished first (a script of its own, outside spotrun: the save goes to
    $SPOTRUN_CKPT_DIR set by hand)."""

    SCRIPT = r"""
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import spotrun.torch as st
real = torch.save
def slow(obj, f, *a, **kw):
    time.sleep(1)
    real(obj, f, *a, **kw)
    print("written", flush=True)
torch.save = slow
s = st.State(model=torch.nn.Linear(2, 2))
s.step = 5
s.save()
print("save returned", flush=True)
if sys.argv[2] == "term":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)
    print("SIGTERM did not end the process", flush=True)
"""

    def run_script(self, how):
        d = self.ckpt()
        p = subprocess.run([sys.executable, "-c", self.SCRIPT, os.path.join(HERE, ".."), how],
                           capture_output=True, text=True, timeout=300)
        return d, p

    def saved_step(self, d):
        return torch.load(os.path.join(d, "spotrun-torch.pt"))["step"]

    def test_the_end_of_the_script_finishes_the_save_in_flight(self):
        d, p = self.run_script("exit")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["save", "returned", "written"])
        self.assertEqual(self.saved_step(d), 5)

    def test_sigterm_finishes_the_save_in_flight_then_ends_the_process_as_before(self):
        d, p = self.run_script("term")
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stdout + p.stderr)
        self.assertEqual(p.stdout.split(), ["save", "returned", "written"])
        self.assertEqual(self.saved_step(d), 5)


if __name__ == "__main__":
    unittest.main()


class TestUserLoop(TorchBase):
    """state.batches() over the user's own DataLoader (its sampler kept)
    and over an index range; keep= and carry()."""

    def train_user(self, make_loader, epochs=2, stop_at=None, every=None):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        data = Noisy()
        loader = make_loader(data)
        state = st.State(model=model, optimizer=opt, every=every)
        losses = []
        for _ in state.epochs(epochs):
            for x, y in state.batches(loader):
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                if stop_at is not None and state.step + 1 == stop_at:
                    state.wait()
                    return None, losses, data  # "preempted" after this step
        return digest(model), losses, data

    def user_resume_matches(self, make_loader, stop_at, every):
        ref, ref_losses, _ = self.train_user(make_loader)
        self.ckpt()
        self.train_user(make_loader, stop_at=stop_at, every=every)
        saved = stop_at - stop_at % every
        os.environ["SPOTRUN_RESUMED"] = "1"
        torch.manual_seed(999)
        got, losses, data = self.train_user(make_loader, every=every)
        self.assertEqual(losses, ref_losses[saved:])
        self.assertEqual(got, ref)
        return data

    def test_random_sampler_with_a_generator_resumes_in_its_order(self):
        from torch.utils.data import DataLoader, RandomSampler

        def make(data):
            g = torch.Generator().manual_seed(7)
            return DataLoader(data, batch_size=16, sampler=RandomSampler(data, generator=g))
        data = self.user_resume_matches(make, stop_at=11, every=3)  # saved at 9: epoch 1, batch 2
        self.assertEqual(len(data.loaded), 100 - 2 * 16)  # the batches done were not loaded

    def test_shuffle_from_the_global_rng_resumes_in_its_order(self):
        from torch.utils.data import DataLoader
        self.user_resume_matches(lambda d: DataLoader(d, batch_size=16, shuffle=True),
                                 stop_at=6, every=5)

    def test_distributed_sampler_resumes_in_its_order(self):
        from torch.utils.data import DataLoader, DistributedSampler

        def make(data):
            s = DistributedSampler(data, num_replicas=2, rank=1, seed=4)
            return DataLoader(data, batch_size=8, sampler=s)
        self.user_resume_matches(make, stop_at=10, every=4)

    def test_index_loop_keep_and_carry(self):
        def run(stop_at=None):
            torch.manual_seed(0)
            rnn = nn.GRU(4, 6)
            seq = torch.randn(41, 2, 4, generator=torch.Generator().manual_seed(1))
            global lr_t, best_t
            lr_t, best_t = 0.5, None
            state = st.State(model=rnn, keep=["lr_t", "best_t"], every=3)
            out = []
            for _ in state.epochs(2):
                hidden = state.carry("hidden", lambda: hidden, torch.zeros(1, 2, 6))
                for batch, i in state.batches(enumerate(range(0, 40, 5))):
                    y, hidden = rnn(seq[i:i + 5], hidden.detach())
                    loss = y.pow(2).mean()
                    rnn.zero_grad()
                    loss.backward()
                    for p in rnn.parameters():
                        p.data.add_(p.grad, alpha=-lr_t)
                    out.append((batch, loss.item()))
                    if stop_at is not None and state.step + 1 == stop_at:
                        state.wait()
                        return None, out
                if best_t is None or loss.item() < best_t:
                    best_t = loss.item()
                lr_t /= 2
            return (digest(rnn), lr_t, best_t), out
        ref, ref_out = run()
        self.ckpt()
        run(stop_at=11)  # saved at 9: epoch 1, batch 1, lr halved once
        os.environ["SPOTRUN_RESUMED"] = "1"
        got, out = run()
        self.assertEqual(out, ref_out[9:])
        self.assertEqual(out[0][0], 1)  # the batch index comes from the library's skip
        self.assertEqual(got, ref)
