"""stowage.torch.profile on a small GPT-2 (transformers, random init) or a torch.nn GPT: real
names, the tied head once, ops per block, and the trace plans. Skips without PyTorch."""
import gc
import json
import os
import tempfile
import unittest
import warnings

import stowage

try:
    import torch
    import stowage.torch as st
except ImportError as e:  # the C library and the CLI never need PyTorch
    torch = None
    WHY = str(e)


class Block(torch.nn.Module if torch else object):
    def __init__(self, d):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.proj = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln(x))))


class TinyLM(torch.nn.Module if torch else object):
    """Embedding, 2 blocks, a final norm and a head tied to the embedding."""

    def __init__(self, vocab=64, d=16, layers=2):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.h = torch.nn.ModuleList(Block(d) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, x):
        y = self.wte(x)
        for b in self.h:
            y = b(y)
        return self.head(self.ln_f(y))


def tiny_lm_run():
    """A TinyLM, its AdamW and a batch, the same every time."""
    torch.manual_seed(0)
    m = TinyLM()
    return m, torch.optim.AdamW(m.parameters(), lr=1e-2), torch.randint(0, 64, (4, 8))


@unittest.skipIf(torch is None, "PyTorch is not installed: %s" % (None if torch else WHY))
class TestProfile(unittest.TestCase):
    def run_steps(self, model, steps=2):
        torch.manual_seed(0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randint(0, 64, (2, 8))
        with st.profile(model, opt) as p:
            for _ in range(steps):
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten())
                loss.backward()
                opt.step()
                opt.zero_grad()
        return p

    def test_tiny_lm(self):
        torch.manual_seed(0)
        m = TinyLM()
        p = self.run_steps(m)
        self.assertEqual(p.depth, 1)  # the blocks sit under a ModuleList, which does not run
        t = p.trace(batch=2, seq=8)
        s = t.summary()
        self.assertEqual(s["params"], sum(q.numel() for q in m.parameters()))  # tied once
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            p.save(path, batch=2, seq=8)
            import json
            with open(path) as f:
                tr = json.load(f)
        names = [x["name"] for x in tr["tensors"]]
        self.assertEqual(names[:2], ["wte.weight", "h.0.ln.weight"])
        self.assertNotIn("head.weight", names)
        ops = [(o["name"], o["stage"]) for o in tr["ops"] if o["stage"] != "optim"]
        self.assertEqual(ops, [("wte", "fwd"), ("h.0", "fwd"), ("h.1", "fwd"), ("ln_f", "fwd"),
                               ("head", "fwd"), ("head.bwd", "bwd"), ("ln_f.bwd", "bwd"),
                               ("h.1.bwd", "bwd"), ("h.0.bwd", "bwd"), ("wte.bwd", "bwd")])
        head = [o for o in tr["ops"] if o["name"] == "head"][0]
        self.assertEqual(head["params"], [0])  # the tied head reads the embedding
        plan = stowage.plan(t, gpu=64 << 10)
        self.assertEqual(stowage.check(plan, t)["h2d_bytes"], plan.predictions["h2d_bytes"])

    def test_autocast_recorded(self):
        """A loop whose forward runs under autocast (PyTorch's AMP over fp32 weights) says so in
        its trace (model.autocast), and MFU is then against the 16-bit peak; without it, no
        member."""
        for dtype in (torch.bfloat16, None):
            torch.manual_seed(0)
            m = TinyLM()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            x = torch.randint(0, 64, (2, 8))
            with st.profile(m, opt) as p:
                for _ in range(2):
                    with torch.autocast("cpu", dtype=dtype or torch.bfloat16,
                                        enabled=dtype is not None):
                        logits = m(x)
                    loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1),
                                                             x.flatten())
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
            tr = p.trace(batch=2, seq=8).json()
            self.assertEqual(tr["model"].get("autocast"), "bf16" if dtype else None)
            self.assertEqual(tr["tensors"][0]["dtype"], "fp32")

    def test_blocks(self):
        """Each module op is a block: its forward op, the backward of it, its input's bytes and
        what autograd saved for its backward (the parameters left out), measured: a Block of
        width 16 over 4 x 8 tokens saves its LayerNorm's input (2,048 B) and statistics
        (256 B), fc's input (2,048 B), GELU's input and proj's (8,192 B each); in bf16 (mixed
        precision) all of it takes half."""
        torch.manual_seed(0)
        m = TinyLM()
        x = torch.randint(0, 64, (4, 8))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        j = self.traced(m, x, opt).json()
        self.assertEqual(j["version"], 2)
        blocks = {b["name"]: b for b in j["blocks"]}
        self.assertEqual(list(blocks), ["wte", "h.0", "h.1", "ln_f", "head"])
        ops = [o["name"] for o in j["ops"]]
        for name, b in blocks.items():
            self.assertEqual(ops[b["forward"][0]], name)
            self.assertEqual(ops[b["backward"][0]], name + ".bwd")
        self.assertEqual((blocks["h.0"]["input_bytes"], blocks["h.0"]["saved_bytes"]),
                         (2048, 2048 + 256 + 2048 + 8192 + 8192))
        self.assertEqual((blocks["wte"]["input_bytes"], blocks["wte"]["saved_bytes"]),
                         (256, 256))  # the token ids (int64), which the embedding keeps
        self.assertGreater(blocks["h.1"]["forward_ns"], 0)
        with st.profile(m, opt, precision="bf16") as p:
            self.loss_of(m, x).backward()
            opt.step()
            opt.zero_grad()
        b = {b["name"]: b for b in p.trace().json()["blocks"]}["h.0"]
        self.assertEqual((b["input_bytes"], b["saved_bytes"]),
                         (1024, 1024 + 128 + 1024 + 4096 + 4096))

    def test_wrap_replays_recomputing_and_offloading_plans(self):
        """Plans that recompute every block and that offload every block
        (plan(activations="recompute" or "offload")): wrap runs each recomputed block through
        torch.utils.checkpoint and issues the plan's recompute op before its backward, and keeps
        what each offloaded block saves, but its input and the parameters, in host memory until
        its backward; the losses bitwise those of the plan that keeps them, the bytes moved each
        way the plan's (its chunks' and the offloaded activations), no deviation; unwrap gives the
        modules their own forward back."""
        m, opt, x = tiny_lm_run()
        t = self.traced(m, x, opt)
        blocks = t.json()["blocks"]
        saved = sum(b["saved_bytes"] - b["input_bytes"] for b in blocks)
        self.assertGreater(saved, 0)
        runs = {}
        for activations in ("keep", "recompute", "offload"):
            m, opt, x = tiny_lm_run()
            plan = stowage.plan(t, gpu="1GiB", activations=activations)
            with st.wrap(m, opt, plan, t) as w:
                losses = self.steps(m, opt, x, 4)
                checked = stowage.check(plan, t)
                self.assertEqual(w.stats["h2d_bytes"], checked["h2d_bytes"])
                self.assertEqual(w.stats["d2h_bytes"], checked["d2h_bytes"])
            runs[activations] = losses
            self.assertEqual(w.stats["deviations"], 0)
            self.assertEqual(w.offloaded_last, saved if activations == "offload" else 0)
            self.assertNotIn("forward", m.h[0].__dict__)
            if activations != "keep":
                self.assertEqual(plan.predictions[activations], [0, 1, 2, 3, 4])
        self.assertEqual(len(plan.predictions["activation_moves"]), 5)
        self.assertEqual(runs["keep"], runs["recompute"])
        self.assertEqual(runs["keep"], runs["offload"])

    def test_wrap_replays_a_plan_of_bf16_moments(self):
        """plan(..., optimizer_state="bf16") of the fp32 loop's trace: wrap steps Adam with bf16
        moments (the plan's, whatever the loop's optimizer keeps), 4 bytes less of chunk memory
        an element, losses close to the fp32 plan's but not equal; the optimizer's state handed
        back holds the moments as bf16 values widened."""
        m, opt, x = tiny_lm_run()
        t = self.traced(m, x, opt)
        plans = {s: stowage.plan(t, gpu="96KiB", activations="keep", optimizer_state=s)
                 for s in ("fp32", "bf16")}
        with tempfile.TemporaryDirectory() as d:
            chunks = {}
            for s, plan in plans.items():
                plan.save(os.path.join(d, s), t)
                with open(os.path.join(d, s)) as f:
                    chunks[s] = json.load(f)["chunks"]
        self.assertEqual(chunks["bf16"]["optimizer_state"], "bf16")
        self.assertNotIn("optimizer_state", chunks["fp32"])
        runs = {}
        for name, plan in plans.items():
            m, opt, x = tiny_lm_run()
            with st.wrap(m, opt, plan, t):
                losses = self.steps(m, opt, x, 3)
            runs[name] = losses
            if name == "bf16":
                for p in m.parameters():
                    for key in ("exp_avg", "exp_avg_sq"):
                        s = opt.state[p][key]
                        self.assertTrue(torch.equal(s, s.to(torch.bfloat16).to(torch.float32)))
        self.assertNotEqual(runs["fp32"], runs["bf16"])
        for a, b in zip(runs["fp32"], runs["bf16"]):
            self.assertAlmostEqual(a, b, delta=1e-3 * abs(a))

    def test_wrap_replays_a_plan_with_state_on_storage(self):
        """A host budget one byte short of the least any plan without storage fits in, with a
        storage tier (plan(..., nvme=)): CPU Adam chunks keep their optimizer state on storage;
        wrap(..., storage_dir=) steps it through a scratch file there, with bitwise the losses
        of the plan that keeps it in host memory, reading and writing the plan's bytes each
        step, and leaves no file; without a directory the plan is refused by name. At the
        least host budget any plan fits, some chunks' 16-bit parameters (and gradients) go
        there too: each fetch reads them, each copy out writes them, and the bytes are the
        simulation's, exactly. Both edges are found by bisection: where they lie follows the
        profiled times (the unbounded plan's host bytes are not the least: under a budget the
        planner may choose another chunk size or placement that needs less)."""
        m, opt, x = tiny_lm_run()
        t = self.traced(m, x, opt)
        hw = "RTX4090-24GB-PCIe4-2xNVMe"
        host = stowage.plan(t, gpu="96KiB", activations="keep", hw=hw)
        need = host.predictions["cpu_bytes"] + host.predictions["host_overhead_bytes"]
        def fits(cpu, **storage):
            try:
                return stowage.plan(t, gpu="96KiB", activations="keep", hw=hw, cpu=cpu,
                                    **storage)
            except stowage.StowageError:
                return None
        def least(**storage):  # the least host budget a plan fits in: no plan at lo, one at hi
            lo, hi = 0, need
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if fits(mid, **storage) is not None else (mid, hi)
            return hi
        stored = fits(least() - 1, nvme="1GiB")
        state = stored.predictions["storage_bytes"]
        self.assertGreater(state, 0)
        params = fits(least(nvme="1GiB"), nvme="1GiB")
        sim = stowage.simulate(params, t)
        held = params.predictions["storage_bytes"]
        self.assertGreater(held, state)  # state and parameters
        with tempfile.TemporaryDirectory() as d:
            params.save(os.path.join(d, "p.json"), t)
            with open(os.path.join(d, "p.json")) as f:
                layout = json.load(f)["layout"]
        self.assertIn("storage", [c["optimizer"] for c in layout])  # parameters there too
        moved = (sim["storage_read_bytes"], sim["storage_write_bytes"])
        self.assertGreater(moved[0], held)  # each fetch reads them
        self.assertGreaterEqual(moved[1], held)
        runs = {}
        with tempfile.TemporaryDirectory() as d:
            for name, plan in (("host", host), ("storage", stored), ("params", params)):
                m, opt, x = tiny_lm_run()
                with st.wrap(m, opt, plan, t, storage_dir=d) as w:
                    losses = self.steps(m, opt, x, 3)
                    if name == "storage":
                        self.assertEqual(w.stats["storage_read_bytes"], state)
                        self.assertEqual(w.stats["storage_write_bytes"], state)
                        self.assertEqual(os.listdir(d), ["optimizer-state.rank0"])
                    elif name == "params":
                        self.assertEqual((w.stats["storage_read_bytes"],
                                          w.stats["storage_write_bytes"]), moved)
                    else:
                        self.assertNotIn("storage_read_bytes", w.stats)
                runs[name] = losses
            self.assertEqual(os.listdir(d), [])
            m, opt, x = tiny_lm_run()
            with self.assertRaisesRegex(stowage.StowageError, r"the plan keeps the optimizer "
                                        r"state of \d+ chunks on the storage tier "
                                        r"\(\"cpu-storage\"\): name a directory"):
                st.wrap(m, opt, stored, t)
        self.assertEqual(runs["host"], runs["storage"])
        self.assertEqual(runs["host"], runs["params"])

    def test_cpu_memory_from_the_profiler(self):
        """On the CPU, non-model memory comes from the profiler's memory events: a stack of
        Linear(8, 8) on a 4 x 8 input allocates 128 bytes per output, each kept for backward."""
        torch.manual_seed(0)
        m = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])
        opt = torch.optim.AdamW(m.parameters())
        x = torch.randn(4, 8)
        with st.profile(m, opt) as p:
            for _ in range(2):
                m(x).sum().backward()
                opt.step()
                opt.zero_grad()
        ops = {o["name"]: o for o in p.trace().json()["ops"]}
        got = [(ops[str(i)]["nonmodel_bytes"], ops[str(i)]["nonmodel_peak_bytes"])
               for i in range(4)]
        self.assertEqual(got, [(0, 128), (128, 256), (256, 384), (384, 512)])
        # the last layer's backward starts with the outputs the layers keep (3 x 128) and the loss
        # and its gradient (4 bytes each): the last output went when .sum() had read it, and
        # sum's gradient is one value expanded, a view (the profile once kept each module's
        # outputs alive in a reference cycle until Python's collector ran: 128 bytes more here)
        self.assertEqual(ops["3.bwd"]["nonmodel_bytes"], 3 * 128 + 8)
        self.assertNotIn("warnings", p.trace().json().get("source", {}))

    def test_process_memory_measured(self):
        """The profile measures its process's own host memory: the peak RSS while profiling less
        the model's state (weights and Adam's moments and step counts, 12 bytes a parameter and 4
        a tensor, each storage once) and, on the CPU, the non-model peak; a plan on a profile of
        this host counts it as the process's memory, said in the plan's words."""
        torch.manual_seed(0)
        m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)])
        opt = torch.optim.AdamW(m.parameters())
        x = torch.randn(16, 1024)
        with st.profile(m, opt) as p:
            for _ in range(2):
                m(x).sum().backward()
                opt.step()
                opt.zero_grad()
        n = 4 * (1024 * 1024 + 1024)
        self.assertEqual(p.model_host_bytes, 12 * n + 4 * 8)
        t = p.trace()
        peak = max(o["nonmodel_peak_bytes"] for o in t.json()["ops"])
        own = t.json()["device"]["process_bytes"]
        self.assertEqual(own, p.peak_rss - p.model_host_bytes - peak)
        # the GPU memory outside the tensors is measured on a GPU only
        self.assertIsNone(p.gpu_outside)
        self.assertNotIn("gpu_process_bytes", t.json()["device"])
        # the interpreter with PyTorch loaded is in it
        self.assertGreater(own, 100 << 20)
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "hw",
                               "A100-80GB-PCIe4.json")) as f:
            host = json.load(f)
        host["name"] = "this-host"
        host["gpu"]["compute_on_host"] = True
        with tempfile.TemporaryDirectory() as d:
            hw = os.path.join(d, "host.json")
            with open(hw, "w") as f:
                json.dump(host, f)
            here = stowage.plan(t, gpu="256MiB", hw=hw).predictions
            elsewhere = stowage.plan(t, gpu="256MiB").predictions  # a GPU's profile
        self.assertEqual(here["host_overhead_bytes"], own)
        self.assertEqual(elsewhere["host_overhead_bytes"], 2 << 30)

    def test_inside_another_pytorch_profiler(self):
        """Inside the user's own torch.profiler the profile leaves it alone: memory unknown, said
        in a warning and in the trace's source, and the user's profiler still records."""
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
        opt = torch.optim.AdamW(m.parameters())
        with torch.profiler.profile(profile_memory=True) as outer:
            with self.assertWarnsRegex(UserWarning, "a PyTorch profiler is already running"):
                with st.profile(m, opt) as p:
                    m(torch.randn(4, 8)).sum().backward()
                    opt.step()
        t = p.trace().json()
        self.assertEqual(t["source"]["warnings"], {"no_memory_events": 1})
        self.assertEqual({o["nonmodel_peak_bytes"] for o in t["ops"]}, {0})
        self.assertTrue(any(e.name == "aten::addmm" for e in outer.events()))

    def test_trace_inside_the_profile_is_refused(self):
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
        opt = torch.optim.AdamW(m.parameters())
        with st.profile(m, opt) as p:
            m(torch.randn(2, 4)).sum().backward()
            opt.step()
            with self.assertRaisesRegex(stowage.StowageError, "after the `with` block"):
                p.trace()

    @staticmethod
    def loss_of(m, x):
        return torch.nn.functional.cross_entropy(m(x).flatten(0, 1), x.flatten())

    def steps(self, m, opt, x, n):
        """N training steps of M on X: their losses."""
        losses = []
        for _ in range(n):
            loss = self.loss_of(m, x)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        return losses

    def traced(self, m, x, opt):
        """The trace of one profiled step of M on X."""
        with st.profile(m, opt) as p:
            self.loss_of(m, x).backward()
            opt.step()
            opt.zero_grad()
        return p.trace()

    def profiled(self, device):
        """A 6-block GPT on DEVICE, its first weights, its batch and the trace of its step."""
        torch.manual_seed(0)
        m = TinyLM(vocab=64, d=32, layers=6).to(device)
        start = {k: v.clone() for k, v in m.state_dict().items()}
        x = torch.randint(0, 64, (2, 8), device=device)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        with st.profile(m, opt) as p:
            for _ in range(2):
                self.loss_of(m, x).backward()
                opt.step()
                opt.zero_grad()
        return m, start, x, p.trace(batch=2, seq=8)

    def train(self, m, start, x, steps=10, plan=None, trace=None, budget=None, stepper=None):
        """STEPS steps of M from START, AdamW (lr 1e-2, weight decay 0.1, the rate halved every
        4 steps): wrapped with PLAN when given, stepped by STEPPER(opt, step) when given, else
        by torch.optim.AdamW. The losses, and the wrapper's figures."""
        m.load_state_dict(start)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
        ctx = st.wrap(m, opt, plan, trace, budget) if plan is not None else None
        if ctx:
            ctx.__enter__()
        losses = []
        for step in range(1, steps + 1):
            loss = self.loss_of(m, x)
            losses.append(loss.item())
            loss.backward()
            if stepper:
                stepper(opt, step)
            else:
                opt.step()
            opt.zero_grad()
            sched.step()
        stats = ctx.stats if ctx else None
        if ctx:
            ctx.__exit__(None, None, None)
        return losses, stats

    def test_no_tensor_waits_for_the_cycle_collector(self):
        """Profiled and wrapped steps leave no tensor in a reference cycle: a step's activations
        go when nothing uses them, not when Python's cycle collector next runs (which would hold
        them beyond the memory the trace measured and the plan counts)."""
        def leaked(run):
            gc.collect()
            gc.disable()
            try:
                run()
                gc.set_debug(gc.DEBUG_SAVEALL)
                gc.collect()
                return [tuple(o.shape) for o in gc.garbage if isinstance(o, torch.Tensor)]
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()

        def inside(context, steps):
            """STEPS run in CONTEXT; what they left in cycles, found before it ends."""
            with context:
                return leaked(steps)

        m, start, x, t = self.profiled("cpu")
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)

        def steps():
            for _ in range(2):
                self.loss_of(m, x).backward()
                opt.step()
                opt.zero_grad()

        n = sum(q.numel() for q in m.parameters())
        plan = stowage.plan(t, gpu=16 * n // 4 + t.summary()["peak_nonmodel"]["bytes"])
        self.assertEqual(inside(st.profile(m, opt), steps), [])
        self.assertEqual(inside(st.wrap(m, opt, plan, t), steps), [])

    def test_wrap_trains_with_the_plan_bitwise(self):
        """Profiled, planned at a quarter of the model data, trained 10 steps with the plan:
        the losses are bitwise those of plain PyTorch stepping the library's AdamW, the device
        stays in budget, and the bytes moved are the plan's."""
        m, start, x, t = self.profiled("cpu")
        n = sum(q.numel() for q in m.parameters())
        # a quarter of the model data (4 fp32 lists) beside the non-model peak (activations,
        # and PyTorch's gradients from backward to the step)
        budget = 16 * n // 4 + t.summary()["peak_nonmodel"]["bytes"]
        plan = stowage.plan(t, gpu=budget)
        pred = stowage.check(plan, t)
        wrapped, stats = self.train(m, start, x, plan=plan, trace=t, budget=budget)
        trained = {k: v.clone() for k, v in m.state_dict().items()}
        self.assertEqual(stats["h2d_bytes"], pred["h2d_bytes"])
        self.assertEqual(stats["d2h_bytes"], pred["d2h_bytes"])
        self.assertGreater(pred["h2d_bytes"], 0)
        self.assertLessEqual(stats["peak_device_bytes"], budget)
        self.assertEqual(stats["deviations"], 0)

        # the reference: plain PyTorch, the library's AdamW on plain arrays
        params = [q for _, q in m.named_parameters()]
        master, mom, var = [], [], []

        def library_adamw(opt, step):
            opt._opt_called = True  # (an LR scheduler's check that the step ran)
            if step == 1:
                master[:] = [q.detach().clone() for q in params]
                mom[:] = [torch.zeros_like(q) for q in params]
                var[:] = [torch.zeros_like(q) for q in params]
            g = opt.param_groups[0]
            for i, q in enumerate(params):
                buf = q.grad.detach().clone().contiguous()
                stowage.adam(buf.data_ptr(), master[i].data_ptr(), mom[i].data_ptr(),
                             var[i].data_ptr(), q.numel(), step, lr=g["lr"], betas=g["betas"],
                             eps=g["eps"], weight_decay=g["weight_decay"])
                q.data = buf

        plain, _ = self.train(m, start, x, stepper=library_adamw)
        self.assertEqual(wrapped, plain)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(trained[k], v), k)
        self.assertLess(wrapped[-1], wrapped[0])

        # torch.optim.AdamW itself: the same update in another order of float operations
        reference, _ = self.train(m, start, x)
        for a, b in zip(wrapped, reference):
            self.assertLess(abs(a - b), 1e-4 * max(1.0, abs(b)))

    @unittest.skipIf(torch is None or not torch.cuda.is_available(), "no CUDA device here")
    def test_wrap_trains_on_cuda(self):
        """On a GPU: profiled on CUDA (the allocator's memory), planned at a quarter of the model
        data beside the non-model peak, trained 10 steps with the plan on the CUDA backend
        (views of device chunks, Adam where the plan puts it): the bytes are the plan's, no
        deviation, and the losses those of torch.optim.AdamW on CUDA to 1e-4."""
        m, start, x, t = self.profiled("cuda")
        n = sum(q.numel() for q in m.parameters())
        budget = 16 * n // 4 + t.summary()["peak_nonmodel"]["bytes"]
        plan = stowage.plan(t, gpu=budget)
        pred = stowage.check(plan, t)
        wrapped, stats = self.train(m, start, x, plan=plan, trace=t, budget=budget)
        self.assertEqual(stats["h2d_bytes"], pred["h2d_bytes"])
        self.assertEqual(stats["d2h_bytes"], pred["d2h_bytes"])
        self.assertEqual(stats["deviations"], 0)
        self.assertLessEqual(stats["peak_device_bytes"], budget)
        self.assertTrue(all(q.is_cuda for q in m.parameters()))
        reference, _ = self.train(m, start, x)
        for a, b in zip(wrapped, reference):
            self.assertLess(abs(a - b), 1e-4 * max(1.0, abs(b)))
        # PyTorch on a stream of its own: wrap orders it against the runtime's, each way
        with torch.cuda.stream(torch.cuda.Stream()):
            side, stats = self.train(m, start, x, plan=plan, trace=t, budget=budget)
            torch.cuda.synchronize()
        self.assertEqual(stats["h2d_bytes"], pred["h2d_bytes"])
        for a, b in zip(side, reference):
            self.assertLess(abs(a - b), 1e-4 * max(1.0, abs(b)))

    def test_wrap_refuses_a_device_it_cannot_hold(self):
        torch.manual_seed(0)
        m = TinyLM(d=16, layers=2)
        x = torch.randint(0, 64, (2, 8))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        t = self.traced(m, x, opt)
        plan = stowage.plan(t, gpu=1 << 20)
        m.to("meta")
        with self.assertRaisesRegex(stowage.StowageError,
                                    "^wrap: the model is on meta; stowage runs on the CPU or CUDA "
                                    r"\(cuda:0\): model.to\(\"cpu\"\) or"):
            st.wrap(m, opt, plan, t, 1 << 20)
        m.h[0].to_empty(device="cpu")
        with self.assertRaisesRegex(stowage.StowageError, "^wrap: the parameters are on cpu, meta;"):
            st.wrap(m, opt, plan, t, 1 << 20)

    def test_wrap_refuses_modules_out_of_order(self):
        """Modules run in another order than the trace's: the runtime refuses the op with its
        message, and the model's weights are those of the last step, not corrupted."""
        def loss_of(logits, x):
            return torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten())

        torch.manual_seed(0)
        m = TinyLM(d=16, layers=3)
        x = torch.randint(0, 64, (2, 8))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        with st.profile(m, opt) as p:
            loss_of(m(x), x).backward()
            opt.step()
            opt.zero_grad()
        t = p.trace()
        budget = 16 * sum(q.numel() for q in m.parameters()) // 2 + \
            t.summary()["peak_nonmodel"]["bytes"]
        plan = stowage.plan(t, gpu=budget)
        w = st.wrap(m, opt, plan, t, budget)
        with w:
            loss_of(m(x), x).backward()
            opt.step()
            opt.zero_grad()
            after_step = [w.rt.master(i) for i in range(len(w.p.params))]
            y = m.wte(x)
            with self.assertRaises(stowage.StowageError) as e:
                m.h[2](y)  # the last block first
        self.assertIn("op 1 is h.2 (fwd) here but h.0 (fwd, micro-step 1 of 1) in the plan's "
                      "trace: the op differs; the plan was made for another model or "
                      "configuration, or the loop runs otherwise than profiled (a module skipped "
                      "or run twice", str(e.exception))
        for i, (_, q) in enumerate(w.p.params):
            self.assertEqual(q.detach().flatten().tolist(), after_step[i])

    def test_wrap_refuses_another_model(self):
        torch.manual_seed(0)
        small = TinyLM(d=16, layers=2)
        opt = torch.optim.AdamW(small.parameters())
        x = torch.randint(0, 64, (1, 4))
        t = self.traced(small, x, opt)
        plan = stowage.plan(t, gpu=1 << 20)
        other = TinyLM(d=16, layers=3)
        with self.assertRaises(stowage.StowageError) as e:
            st.wrap(other, torch.optim.AdamW(other.parameters()), plan, t, 1 << 20)
        self.assertIn("the plan was made for another model", str(e.exception))
        # the same number of elements in another shape: named, with both shapes
        turned = TinyLM(d=16, layers=2)
        turned.h[0].fc.weight = torch.nn.Parameter(torch.randn(16, 64))
        with self.assertRaises(stowage.StowageError) as e:
            st.wrap(turned, torch.optim.AdamW(turned.parameters()), plan, t, 1 << 20)
        self.assertIn("the plan was made for another model: tensor 3 is h.0.fc.weight (fp32 "
                      "[64, 16]) in the plan's trace and h.0.fc.weight (fp32 [16, 64]) here",
                      str(e.exception))
        half = TinyLM(d=16, layers=2).to(torch.float64)
        with self.assertRaises(stowage.StowageError) as e:
            st.wrap(half, torch.optim.AdamW(half.parameters()), plan, t, 1 << 20)
        self.assertIn("wte.weight is torch.float64", str(e.exception))

    def test_wrap_refuses_what_it_cannot_step(self):
        torch.manual_seed(0)
        m = TinyLM(d=16, layers=2)
        opt = torch.optim.AdamW(m.parameters())
        x = torch.randint(0, 64, (1, 4))
        t = self.traced(m, x, opt)
        plan = stowage.plan(t, gpu=1 << 20)
        for other, why in ((torch.optim.SGD(m.parameters(), lr=0.1),
                            "wrap: the optimizer is SGD; stowage steps Adam and AdamW (the "
                            "library's AdamW on the chunks): use torch.optim.AdamW("),
                           (torch.optim.Adagrad(m.parameters()), "wrap: the optimizer is Adagrad;"),
                           (torch.optim.AdamW(m.parameters(), amsgrad=True),
                            "wrap: the optimizer has amsgrad=True, and the plan's trace was "
                            "profiled without it")):
            with self.assertRaises(stowage.StowageError) as e:
                st.wrap(m, other, plan, t, 1 << 20)
            self.assertTrue(str(e.exception).startswith(why), str(e.exception))
            self.assertFalse(hasattr(m, "_stowage_wrap"))
            self.assertTrue(torch.isfinite(m.wte.weight).all())  # untouched
        with st.wrap(m, opt, plan, t, 1 << 20):
            # a step without backward: the runtime refuses the op out of the trace's order
            m(x)
            with self.assertRaises(stowage.StowageError) as e:
                opt.step()
            self.assertIn("op 5 is optimizer.wte.weight (optim) here but head.bwd (bwd, "
                          "micro-step 1 of 1) in the plan's trace: the op differs",
                          str(e.exception))

    def test_no_iteration(self):
        m = TinyLM()
        opt = torch.optim.AdamW(m.parameters())
        with st.profile(m, opt) as p:
            m(torch.randint(0, 64, (1, 4)))
        with self.assertRaises(stowage.StowageError) as e:
            p.trace()
        self.assertIn("no iteration completed", str(e.exception))

    def test_a_name_the_trace_cannot_hold_is_refused(self):
        """A parameter name over the 1,024 bytes a trace's name holds: the trace is refused with
        the reader's own message, rather than written for its reader to refuse."""
        m = torch.nn.Sequential()
        m.add_module("x" * 2000, torch.nn.Linear(4, 4))
        opt = torch.optim.AdamW(m.parameters())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with st.profile(m, opt) as p:
                m(torch.randn(2, 4)).sum().backward()
                opt.step()
            with self.assertRaises(stowage.StowageError) as e:
                p.trace()
        self.assertIn("$.tensors[0].name: 2007 bytes, more than the 1024 a name holds",
                      str(e.exception))

    def test_refuses_integer_parameters(self):
        m = TinyLM()
        m.register_parameter("count", torch.nn.Parameter(torch.zeros(2, dtype=torch.int64),
                                                         requires_grad=False))
        with self.assertRaises(stowage.StowageError) as e:
            st.profile(m, torch.optim.AdamW([p for p in m.parameters() if p.is_floating_point()]))
        self.assertIn("parameter count is torch.int64", str(e.exception))


if __name__ == "__main__":
    unittest.main()
