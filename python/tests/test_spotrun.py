"""Unit tests of the spotrun module against a fake wrapper (a unix socket
server in a thread) and a hand-made job page. No spotrun binary needed:

    /usr/bin/python3 -m unittest discover -s python/tests -t python

(tests/e2e/t0700-python-module.sh runs them, and the module under a real
wrapper.)
"""
import contextlib
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import timeit
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import spotrun  # noqa: E402
from spotrun import _request  # noqa: E402
import spotrun.distributed  # noqa: E402

ENV = ("SPOTRUN_RUN_ID", "SPOTRUN_CKPT_DIR", "SPOTRUN_RESUMED", "SPOTRUN_STEP",
       "SPOTRUN_ATTEMPT", "SPOTRUN_CONTROL", "SPOTRUN_SIGNAL", "SPOTRUN_BIN", "SPOTRUN_JOB_PAGE")


class FakeWrapper:
    """Answers each connection's request line with answer(line) (bytes; None
    closes without a reply). Records the lines it got."""

    def __init__(self, path, answer):
        self.path, self.answer, self.lines = path, answer, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while b"\n" not in buf:
                    chunk = conn.recv(256)
                    if not chunk:
                        break
                    buf += chunk
                line = buf.decode().rstrip("\n")
                self.lines.append(line)
                reply = self.answer(line)
                if reply is not None:
                    with contextlib.suppress(OSError):  # the client may have given up
                        conn.sendall(reply)

    def close(self):
        self.sock.close()


def make_page(path, requested=0, served=0, magic=_request.MAGIC, version=1, size=4096,
              signo=10, length=4096):
    data = struct.pack("=QIIQQQQ", magic, version, size, requested, served, 0, signo)
    with open(path, "wb") as f:
        f.write(data.ljust(length, b"\0")[:length])


def page_word(path, index):
    with open(path, "rb") as f:
        return struct.unpack_from("=Q", f.read(), index * 8)[0]


def set_page_word(path, index, value):
    with open(path, "r+b") as f:
        f.seek(index * 8)
        f.write(struct.pack("=Q", value))


class Base(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.pop(k) for k in ENV if k in os.environ}
        self.tmp = tempfile.mkdtemp(prefix="spotrun-test-")
        _request._reset()
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()
        _request._reset()
        for k in ENV:
            os.environ.pop(k, None)
        os.environ.update(self.saved)
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wrapper(self, answer):
        path = os.path.join(self.tmp, "control.sock")
        s = FakeWrapper(path, answer)
        self.servers.append(s)
        os.environ["SPOTRUN_CONTROL"] = path
        return s

    def ckpt(self):
        d = os.path.join(self.tmp, "ckpt")
        os.makedirs(d, exist_ok=True)
        os.environ["SPOTRUN_CKPT_DIR"] = d
        return d


class TestEnvironment(Base):
    def test_outside_spotrun_everything_is_a_harmless_no_op(self):
        self.assertFalse(spotrun.active())
        self.assertIsNone(spotrun.run_id())
        self.assertIsNone(spotrun.ckpt_dir())
        self.assertFalse(spotrun.resumed())
        self.assertIsNone(spotrun.restored_step())
        self.assertEqual(spotrun.attempt(), 0)
        self.assertFalse(spotrun.checkpoint_due())
        self.assertIsNone(spotrun.commit(12))
        self.assertIsNone(spotrun.metric("loss", 0.5, step=1))
        self.assertIsNone(spotrun.status())
        self.assertIsNone(spotrun.listen())
        self.assertFalse(spotrun.distributed.checkpoint_due())
        self.assertIsNone(spotrun.distributed.commit(3))
        with self.assertRaises(spotrun.NotUnderSpotrun):
            spotrun.path("state.pt")

    def test_outside_spotrun_saving_writes_a_scratch_file_and_warns(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with spotrun.saving("state.pt") as p:
                with open(p, "w") as f:
                    f.write("x")
        self.assertTrue(os.path.exists(os.path.join(spotrun._scratch, "state.pt")))
        self.assertTrue(any("discarded" in str(x.message) for x in w) or spotrun._scratch)

    def test_the_wrappers_variables(self):
        os.environ.update(SPOTRUN_RUN_ID="r1", SPOTRUN_CKPT_DIR="/c", SPOTRUN_RESUMED="1",
                          SPOTRUN_STEP="1234", SPOTRUN_ATTEMPT="3", SPOTRUN_CONTROL="/s")
        self.assertTrue(spotrun.active())
        self.assertEqual(spotrun.run_id(), "r1")
        self.assertEqual(spotrun.ckpt_dir(), "/c")
        self.assertTrue(spotrun.resumed())
        self.assertEqual(spotrun.restored_step(), 1234)
        self.assertEqual(spotrun.attempt(), 3)
        self.assertEqual(spotrun.path("a/state.pt"), "/c/a/state.pt")
        os.environ["SPOTRUN_RESUMED"] = "0"
        del os.environ["SPOTRUN_STEP"]
        self.assertFalse(spotrun.resumed())
        self.assertIsNone(spotrun.restored_step())

    def test_params_typed_from_the_environment(self):
        saved = {k: v for k, v in os.environ.items() if k.startswith("SPOTRUN_PARAM")}
        try:
            for k in saved:
                del os.environ[k]
            self.assertEqual(spotrun.params(), {})  # outside a sweep
            os.environ.update(SPOTRUN_PARAM_LR="3e-4", SPOTRUN_PARAM_N="12",
                              SPOTRUN_PARAM_OPT="adam")
            self.assertEqual(spotrun.params(), {"lr": 3e-4, "n": 12, "opt": "adam"})
            # SPOTRUN_PARAMS keeps each name as written, and wins
            os.environ["SPOTRUN_PARAMS"] = '{"learningRate":"0.01","n":"7","opt":"sgd","x":"nan"}'
            p = spotrun.params()
            self.assertEqual({k: v for k, v in p.items() if k != "x"},
                             {"learningRate": 0.01, "n": 7, "opt": "sgd"})
            self.assertEqual(p["x"], "nan")  # not a finite number: the string
            self.assertIsInstance(p["n"], int)
            os.environ["SPOTRUN_PARAMS"] = "not json"  # falls back to SPOTRUN_PARAM_*
            self.assertEqual(spotrun.params()["n"], 12)
        finally:
            for k in [k for k in os.environ if k.startswith("SPOTRUN_PARAM")]:
                del os.environ[k]
            os.environ.update(saved)

    def test_names_must_stay_inside_the_checkpoint_dir(self):
        self.ckpt()
        for bad in ("", "/etc/passwd", "../x", "a/../../x"):
            with self.assertRaises(ValueError, msg=bad):
                spotrun.path(bad)

    def test_signal_names(self):
        f = _request.signal_from_name
        self.assertEqual(f("SIGUSR1"), signal.SIGUSR1)
        self.assertEqual(f("usr2"), signal.SIGUSR2)
        self.assertEqual(f("10"), 10)
        self.assertEqual(f("SIGRTMIN+2"), signal.SIGRTMIN + 2)
        self.assertEqual(f("SIGRTMAX-1"), signal.SIGRTMAX - 1)
        self.assertEqual(f("SIGRTMIN"), signal.SIGRTMIN)
        with self.assertRaises(ValueError):
            f("SIGNOPE")


class TestJobPage(Base):
    def page(self, **kw):
        p = os.path.join(self.tmp, "job.page")
        make_page(p, **kw)
        os.environ["SPOTRUN_JOB_PAGE"] = p
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "none.sock")
        return p

    def test_a_request_is_due_until_served_and_polling_marks_listening(self):
        p = self.page(requested=0, served=0)
        self.assertEqual(page_word(p, 4), 0)
        self.assertFalse(spotrun.checkpoint_due())
        self.assertEqual(page_word(p, 4), 1, "the first poll writes listening")
        set_page_word(p, 2, 1)  # the wrapper asks
        self.assertTrue(spotrun.checkpoint_due())
        self.assertTrue(spotrun.checkpoint_due(), "still due until a commit answers it")
        set_page_word(p, 3, 1)  # the wrapper took a COMMIT
        self.assertFalse(spotrun.checkpoint_due())
        set_page_word(p, 2, 2)
        self.assertTrue(spotrun.checkpoint_due())
        self.assertEqual(_request.page_signo(), 10)

    def test_each_poll_is_a_heartbeat(self):
        p = self.page()
        before = int(time.time() * 1000)
        for _ in range(3):
            spotrun.checkpoint_due()
        self.assertEqual(page_word(p, 6), 3, "progress counts the polls")
        self.assertGreaterEqual(page_word(p, 7), before, "progress_ms is the wall clock")
        self.assertLessEqual(page_word(p, 7), int(time.time() * 1000))
        spotrun.heartbeat()
        self.assertEqual(page_word(p, 6), 4)

    def test_heartbeat_without_a_page_does_nothing(self):
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "none.sock")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            spotrun.heartbeat()
        self.assertEqual(w, [])

    def test_a_forked_child_polls_the_same_page(self):
        p = self.page()
        self.assertFalse(spotrun.checkpoint_due())
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            deadline = time.time() + 5
            while not spotrun.checkpoint_due() and time.time() < deadline:
                time.sleep(0.001)
            os.write(w, b"1" if spotrun.checkpoint_due() else b"0")
            os._exit(0)
        os.close(w)
        set_page_word(p, 2, 7)
        self.assertEqual(os.read(r, 1), b"1")
        os.close(r)
        os.waitpid(pid, 0)

    def test_polling_costs_about_a_microsecond_or_less(self):
        self.page(requested=1)
        spotrun.checkpoint_due()
        n = 200000
        # CPU time, not wall time: on a loaded machine the wall clock counts
        # the time other processes ran (a timing assertion that flaked in CI).
        timer = timeit.Timer(spotrun.checkpoint_due, timer=time.process_time)
        per_call = timer.timeit(number=n) / n
        print("\ncheckpoint_due(): %.3f us of CPU per call" % (per_call * 1e6), file=sys.stderr)
        self.assertLess(per_call, 5e-6)  # ~0.3 us with the heartbeat: no system call per poll

    def test_a_bad_page_is_refused_with_a_warning(self):
        for kw in (dict(magic=0x1234), dict(version=2), dict(length=100), dict(size=64)):
            _request._reset()
            p = self.page(requested=1, **kw)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                self.assertFalse(spotrun.checkpoint_due(), kw)
            self.assertTrue(any("cannot use the job page" in str(x.message) for x in w), kw)
            self.assertTrue(os.path.getsize(p) < 4096 or page_word(p, 4) == 0, kw)

    def test_a_missing_page_file_is_a_warning_not_an_error(self):
        os.environ["SPOTRUN_JOB_PAGE"] = os.path.join(self.tmp, "gone.page")
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "none.sock")
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            self.assertFalse(spotrun.checkpoint_due())


class TestStallTracebacks(Base):
    """--stall-timeout: a process that imports spotrun registers for the
    wrapper's traceback signal and names its file only once registered."""

    def test_import_registers_and_the_signal_dumps_every_thread(self):
        import signal
        import subprocess
        d = os.path.join(self.tmp, "stall")
        os.makedirs(d)
        signo = signal.SIGRTMIN + 3
        env = dict(os.environ, SPOTRUN_STALL_SIGNAL=str(int(signo)), SPOTRUN_STALL_DIR=d,
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = ("import sys, time, spotrun\n"
                "def waiting_here():\n"
                "    print('ready', flush=True)\n"
                "    time.sleep(30)\n"
                "waiting_here()\n")
        proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
        try:
            self.assertEqual(proc.stdout.readline().strip(), b"ready")
            tb = os.path.join(d, "%d.tb" % proc.pid)
            self.assertTrue(os.path.exists(tb), os.listdir(d))
            self.assertEqual([n for n in os.listdir(d) if n.endswith(".tmp")], [])
            os.kill(proc.pid, signo)
            deadline = time.time() + 10
            while time.time() < deadline and "waiting_here" not in open(tb).read():
                time.sleep(0.01)
            self.assertIn("waiting_here", open(tb).read())
            self.assertIsNone(proc.poll(), "the signal does not end the process")
        finally:
            proc.kill()
            proc.wait()

    def test_nothing_registers_without_the_variables(self):
        from spotrun import _stall
        saved = _stall._file
        try:
            _stall._file = None
            os.environ.pop("SPOTRUN_STALL_SIGNAL", None)
            _stall._register()
            self.assertIsNone(_stall._file)
        finally:
            _stall._file = saved


class TestSignalFallback(Base):
    def test_without_a_page_listen_hears_the_request_signal_and_commit_answers_it(self):
        srv = self.wrapper(lambda line: b"OK 4\n")
        os.environ["SPOTRUN_SIGNAL"] = "SIGUSR2"
        self.assertEqual(spotrun.listen(), signal.SIGUSR2)
        self.assertFalse(spotrun.checkpoint_due())
        os.kill(os.getpid(), signal.SIGUSR2)
        time.sleep(0.05)
        self.assertTrue(spotrun.checkpoint_due())
        self.assertEqual(spotrun.commit(9), 4)
        self.assertFalse(spotrun.checkpoint_due())
        self.assertEqual(srv.lines, ["COMMIT 9"])

    def test_listen_chains_the_handler_it_replaces(self):
        self.wrapper(lambda line: b"OK 1\n")
        os.environ["SPOTRUN_SIGNAL"] = "SIGRTMIN+3"
        got = []
        signal.signal(signal.SIGRTMIN + 3, lambda s, f: got.append(s))
        spotrun.listen()
        os.kill(os.getpid(), signal.SIGRTMIN + 3)
        time.sleep(0.05)
        self.assertTrue(spotrun.checkpoint_due())
        self.assertEqual(got, [signal.SIGRTMIN + 3])

    def test_without_page_or_listen_nothing_is_heard_and_it_says_so_once(self):
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "none.sock")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(spotrun.checkpoint_due())
            self.assertFalse(spotrun.checkpoint_due())
        self.assertEqual(len([x for x in w if "listen" in str(x.message)]), 1)


class TestCommit(Base):
    def test_commit_returns_the_seq_and_sends_the_step(self):
        seqs = iter(range(1, 10))
        srv = self.wrapper(lambda line: b"OK %d\n" % next(seqs))
        self.assertEqual(spotrun.commit(100), 1)
        self.assertEqual(spotrun.commit(), 2)
        self.assertEqual(srv.lines, ["COMMIT 100", "COMMIT -"])

    def test_err_raises_commit_error_with_the_wrappers_message(self):
        self.wrapper(lambda line: b"ERR No space left on device\n")
        with self.assertRaises(spotrun.CommitError) as cm:
            spotrun.commit(1)
        self.assertIn("No space left on device", str(cm.exception))
        self.assertIsInstance(cm.exception, spotrun.Error)

    def test_a_wrapper_that_closes_mid_commit_is_wrapper_gone(self):
        self.wrapper(lambda line: None)
        with self.assertRaises(spotrun.WrapperGone) as cm:
            spotrun.commit(5)
        self.assertIn("closed the connection before answering COMMIT", str(cm.exception))
        self.assertIn("not confirmed", str(cm.exception))

    def test_a_partial_reply_then_close_is_wrapper_gone(self):
        self.wrapper(lambda line: b"OK 1")
        with self.assertRaises(spotrun.WrapperGone):
            spotrun.commit(5)

    def test_no_socket_is_wrapper_gone(self):
        os.environ["SPOTRUN_CONTROL"] = os.path.join(self.tmp, "nobody.sock")
        with self.assertRaises(spotrun.WrapperGone) as cm:
            spotrun.commit(5)
        self.assertIn("no spotrun wrapper answers at", str(cm.exception))

    def test_a_stale_socket_file_is_wrapper_gone(self):
        path = os.path.join(self.tmp, "stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()  # the file stays, nobody listens: ECONNREFUSED
        os.environ["SPOTRUN_CONTROL"] = path
        with self.assertRaises(spotrun.WrapperGone):
            spotrun.commit(5)

    def test_a_garbled_reply_is_an_error(self):
        self.wrapper(lambda line: b"HELLO\n")
        with self.assertRaises(spotrun.Error) as cm:
            spotrun.commit(5)
        self.assertNotIsInstance(cm.exception, spotrun.WrapperGone)
        self.wrapper_path = None

    def test_signals_during_a_long_commit_do_not_break_it(self):
        def slow(line):
            time.sleep(0.5)
            return b"OK 3\n"
        self.wrapper(slow)
        ticks = []
        old = signal.signal(signal.SIGALRM, lambda s, f: ticks.append(s))
        signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)
        try:
            self.assertEqual(spotrun.commit(1), 3)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, old)
        self.assertGreater(len(ticks), 5)

    def test_a_timeout_is_an_error_when_asked_for(self):
        def slow(line):
            time.sleep(1)
            return b"OK 3\n"
        self.wrapper(slow)
        with self.assertRaises(spotrun.Error) as cm:
            spotrun.commit(1, timeout=0.1)
        self.assertIn("within", str(cm.exception))

    def test_bad_steps_are_refused_before_anything_is_sent(self):
        srv = self.wrapper(lambda line: b"OK 1\n")
        for bad, exc in ((-1, ValueError), (1.5, TypeError), (True, TypeError), ("3", TypeError)):
            with self.assertRaises(exc, msg=repr(bad)):
                spotrun.commit(bad)
        self.assertEqual(srv.lines, [])

    def test_status(self):
        self.wrapper(lambda line: b'OK {"run_id":"r","state":"running"}\n')
        self.assertEqual(spotrun.status()["state"], "running")


class TestMetric(Base):
    def test_metric_sends_name_value_and_step(self):
        srv = self.wrapper(lambda line: b"OK\n")
        spotrun.metric("loss", 0.3125, step=7)
        spotrun.metric("lr", 1e-5)
        spotrun.metric("acc.top-1:val", 91)
        self.assertEqual(srv.lines, ["METRIC 7 loss 0.3125", "METRIC - lr 1e-05",
                                     "METRIC - acc.top-1:val 91.0"])

    def test_bad_names_and_values_are_value_errors(self):
        srv = self.wrapper(lambda line: b"OK\n")
        for name, value in (("l oss", 1), ("", 1), ("x" * 65, 1), ("loss", float("nan")),
                            ("loss", float("inf")), ("loss", "abc")):
            with self.assertRaises(ValueError, msg=(name, value)):
                spotrun.metric(name, value)
        self.assertEqual(srv.lines, [])

    def test_err_is_an_error(self):
        self.wrapper(lambda line: b"ERR bad request\n")
        with self.assertRaises(spotrun.Error):
            spotrun.metric("loss", 1.0)


class TestSaving(Base):
    def test_success_replaces_the_file(self):
        d = self.ckpt()
        spotrun.save("state.txt", "old")
        with spotrun.saving("state.txt") as p:
            self.assertEqual(os.path.dirname(p), d)
            self.assertFalse(os.path.exists(p))
            with open(p, "w") as f:
                f.write("new")
            with open(os.path.join(d, "state.txt")) as f:
                self.assertEqual(f.read(), "old", "not replaced before the block ends")
        with open(os.path.join(d, "state.txt")) as f:
            self.assertEqual(f.read(), "new")
        self.assertEqual(os.listdir(d), ["state.txt"])

    def test_an_exception_removes_the_temp_and_keeps_the_old_file(self):
        d = self.ckpt()
        spotrun.save("state.txt", b"old")
        with self.assertRaises(RuntimeError):
            with spotrun.saving("state.txt") as p:
                with open(p, "w") as f:
                    f.write("half")
                raise RuntimeError("disk full")
        self.assertEqual(os.listdir(d), ["state.txt"])
        with open(os.path.join(d, "state.txt")) as f:
            self.assertEqual(f.read(), "old")

    def test_a_directory_replaces_a_directory(self):
        d = self.ckpt()
        for gen in ("a", "b"):
            with spotrun.saving("model") as p:
                os.mkdir(p)
                with open(os.path.join(p, "w.bin"), "w") as f:
                    f.write(gen)
        with open(os.path.join(d, "model", "w.bin")) as f:
            self.assertEqual(f.read(), "b")
        self.assertEqual(os.listdir(d), ["model"])

    def test_nested_names_and_nothing_written(self):
        d = self.ckpt()
        spotrun.save("ranks/0.pt", b"x")
        self.assertTrue(os.path.exists(os.path.join(d, "ranks", "0.pt")))
        with self.assertRaises(spotrun.Error):
            with spotrun.saving("empty.pt"):
                pass


class TestCallbacksWithStubFrameworks(Base):
    """The Lightning and HF callbacks against stand-ins for the frameworks
    (neither is installable here): the calls they make, not the frameworks."""

    def stub(self, name, **attrs):
        import types
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        old = sys.modules.get(name)
        sys.modules[name] = mod
        self.addCleanup(lambda: sys.modules.__setitem__(name, old) if old else sys.modules.pop(name))
        return mod

    def page(self, requested):
        p = os.path.join(self.tmp, "job.page")
        make_page(p, requested=requested)
        os.environ["SPOTRUN_JOB_PAGE"] = p

    def test_lightning_saves_through_the_trainer_and_commits_on_request(self):
        self.stub("lightning")
        self.stub("lightning.pytorch", Callback=object)
        sys.modules.pop("spotrun.lightning", None)
        import spotrun.lightning as sl
        d = self.ckpt()
        srv = self.wrapper(lambda line: b"OK 1\n")
        self.page(requested=1)

        class Trainer:
            global_step, local_rank = 40, 0

            class strategy:
                @staticmethod
                def barrier(name=None):
                    pass

            def save_checkpoint(self, path):
                with open(path, "w") as f:
                    f.write("ckpt")

        cb = sl.SpotrunCallback("last.ckpt")
        cb.on_train_batch_end(Trainer(), None, None, None, 0)
        self.assertEqual(sorted(os.listdir(d)), ["last.ckpt"])
        self.assertEqual(srv.lines, ["COMMIT 40"])
        os.environ["SPOTRUN_RESUMED"] = "1"
        self.assertEqual(cb.resume_path(), os.path.join(d, "last.ckpt"))

    def test_hf_sets_should_save_on_request_and_commits_after_a_save(self):
        self.stub("transformers", TrainerCallback=object)
        sys.modules.pop("spotrun.hf", None)
        import spotrun.hf as sh
        d = self.ckpt()
        srv = self.wrapper(lambda line: b"OK 2\n")
        self.page(requested=0)

        class Obj:
            pass
        args, state, control = Obj(), Obj(), Obj()
        args.output_dir, state.global_step, control.should_save = d, 7, False
        cb = sh.SpotrunCallback()
        cb.on_step_end(args, state, control)
        self.assertFalse(control.should_save)
        set_page_word(os.environ["SPOTRUN_JOB_PAGE"], 2, 1)
        cb.on_step_end(args, state, control)
        self.assertTrue(control.should_save)
        os.mkdir(os.path.join(d, "checkpoint-7"))
        cb.on_save(args, state, control)
        self.assertEqual(srv.lines, ["COMMIT 7"])
        os.environ["SPOTRUN_RESUMED"] = "1"
        self.assertTrue(sh.SpotrunCallback.resume_arg())


if __name__ == "__main__":
    unittest.main()
