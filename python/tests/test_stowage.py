"""The Python package over libstowage: traces, plans, check, simulate, import, errors.

Run from the build: STOWAGE_LIB=.libs/libstowage.so PYTHONPATH=python python3 -m unittest
discover -s python/tests (tests/test-python.sh does, under make check). STW_SRCDIR names the
source tree (the fixtures)."""
import json
import os
import subprocess
import tempfile
import unittest

import stowage

SRC = os.environ.get("STW_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(SRC, "tests", "fixtures")
MINI = os.path.join(FIX, "traces", "mini.json")


class TestTraces(unittest.TestCase):
    def test_version(self):
        self.assertEqual(stowage.version(), "stowage 0.1.0")

    def test_load_and_summary(self):
        t = stowage.Trace.load(MINI)
        s = t.summary()
        self.assertEqual(s["params"], 20)  # fc.weight 4x4 and fc.bias 4
        self.assertEqual(s["model"], "mini")

    def test_load_errors_carry_the_message(self):
        with self.assertRaises(stowage.StowageError) as e:
            stowage.Trace.load("/nonexistent/t.json")
        self.assertIn("/nonexistent/t.json: cannot open", str(e.exception))
        bad = os.path.join(FIX, "models", "tiny-gpt.json")
        with self.assertRaises(stowage.StowageError) as e:
            stowage.Trace.load(bad)
        self.assertIn("tiny-gpt.json: $.format: this is a stowage model", str(e.exception))

    def test_save_round_trip(self):
        t = stowage.Trace.load(MINI)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.json")
            t.save(out)
            self.assertEqual(stowage.Trace.load(out).summary()["digest"], t.summary()["digest"])

    def test_import(self):
        p = os.path.join(FIX, "pytorch")
        t = stowage.import_trace(os.path.join(p, "tied-kineto.json"),
                                 et=os.path.join(p, "tied-et.json"))
        self.assertEqual(t.summary()["params"], 60)  # the tied embedding once
        with self.assertRaises(stowage.StowageError) as e:
            stowage.import_trace(os.path.join(p, "tied-et.json"), iteration=9)
        self.assertIn("no ProfilerStep#9: the execution trace holds 3", str(e.exception))

    def test_import_options_are_checked(self):
        """Every option is read as the CLI reads it or refused by name: iteration "2" is
        ProfilerStep#2 (it used to import the last), never silently another."""
        et = os.path.join(FIX, "pytorch", "tied-et.json")
        with self.assertRaisesRegex(stowage.StowageError, "no ProfilerStep#2: the execution trace "
                                    "holds 3"):
            stowage.import_trace(et, iteration="2")
        a = stowage.import_trace(et, iteration="3").summary()["digest"]
        self.assertEqual(a, stowage.import_trace(et, iteration=3).summary()["digest"])
        self.assertEqual(a, stowage.import_trace(et, iteration="last").summary()["digest"])
        for bad, message in ((dict(iteration="two"), "import: iteration: expected a "
                              "ProfilerStep number (0 to 2147483647), \"last\" or \"whole\""),
                             (dict(iteration=-1), "import: iteration: expected"),
                             (dict(depth=0), "import: depth: expected a whole number from 1 to 64"),
                             (dict(depth=2.5), "import: depth: expected a whole number"),
                             (dict(pid="me"), "import: pid: expected a whole number"),
                             (dict(params_from_memory="yes"), "import: params_from_memory: "
                              "expected true or false")):
            with self.assertRaises(stowage.StowageError) as e:
                stowage.import_trace(et, **bad)
            self.assertIn(message, str(e.exception), bad)


def built_trace():
    """A trace built through the library's builder, as stowage.torch.profile builds one."""
    from stowage import _call, _lib
    t = stowage.Trace(_lib.trace_new(b"built", b"test-gpu", 1 << 30))
    shape = (_lib.u64 * 2)(8, 8)
    w = _call(_lib.trace_add_tensor, t._h, b"w", b"fp16", shape, 2)
    ids = (_lib.u32 * 1)(w)
    _call(_lib.trace_add_op, t._h, b"mm", b"fwd", ids, 1, ids, 0, 0, 256, 1000)
    _call(_lib.trace_add_op, t._h, b"mm.bwd", b"bwd", ids, 1, ids, 1, 256, 512, 2000)
    _call(_lib.trace_add_op, t._h, b"adam.w", b"optim", ids, 1, ids, 0, 0, 0, 100)
    _call(_lib.trace_validate, t._h)
    return t


class TestBuild(unittest.TestCase):
    def test_built_trace_plans(self):
        t = built_trace()
        self.assertEqual(t.summary()["params"], 64)
        # one chunk of 1,024 fp16 elements beside the 512 B non-model peak
        self.assertEqual(stowage.check(stowage.plan(t, gpu=4096), t)["peak_gpu_bytes"], 2560)

    def test_builder_refuses_bad_arguments(self):
        from stowage import _call, _lib
        t = stowage.Trace(_lib.trace_new(b"bad", b"cpu", 0))
        shape = (_lib.u64 * 1)(4)
        with self.assertRaises(stowage.StowageError) as e:
            _call(_lib.trace_add_tensor, t._h, b"w", b"int8", shape, 1)
        self.assertIn("tensor w: dtype 'int8' is not fp32, fp16 or bf16", str(e.exception))
        ids = (_lib.u32 * 1)(0)
        with self.assertRaises(stowage.StowageError) as e:
            _call(_lib.trace_add_op, t._h, b"x", b"sideways", ids, 0, ids, 0, 0, 0, 0)
        self.assertIn("op x: stage 'sideways' is not fwd, bwd or optim", str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            _call(_lib.trace_set_autocast, t._h, b"fp8")
        self.assertIn("trace: autocast 'fp8' is not bf16 or fp16", str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            _call(_lib.trace_validate, t._h)
        self.assertIn("a trace needs at least one op", str(e.exception))


def fp32_trace(n_layers=3, width=16):
    """An fp32 MLP of N_LAYERS square layers, its optimizer op per tensor: a model the runtime
    can hold (fp32)."""
    from stowage import _call, _lib
    t = stowage.Trace(_lib.trace_new(b"mlp", b"test-gpu", 1 << 30))
    ids = []
    for i in range(n_layers):
        shape = (_lib.u64 * 2)(width, width)
        ids.append(_call(_lib.trace_add_tensor, t._h, b"l%d.weight" % i, b"fp32", shape, 2))
    for i in ids:
        a = (_lib.u32 * 1)(i)
        _call(_lib.trace_add_op, t._h, b"l%d" % i, b"fwd", a, 1, a, 0, 64, 128, 1000)
    for i in reversed(ids):
        a = (_lib.u32 * 1)(i)
        _call(_lib.trace_add_op, t._h, b"l%d.bwd" % i, b"bwd", a, 1, a, 1, 64, 128, 2000)
    for i in ids:
        a = (_lib.u32 * 1)(i)
        _call(_lib.trace_add_op, t._h, b"adam.l%d.weight" % i, b"optim", a, 1, a, 0, 0, 0, 100)
    _call(_lib.trace_validate, t._h)
    return t


class TestRuntime(unittest.TestCase):
    """The C runtime driven from Python: a plan's replay moves what it predicts, within its
    budget, and training through it gives the values of the same steps without it."""

    def run_steps(self, t, rt, steps):
        ops = t.json()["ops"]
        for step in range(1, steps + 1):
            rt.iteration_begin()
            for op in ops:
                rt.op_begin(op["name"], op["stage"], op["params"], op["grads"])
                if op["stage"] == "bwd":  # a gradient the same at every step: 0.01 everywhere
                    for g in op["grads"]:
                        buf = rt.param(g)
                        for k in range(len(buf)):
                            buf[k] = 0.01
                if op["stage"] == "optim":
                    rt.adam(op["params"][0], step, lr=0.1)
                rt.op_end()
            rt.iteration_end()

    def test_replay_moves_what_the_plan_says(self):
        t = fp32_trace()
        model_bytes = 3 * 16 * 16 * 4
        budget = model_bytes // 2 + 1024  # room for a third of the weights beside activations
        p = stowage.plan(t, gpu=budget, chunk_size=256)
        pred = stowage.check(p, t)
        init = [[0.5] * 256 for _ in range(3)]
        rt = stowage.Runtime(t, budget, plan=p, plan_trace=t, init=init)
        self.run_steps(t, rt, 2)
        st = rt.stats
        self.assertEqual(st["h2d_bytes"], pred["h2d_bytes"])
        self.assertEqual(st["d2h_bytes"], pred["d2h_bytes"])
        self.assertLessEqual(st["peak_device_bytes"], budget)
        self.assertEqual(st["deviations"], 0)
        self.assertGreater(pred["h2d_bytes"], 0)
        # the same two steps with everything resident give the same weights, bit for bit
        whole = stowage.Runtime(t, 1 << 20, init=init)
        self.run_steps(t, whole, 2)
        for i in range(3):
            self.assertEqual(rt.master(i), whole.master(i))
        self.assertNotEqual(rt.master(0)[0], 0.5)

    def test_runtime_errors(self):
        t = fp32_trace()
        with self.assertRaises(stowage.StowageError) as e:
            stowage.Runtime(t, 1 << 20, init=[[0.0] * 256])
        self.assertIn("runtime: 1 initial tensors for a model of 3", str(e.exception))
        rt = stowage.Runtime(t, 1 << 20)
        rt.iteration_begin()
        with self.assertRaises(stowage.StowageError) as e:
            rt.op_begin("l0", "fwd", [7])
        self.assertIn("op l0: tensor 7 is not one of the model's 3", str(e.exception))
        other = stowage.plan(built_trace(), gpu=4096)
        with self.assertRaises(stowage.StowageError) as e:
            stowage.Runtime(t, 1 << 20, plan=other, plan_trace=built_trace())
        self.assertIn("the plan was made for another model: tensor 0 is w (fp16 [8, 8]) in the "
                      "plan's trace and l0.weight (fp32 [16, 16]) here; profile this model and "
                      "plan again", str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            stowage.Runtime(t, 1 << 20, device="tpu")
        self.assertEqual("runtime: device 'tpu' is not host or cuda", str(e.exception))

    def test_cuda_runtime_without_a_gpu(self):
        """On a machine without a GPU the CUDA runtime is refused with the backend's reason."""
        t = fp32_trace()
        try:
            rt = stowage.Runtime(t, 1 << 20, device="cuda")
        except stowage.StowageError as e:
            self.assertRegex(str(e), r"^no CUDA device: cudaGetDeviceCount: |built without CUDA")
            return
        self.assertEqual(rt.device, "cuda")  # a GPU is here: it runs (test_torch trains on it)
        with self.assertRaisesRegex(stowage.StowageError, "param\\(\\) reads host memory"):
            rt.iteration_begin()
            rt.op_begin("l0", "fwd", [0])
            rt.param(0)


class TestArguments(unittest.TestCase):
    """The API checks every argument before the library sees it: a wrong one is a StowageError
    naming it, never a crash of the interpreter or a silently wrapped number."""

    def test_runtime_arguments(self):
        t = fp32_trace()
        rt = stowage.Runtime(t, "16KiB")  # less than twice the model state: nothing stays
        for call, message in ((lambda: rt.param_address(0), "runtime: tensor 0 is not "
                               "resident: no open op holds it"),
                              (lambda: rt.param_address(3), "runtime: param: tensor: expected a "
                               "whole number from 0 to 2, not 3"),
                              (lambda: rt.master(-1), "runtime: master: tensor: expected a whole "
                               "number from 0 to 2, not -1"),
                              (lambda: rt.adam(0, 0), "runtime: adam: step: expected a whole "
                               "number from 1"),
                              (lambda: rt.read_state(0, None, 1, 1), "runtime: read_state: "
                               "expected the address of an array"),
                              (lambda: rt.op_begin("l0", "fwd", [-1]), "runtime: a tensor id: "
                               "expected a whole number from 0 to 4294967295, not -1"),
                              (lambda: stowage.Runtime(t, -5), "runtime: device_bytes: -5 "
                               "bytes is negative"),
                              (lambda: stowage.Runtime(t, 0), "runtime: device_bytes: expected a "
                               "whole number from 1"),
                              (lambda: stowage.Runtime("t", 1 << 20), "runtime: model: expected "
                               "a stowage.Trace, not str")):
            with self.assertRaises(stowage.StowageError) as e:
                call()
            self.assertIn(message, str(e.exception))
        rt.iteration_begin()
        rt.op_begin("l0", "fwd", [0])
        self.assertGreater(rt.param_address(0), 0)
        rt.op_end()
        self.assertEqual(rt.master(2), [0.0] * 256)

    def test_adam_arguments(self):
        import ctypes
        a = [(ctypes.c_float * 4)() for _ in range(4)]
        p, master, m, v = (ctypes.addressof(x) for x in a)
        for args, message in (((None, master, m, v, 4, 1), "adam: param: expected the address"),
                              ((p, master, m, v, -1, 1), "adam: n: expected a whole number from "
                               "1 to 281474976710656, not -1"),
                              ((p, master, m, v, 4, 0), "adam: step: expected a whole number "
                               "from 1"),
                              ((p, 0, m, v, 4, 1), "adam: master: expected the address")):
            with self.assertRaises(stowage.StowageError) as e:
                stowage.adam(*args)
            self.assertIn(message, str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            stowage.adam(p, master, m, v, 4, 1, state="fp16")
        self.assertIn('adam: state: "fp32" or "bf16" (the moments\' dtype)', str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            stowage.adam(p, master, m, v, 4, 1, weights="master")
        self.assertIn('adam: weights: "both" (the new weights into param and master) or "copy" '
                      '(into param alone, master only read)', str(e.exception))
        stowage.adam(p, master, m, v, 4, 1)  # the arrays as given: a real step
        stowage.adam(p, master, m, v, 4, 2, state="bf16")  # m and v read as bf16: 8 bytes each
        self.assertTrue(all(x == x for x in a[0]))  # the weights stay numbers

    def test_adam_weights_in_copy(self):
        """weights="copy" writes the new weights into param alone, bitwise those of "both", for
        fp32 and bf16 moments, with AMSGrad too."""
        import ctypes
        import random
        rng = random.Random(5)
        n = 1000
        for state in ("fp32", "bf16"):
            for amsgrad in (False, True):
                arrays = {}
                for how in ("both", "copy"):
                    rng.seed(5)
                    grad = (ctypes.c_float * n)(*[rng.uniform(-1e-2, 1e-2) for _ in range(n)])
                    master = (ctypes.c_float * n)(*[rng.uniform(-1, 1) for _ in range(n)])
                    m = (ctypes.c_float * (2 * n))()  # room for bf16's or fp32's, AMSGrad's
                    v = (ctypes.c_float * (2 * n))()
                    before = list(master)
                    stowage.adam(ctypes.addressof(grad), ctypes.addressof(master),
                                 ctypes.addressof(m), ctypes.addressof(v), n, 3, state=state,
                                 amsgrad=amsgrad, weights=how)
                    if how == "copy":
                        self.assertEqual(list(master), before)  # only read
                    arrays[how] = (list(grad), list(m), list(v))
                self.assertEqual(arrays["both"], arrays["copy"])
                self.assertNotEqual(arrays["copy"][0][:3], before[:3])

    def test_plan_options_are_checked(self):
        t = stowage.Trace.load(MINI)
        self.assertEqual(stowage.plan(t, gpu=4096, chunk_size="1024").predictions["chunk_size"],
                         1024)
        # the CLI's words, whoever asks (test_parity.py holds the two side by side)
        for bad, message in ((dict(gpus=0), "--gpus: '0' is not valid: expected a whole number "
                              "from 1 to 4096"),
                             (dict(gpus="8x"), "--gpus: '8x' is not valid: expected a whole "
                              "number"),
                             (dict(chunk_size="big"), "--chunk-size: 'big' is not valid: "
                              "expected a whole number"),
                             (dict(chunk_size=1.5), "--chunk-size: '1.5' is not valid"),
                             (dict(hw=3), "unknown hardware profile '3'"),
                             (dict(hw=[1]), "plan: --hw: expected a string or a number"),
                             (dict(oversized="yes"), "plan: --oversized is a flag: expected "
                              "true or false"),
                             (dict(gpu="4TiB"), "--gpu: 4.00 TiB is more than the 80.00 GiB of "
                              "GPU memory that A100-80GB-PCIe4 has"),
                             (dict(cpu=object()), "plan: the options cannot be read")):
            with self.assertRaises(stowage.StowageError) as e:
                stowage.plan(t, **dict(dict(gpu=4096), **bad))
            self.assertIn(message, str(e.exception), bad)
        for call, message in ((lambda: stowage.check("plan.json", t), "check: plan: expected a "
                               "stowage.Plan, not str"),
                              (lambda: stowage.plan(None, gpu=1), "plan: trace: expected a "
                               "stowage.Trace, not NoneType"),
                              (lambda: t.summary(-1), "summary: top: expected a whole number"),
                              (lambda: stowage.Trace.load(None), "expected a file name, not "
                               "NoneType")):
            with self.assertRaises(stowage.StowageError) as e:
                call()
            self.assertIn(message, str(e.exception))


class TestPlans(unittest.TestCase):
    def setUp(self):
        self.t = stowage.Trace.load(MINI)

    def test_plan_matches_the_cli(self):
        p = stowage.plan(self.t, gpu=2240)
        pred = p.predictions
        self.assertEqual((pred["h2d_bytes"], pred["d2h_bytes"], pred["peak_gpu_bytes"]),
                         (2048, 2048, 2240))
        self.assertEqual(pred["policy"], "stowage")
        self.assertEqual(pred["chunk_size"], 1024)
        # the same plan as `stowage plan`, byte for byte
        cli = os.environ.get("STOWAGE")
        if cli:
            with tempfile.TemporaryDirectory() as d:
                a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
                subprocess.run([cli, "plan", MINI, "--gpu", "2240", "-o", a], check=True,
                               capture_output=True)
                p.save(b, self.t)
                with open(a) as fa, open(b) as fb:
                    ja, jb = json.load(fa), json.load(fb)
                # the trace's path is written relative to each plan's folder
                ja["trace"].pop("file")
                jb["trace"].pop("file")
                self.assertEqual(ja, jb)

    def test_plan_keeps_the_process_room(self):
        """A budget of the card's whole memory: the process's own GPU memory (the profile's
        512 MiB) kept free, as `stowage plan` keeps it; a budget below the card's planned whole."""
        card = stowage.plan(self.t, gpu=25757220864, hw="RTX4090-24GB-PCIe4")
        self.assertEqual(card.predictions["gpu_reserved"], 536870912)
        self.assertEqual(stowage.plan(self.t, gpu="23GiB", hw="RTX4090-24GB-PCIe4")
                         .predictions["gpu_reserved"], 0)
        self.assertEqual(stowage.plan(self.t, gpu=2240).predictions["gpu_reserved"], 0)

    def test_check_and_simulate(self):
        p = stowage.plan(self.t, gpu="2240")
        self.assertEqual(stowage.check(p, self.t)["h2d_bytes"], 2048)
        sim = stowage.simulate(p, self.t)
        self.assertEqual(sim["iteration_ns"], p.predictions["cost_ns"])
        self.assertEqual(sim["over_budget_bytes"], 0)

    def test_plan_errors(self):
        with self.assertRaises(stowage.StowageError) as e:
            stowage.plan(self.t, gpu="1 KiB")
        self.assertIn("cannot fit a GPU budget of 1.00 KiB", str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            stowage.plan(self.t, gpu="lots")
        self.assertIn("--gpu: 'lots' is not a size", str(e.exception))
        with self.assertRaises(stowage.StowageError) as e:
            stowage.plan(self.t, gpu=4096, policy="fastest")
        self.assertIn("--policy: 'fastest' is not one of stowage, patrickstar", str(e.exception))

    def test_check_refuses_another_trace(self):
        p = stowage.plan(self.t, gpu=2240)
        other = built_trace()
        with self.assertRaises(stowage.StowageError) as e:
            stowage.check(p, other)
        self.assertIn("digest", str(e.exception))


if __name__ == "__main__":
    unittest.main()
