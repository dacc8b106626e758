"""stowage.torch on the loops people write: the five-line API, state in and out (state_dict,
optimizer state, checkpoints), gradient accumulation, evaluation between steps, frozen
parameters, parameters of the root and heads tied in the parent's forward, every AdamW option,
schedulers, and the refusals that say what differs. Each case trains wrapped and holds the
losses bitwise to plain PyTorch stepping the library's AdamW the way wrap does (LibraryAdam), the
bytes moved to the plan's, the device to its budget. Skips without PyTorch."""
import contextlib
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

if torch is not None:
    from test_torch import Block, TinyLM


def loss_of(m, x):
    return torch.nn.functional.cross_entropy(m(x).flatten(0, 1), x.flatten())


class LibraryAdam:
    """Plain PyTorch stepping the library's AdamW (stowage.adam) as wrap does: per parameter
    with a gradient, its own step count; maximize and Adam's L2 decay on the gradient."""

    def __init__(self, opt):
        self.opt = opt
        self.state = {}  # id(parameter) -> [master, m, v, step]

    def take(self, opt):
        """Starts from OPT's state (moments and steps of torch's own AdamW)."""
        for g in opt.param_groups:
            for q in g["params"]:
                s = opt.state.get(q)
                if s:
                    v = s["exp_avg_sq"].flatten()
                    if g.get("amsgrad"):  # the library keeps the largest after the variances
                        v = torch.cat([v, s["max_exp_avg_sq"].flatten()])
                    self.state[id(q)] = [q.detach().clone(), s["exp_avg"].clone(), v.clone(),
                                         int(float(s["step"]))]

    def step(self):
        opt = self.opt
        opt._opt_called = True  # (an LR scheduler's check that the step ran)
        for g in opt.param_groups:
            decoupled = isinstance(opt, torch.optim.AdamW) or g.get("decoupled_weight_decay")
            for q in g["params"]:
                if q.grad is None:
                    continue
                n = 2 if g.get("amsgrad") else 1
                s = self.state.setdefault(id(q), [q.detach().clone(), torch.zeros_like(q),
                                                  torch.zeros(n * q.numel()), 0])
                s[3] += 1
                buf = q.grad.detach().clone().contiguous()
                if g.get("maximize"):
                    buf = -buf
                wd = float(g["weight_decay"])
                if wd and not decoupled:
                    buf = buf.add(q.detach(), alpha=wd)
                stowage.adam(buf.data_ptr(), s[0].data_ptr(), s[1].data_ptr(), s[2].data_ptr(),
                             q.numel(), s[3], lr=float(g["lr"]),
                             betas=tuple(float(b) for b in g["betas"]), eps=g["eps"],
                             weight_decay=wd if decoupled else 0.0,
                             amsgrad=bool(g.get("amsgrad")))
                q.data = buf


class RootParams(torch.nn.Module if torch else object):
    """minGPT's shape: a position embedding and a class token on the root, used between the
    ops (before the first, between two)."""

    def __init__(self, vocab=64, d=16, layers=2, seq=8):
        super().__init__()
        self.cls = torch.nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.wte = torch.nn.Embedding(vocab, d)
        self.pos_emb = torch.nn.Parameter(torch.randn(1, seq + 1, d) * 0.02)
        self.h = torch.nn.ModuleList(Block(d) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, x):
        y = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.wte(x)], 1)
        y = y + self.pos_emb[:, :y.shape[1]]
        for b in self.h:
            y = b(y)
        return self.head(self.ln_f(y))[:, 1:]


class BranchBlock(Block if torch else object):
    """A block with a branch it runs only when asked: the optimizer holds the branch's
    weights, and no gradient reaches them unless it runs (a multimodal model's vision tower in a
    text step is the same, as a module of its own)."""

    def __init__(self, d):
        super().__init__(d)
        self.aux = torch.nn.Linear(d, d)
        self.use_aux = False

    def forward(self, x):
        y = super().forward(x)
        return y + self.aux(y) if self.use_aux else y


class UnusedBranch(TinyLM if torch else object):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.h = torch.nn.ModuleList(BranchBlock(16) for _ in range(2))


class ParentHead(TinyLM if torch else object):
    """A head tied to the embedding and computed in the parent's forward."""

    def __init__(self, **kw):
        super().__init__(**kw)
        del self.head

    def forward(self, x):
        y = self.wte(x)
        for b in self.h:
            y = b(y)
        return torch.nn.functional.linear(self.ln_f(y), self.wte.weight)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@unittest.skipIf(torch is None, "PyTorch is not installed: %s" % (None if torch else WHY))
class TestLoops(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def profiled(self, m, opt, x, steps=2, accumulate=1, evaluate=False):
        """The trace of STEPS real steps of M (each ACCUMULATE micro-steps, an evaluation
        forward between steps with EVALUATE), profiled; the model and optimizer come back to
        their state before (the profile trains them)."""
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt) as p:
            for _ in range(steps):
                self.step(m, opt, x, accumulate)
                if evaluate:
                    self.evaluate(m, x)
        m.load_state_dict(start)
        opt.state.clear()
        return p.trace()

    @staticmethod
    def step(m, opt, x, accumulate=1, stepper=None):
        loss = 0.0
        for k in range(accumulate):
            part = loss_of(m, x[k::accumulate] if accumulate > 1 else x) / accumulate
            part.backward()
            loss += part.item()
        (stepper or opt).step()
        opt.zero_grad()
        return loss

    @staticmethod
    def evaluate(m, x):
        m.eval()
        with torch.no_grad():
            value = loss_of(m, x).item()
        m.train()
        return value

    def budget(self, t, share):
        """SHARE of the model data (4 fp32 lists) beside the trace's peak non-model memory,
        or the least above it that a plan fits (whole chunks must fit beside the activations)."""
        n = t.summary()["params"]
        budget = int(16 * n * share) + t.summary()["peak_nonmodel"]["bytes"]
        for _ in range(20):
            try:
                stowage.plan(t, gpu=budget)
                return budget
            except stowage.StowageError:
                budget = budget * 9 // 8
        return budget

    def train(self, m, opt, x, steps, plan=None, t=None, share=None, accumulate=1,
              evaluate=False, sched=None):
        """STEPS steps of M: wrapped under PLAN (made at SHARE of the model data when SHARE is
        given) or plain with LibraryAdam; the losses and the wrapper's stats."""
        if share is not None:
            plan = stowage.plan(t, gpu=self.budget(t, share))
        w = st.wrap(m, opt, plan, t) if plan is not None else None
        ref = None if w else LibraryAdam(opt)
        if ref:
            ref.take(opt)
        losses = []
        for _ in range(steps):
            losses.append(self.step(m, opt, x, accumulate, ref))
            if sched is not None:
                sched.step()
            if evaluate:
                self.evaluate(m, x)
        stats = w.stats if w else None
        if w:
            st.unwrap(m)
            pred = stowage.check(plan, t)
            self.assertEqual((stats["h2d_bytes"], stats["d2h_bytes"]),
                             (pred["h2d_bytes"], pred["d2h_bytes"]))
            self.assertLessEqual(stats["peak_device_bytes"], stowage.Plan.predictions.fget(
                plan)["gpu_budget"])
            self.assertEqual(stats["deviations"], 0)
        return losses, stats

    def tiny(self, cls=TinyLM if torch else None, **kw):
        torch.manual_seed(0)
        m = cls(**kw)
        x = torch.randint(0, 64, (4, 8))
        return m, x

    def same_training(self, make, steps=4, shares=(4, 0.25), learns=True, **kw):
        """M trained wrapped at each share of its model data and plain with LibraryAdam from
        the same start: the losses bitwise equal, and so are the weights after unwrap."""
        runs = []
        for share in list(shares) + [None]:
            m, opt, x, t = make()
            if share is None:
                losses, _ = self.train(m, opt, x, steps, **kw)
            else:
                losses, stats = self.train(m, opt, x, steps, t=t, share=share, **kw)
            runs.append((losses, {k: v.clone() for k, v in m.state_dict().items()}))
        for losses, weights in runs[:-1]:
            self.assertEqual(losses, runs[-1][0])
            for k, v in weights.items():
                self.assertTrue(torch.equal(v, runs[-1][1][k]), k)
        if learns:
            self.assertLess(runs[-1][0][-1], runs[-1][0][0])
        return runs

    # ---- the five lines ------------------------------------------------------------------
    def test_the_five_lines(self):
        """profile, save, plan with the CLI's sizes, wrap(model, optimizer, plan="plan.json")
        finds its trace and budget, the same objects come back, unwrap hands them back."""
        m, x = self.tiny()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt) as p:
            self.step(m, opt, x)
        p.save(self.path("trace.json"))
        t = stowage.Trace.load(self.path("trace.json"))
        self.assertEqual((t.json()["model"]["batch"], t.json()["model"]["seq"]), (4, 8))
        budget = self.budget(t, 0.25)
        stowage.plan(t, gpu="%dKiB" % (budget // 1024 + 1)).save(self.path("plan.json"), t)
        m.load_state_dict(start)
        opt.state.clear()
        model, optimizer = st.wrap(m, opt, plan=self.path("plan.json"))
        self.assertIs(model, m)
        self.assertIs(optimizer, opt)
        self.assertIs(m._stowage_wrap.stats["deviations"], 0)
        wrapped = [self.step(m, opt, x) for _ in range(3)]
        self.assertIs(st.unwrap(m), m)
        self.assertFalse(hasattr(m, "_stowage_wrap"))
        self.assertTrue(all(torch.isfinite(q).all() for q in m.parameters()))
        m.load_state_dict(start)
        opt.state.clear()
        ref = LibraryAdam(opt)
        self.assertEqual(wrapped, [self.step(m, opt, x, 1, ref) for _ in range(3)])
        # the budget as a size, the trace beside the plan even from another directory
        os.chdir(self.dir.name)
        self.addCleanup(os.chdir, os.path.dirname(os.path.abspath(__file__)))
        with st.wrap(m, opt, stowage.Plan.load("plan.json"), device_bytes="1MiB") as w:
            self.step(m, opt, x)
        self.assertGreater(w.stats["ops"], 0)
        with self.assertRaisesRegex(stowage.StowageError, "^unwrap: the model is not wrapped$"):
            st.unwrap(m)

    def test_parameters_no_gradient_reaches(self):
        """A parameter the optimizer holds and no gradient reaches in the profiled step is
        frozen in the trace (no optimizer state planned, as PyTorch keeps it none); wrap trains
        the loop bitwise as plain PyTorch, and refuses a step that a gradient reaches it in,
        before anything is stepped."""
        def make():
            m, x = self.tiny(UnusedBranch)
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            return m, opt, x, self.profiled(m, opt, x)

        m, opt, x, t = make()
        frozen = [x_["name"] for x_ in t.json()["tensors"] if x_.get("frozen")]
        self.assertEqual(frozen, ["h.0.aux.weight", "h.0.aux.bias", "h.1.aux.weight",
                                  "h.1.aux.bias"])
        self.assertEqual(t.summary()["frozen"], {"tensors": 4, "params": 2 * (16 * 16 + 16)})
        self.assertEqual(t.json()["source"]["warnings"], {"params_unreached": 4})
        self.assertNotIn("optimizer.h.0.aux.weight", [o["name"] for o in t.json()["ops"]])
        self.same_training(make)
        # the host's times, as the replay runs here (re-timed for the A100, the plan steps on
        # the GPU, and the abandoned iteration stops at another op)
        plan = stowage.plan(t, gpu=self.budget(t, 0.25), measured_times=True)
        start = m.h[1].aux.weight.detach().clone()
        with st.wrap(m, opt, plan, t):
            self.step(m, opt, x)
            m.h[1].use_aux = True
            before = {k: v.clone() for k, v in m.state_dict().items()}
            with self.assertRaisesRegex(stowage.StowageError, "^wrap: a gradient reached "
                                        "h.1.aux.weight, which none reached in the iteration "
                                        "the plan's trace was profiled from"):
                self.step(m, opt, x)
            for k, v in m.state_dict().items():  # nothing stepped
                self.assertTrue(torch.equal(v, before[k]), k)
            opt.zero_grad()
            m.h[1].use_aux = False
            with self.assertWarnsRegex(UserWarning, "the last iteration stopped after 10 of its "
                                       "25 ops .*: it is abandoned"):
                self.step(m, opt, x)
        self.assertTrue(torch.equal(m.h[1].aux.weight, start))
        # in mixed precision they stay trained: a frozen parameter is held in 16 bits, which
        # would round their fp32 weights; wrapped, they come back bitwise as they were
        m, x = self.tiny(UnusedBranch)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt, precision="bf16") as p:
            self.step(m, opt, x)
        t = p.trace()
        self.assertEqual(t.summary()["frozen"], {"tensors": 0, "params": 0})
        self.assertNotIn("params_unreached", t.json()["source"].get("warnings", {}))
        m.load_state_dict(start)
        opt.state.clear()
        with st.wrap(m, opt, stowage.plan(t, gpu=self.budget(t, 0.25)), t, precision="bf16"):
            self.step(m, opt, x)
        self.assertTrue(torch.equal(m.h[0].aux.weight, start["h.0.aux.weight"]))
        self.assertFalse(torch.equal(m.h[0].fc.weight, start["h.0.fc.weight"]))

    def test_wrap_arguments_refused_with_their_reason(self):
        m, x = self.tiny()
        opt = torch.optim.AdamW(m.parameters())
        t = quiet(self.profiled, m, opt, x, steps=1)
        t.save(self.path("t.json"))
        plan = stowage.plan(stowage.Trace.load(self.path("t.json")), gpu="1MiB")
        with self.assertRaisesRegex(stowage.StowageError, "^wrap: device_bytes: "):
            st.wrap(m, opt, plan, device_bytes="24 parsecs")
        with self.assertRaisesRegex(stowage.StowageError, "less than the plan's budget"):
            st.wrap(m, opt, plan, device_bytes="512KiB")
        plan.save(self.path("p.json"), t)
        os.remove(self.path("t.json"))
        with self.assertRaisesRegex(stowage.StowageError, "^wrap: the plan was made from .*t.json"
                                    ", which is not there .*: give the trace as trace="):
            st.wrap(m, opt, plan=self.path("p.json"))
        with self.assertRaisesRegex(stowage.StowageError, "^wrap: plan= is a file or a "
                                    "stowage.Plan, not int"):
            st.wrap(m, opt, plan=3)
        with st.wrap(m, opt, plan, t):
            with self.assertRaisesRegex(stowage.StowageError, "^wrap: the model is wrapped "
                                        "already"):
                st.wrap(m, opt, plan, t)
        # a plan edited by hand is checked before anything of it runs
        text = open(self.path("p.json")).read().replace('"gpu_bytes":1048576',
                                                        '"gpu_bytes":4096')
        with open(self.path("p.json"), "w") as f:
            f.write(text)
        with self.assertRaisesRegex(stowage.StowageError, "the plan"):
            st.wrap(m, opt, plan=self.path("p.json"), trace=t)
        self.assertTrue(torch.isfinite(m.wte.weight).all())

    # ---- state in and out ----------------------------------------------------------------
    def test_state_dict_inside_and_checkpoints(self):
        """model.state_dict() and optimizer.state_dict() inside wrap hold the real values; a
        checkpoint saved inside loads into a plain model and optimizer with bitwise the tensors
        wrap hands back; load_state_dict inside wrap takes effect. With amsgrad, whose largest
        variances come and go with the rest."""
        m, x = self.tiny()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1, amsgrad=True)
        t = quiet(self.profiled, m, opt, x)
        plan = stowage.plan(t, gpu=self.budget(t, 0.25))
        with st.wrap(m, opt, plan, t):
            for _ in range(3):
                self.step(m, opt, x)
            sd, osd = m.state_dict(), opt.state_dict()
            torch.save({"model": sd, "optimizer": osd}, self.path("ckpt.pt"))
            self.assertFalse(any(torch.isnan(v).any() for v in sd.values()))
            self.assertEqual(sd["head.weight"].data_ptr(), sd["wte.weight"].data_ptr())  # tied
            self.assertEqual(len(osd["state"]), len(list(m.parameters())))
            self.assertEqual(float(osd["state"][0]["step"]), 3.0)
            self.assertEqual(len(opt.state), 0)  # the chunks hold it, not PyTorch
        self.assertEqual(int(float(opt.state[m.wte.weight]["step"])), 3)
        ck = torch.load(self.path("ckpt.pt"))
        plain = TinyLM()
        plain_opt = torch.optim.AdamW(plain.parameters(), lr=1e-2, weight_decay=0.1, amsgrad=True)
        plain.load_state_dict(ck["model"])
        plain_opt.load_state_dict(ck["optimizer"])
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(plain.state_dict()[k], v), k)
        for (qa, sa), (qb, sb) in zip(opt.state.items(), plain_opt.state.items()):
            self.assertEqual(set(sa), {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
            for key in sa:
                self.assertTrue(torch.equal(sa[key], sb[key]), key)
        # loading inside: the weights and the optimizer's state of the checkpoint, then the same
        # training as the plain model and optimizer that loaded it
        with st.wrap(m, opt, plan, t):
            self.step(m, opt, x)
            m.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            for k, v in m.state_dict().items():
                self.assertTrue(torch.equal(ck["model"][k], v), k)
            wrapped = [self.step(m, opt, x) for _ in range(2)]
        ref = LibraryAdam(plain_opt)
        ref.take(plain_opt)
        self.assertEqual(wrapped, [self.step(plain, plain_opt, x, 1, ref) for _ in range(2)])

    def test_state_carries_across_profile_and_wrap_blocks(self):
        """3 profiled steps of torch's AdamW, then two wrap blocks of 2 steps: Adam continues
        from step 4 with the moments it had (not from step 1), the same as one plain run."""
        runs = []
        for blocks in ((2, 2), (4,), None):
            m, x = self.tiny()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            with st.profile(m, opt) as p:
                for _ in range(3):
                    self.step(m, opt, x)
            t = p.trace()
            losses = []
            if blocks is None:
                ref = LibraryAdam(opt)
                ref.take(opt)
                losses = [self.step(m, opt, x, 1, ref) for _ in range(4)]
            else:
                plan = stowage.plan(t, gpu=self.budget(t, 0.25))
                for n in blocks:
                    with st.wrap(m, opt, plan, t):
                        losses += [self.step(m, opt, x) for _ in range(n)]
                self.assertEqual(int(float(opt.state[m.wte.weight]["step"])), 7)
            runs.append(losses)
        self.assertEqual(runs[0], runs[2])
        self.assertEqual(runs[1], runs[2])
        # against torch's own AdamW, which computes the same update in another order
        m, x = self.tiny()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        torch_losses = [self.step(m, opt, x) for _ in range(7)][3:]
        for a, b in zip(runs[0], torch_losses):
            self.assertLess(abs(a - b), 1e-5 * abs(b))

    # ---- loop shapes ---------------------------------------------------------------------
    def test_gradient_accumulation(self):
        """2 micro-steps per step: the trace says so and keeps the order that ran (fwd, bwd,
        fwd, bwd); wrap trains it bitwise as plain PyTorch does, the bytes as planned."""
        def make():
            m, x = self.tiny(layers=3)
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            return m, opt, x, quiet(self.profiled, m, opt, x, accumulate=2)

        t = make()[3]
        j = t.json()
        self.assertEqual(j["model"]["micro_steps"], 2)
        self.assertEqual(j["model"]["batch"], 4)  # two micro-batches of 2
        stages = [o["stage"] for o in j["ops"] if o["stage"] != "optim"]
        n = len(stages) // 2
        self.assertEqual(stages, (["fwd"] * (n // 2) + ["bwd"] * (n // 2)) * 2)
        self.same_training(make, accumulate=2)
        # a loop that accumulates otherwise than profiled: the op that differs, and why
        m, opt, x, t = make()
        with st.wrap(m, opt, stowage.plan(t, gpu=self.budget(t, 4)), t):
            with self.assertRaisesRegex(stowage.StowageError, r"op 12 is optimizer\.wte\.weight "
                                        r"\(optim\) here but wte \(fwd, micro-step 2 of 2\) in the "
                                        "plan's trace: the op differs; .*another number of "
                                        "micro-steps of gradient accumulation"):
                self.step(m, opt, x[:2], accumulate=1)

    def test_evaluation_between_steps(self):
        """model.eval() and a no_grad forward between steps: outside the plan, counted, and
        the training the same bitwise; the profile leaves the evaluations out of the trace."""
        def make():
            m, x = self.tiny()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            return m, opt, x, quiet(self.profiled, m, opt, x, evaluate=True)

        t = make()[3]
        self.assertEqual(len([o for o in t.json()["ops"] if o["stage"] == "fwd"]), 5)
        runs = self.same_training(make, evaluate=True, shares=(0.25,))
        m, opt, x, t = make()
        plain = self.same_training(make, shares=())[0][0]
        self.assertEqual(runs[0][0], plain)  # evaluating changes nothing of the training
        _, stats = self.train(m, opt, x, 3, t=t, share=0.25, evaluate=True)
        self.assertEqual(stats["unplanned_ops"], 3 * 5)

    def test_frozen_parameters(self):
        """requires_grad_(False) and parameters left out of the optimizer: frozen in the trace
        (no gradient, no optimizer op), chunks of their own without optimizer state in the
        plan, untouched by training, which is bitwise plain PyTorch's for the others."""
        def make():
            m, x = self.tiny(layers=3)
            m.wte.weight.requires_grad_(False)  # (and the tied head with it)
            trained = [q for n, q in m.named_parameters() if not n.startswith("h.0.")]
            opt = torch.optim.AdamW([q for q in trained if q.requires_grad], lr=1e-2)
            return m, opt, x, quiet(self.profiled, m, opt, x)

        m, opt, x, t = make()
        j = t.json()
        frozen = [x_["name"] for x_ in j["tensors"] if x_.get("frozen")]
        self.assertEqual(frozen, ["wte.weight"] + [n for n, _ in m.named_parameters()
                                                  if n.startswith("h.0.")])
        self.assertEqual(len([o for o in j["ops"] if o["stage"] == "optim"]),
                         len(j["tensors"]) - len(frozen))
        plan = stowage.plan(t, gpu=self.budget(t, 0.25))
        plan.save(self.path("p.json"), t)
        import json
        layout = json.load(open(self.path("p.json")))["layout"]
        self.assertTrue(any(c.get("frozen") for c in layout))
        start = m.wte.weight.detach().clone()
        runs = self.same_training(make)
        self.assertTrue(torch.equal(runs[0][1]["wte.weight"], start))

    def test_parameters_of_the_root_and_a_head_in_the_parent(self):
        """A class token and a position embedding on the root, and a head tied to the
        embedding computed in the parent's forward: held by every op of the iteration (an op of
        the root's own work begins the forward and the backward), trained bitwise."""
        for cls in (RootParams, ParentHead):
            def make():
                m, x = self.tiny(cls)
                opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
                return m, opt, x, quiet(self.profiled, m, opt, x)

            t = make()[3]
            j = t.json()
            ops = [o for o in j["ops"] if o["stage"] != "optim"]
            held = set(ops[0]["params"])
            self.assertEqual(ops[0]["name"], cls.__name__)
            self.assertEqual(ops[len(ops) // 2]["name"], cls.__name__ + ".bwd")
            self.assertTrue(all(held <= set(o["params"]) for o in ops))
            names = {j["tensors"][i]["name"] for i in held}
            self.assertEqual(names, {"cls", "pos_emb"} if cls is RootParams else {"wte.weight"})
            self.same_training(make)

    def test_a_head_in_the_parent_is_named_in_a_warning(self):
        m, x = self.tiny(ParentHead)
        opt = torch.optim.AdamW(m.parameters())
        with self.assertWarnsRegex(UserWarning, r"used outside the modules that hold them: "
                                   r"wte\.weight \(linear\); the trace holds them resident from "
                                   r"the first forward op to the last backward op \(0\.00 MiB"):
            t = self.profiled(m, opt, x)
        self.assertEqual(t.json()["source"]["warnings"], {"params_outside_ops": 1})

    def test_every_adam_option(self):
        """maximize, amsgrad, Adam's L2 decay, per-group hyperparameters, foreach/fused, a
        scheduler made inside the block: bitwise the library's step as PyTorch defines it, and
        within 1e-5 of torch's own."""
        options = [dict(cls=torch.optim.AdamW, maximize=True),
                   dict(cls=torch.optim.AdamW, amsgrad=True, weight_decay=0.1),
                   dict(cls=torch.optim.Adam, amsgrad=True, maximize=True),
                   dict(cls=torch.optim.Adam, weight_decay=0.1),
                   dict(cls=torch.optim.AdamW, foreach=True, weight_decay=0.05),
                   dict(cls=torch.optim.AdamW, fused=True),
                   dict(cls=torch.optim.Adam, decoupled_weight_decay=True, weight_decay=0.1),
                   dict(cls=torch.optim.AdamW, groups=True)]
        for o in options:
            o = dict(o)
            cls, groups = o.pop("cls"), o.pop("groups", False)
            o.setdefault("lr", 1e-2)

            def make():
                m, x = self.tiny()
                params = m.parameters()
                if groups:
                    params = [{"params": m.h.parameters(), "lr": 3e-3, "weight_decay": 0.2,
                               "betas": (0.8, 0.95)},
                              {"params": [m.wte.weight, m.ln_f.weight, m.ln_f.bias]}]
                opt = cls(params, **o)
                return m, opt, x, quiet(self.profiled, m, opt, x)

            runs = self.same_training(make, shares=(0.25,), learns=not o.get("maximize"))
            m, opt, x, _ = make()
            torch_losses = [self.step(m, opt, x) for _ in range(4)]
            for a, b in zip(runs[0][0], torch_losses):
                self.assertLess(abs(a - b), 1e-5 * abs(b), (cls.__name__, o))

    def test_a_scheduler_made_inside_the_block(self):
        runs = []
        for wrapped in (True, False):
            m, x = self.tiny()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            t = quiet(self.profiled, m, opt, x)
            w = st.wrap(m, opt, stowage.plan(t, gpu=self.budget(t, 0.25)), t) if wrapped \
                else None
            ref = None if wrapped else LibraryAdam(opt)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
            losses = []
            for _ in range(5):
                losses.append(self.step(m, opt, x, 1, ref))
                sched.step()
            if w:
                self.assertEqual(w.stats["deviations"], 0)
                st.unwrap(m)
            runs.append(losses)
        self.assertEqual(runs[0], runs[1])
        self.assertEqual(opt.param_groups[0]["lr"], 1e-2 / 4)

    def test_a_batch_larger_than_profiled_is_refused(self):
        m, x = self.tiny()
        opt = torch.optim.AdamW(m.parameters())
        t = quiet(self.profiled, m, opt, x)  # 4 x 8
        with st.wrap(m, opt, stowage.plan(t, gpu=self.budget(t, 0.25)), t) as w:
            with self.assertRaisesRegex(stowage.StowageError, r"^wrap: this forward's input is 8 "
                                        r"x 16 \(batch x sequence\), and the plan's trace was "
                                        r"profiled at 4 x 8 per micro-step"):
                loss_of(m, torch.randint(0, 64, (8, 16)))
            self.step(m, opt, x[:2])  # a smaller one (an epoch's last) trains
            self.assertEqual(w.stats["deviations"], 0)

    def test_a_step_completes_or_leaves_the_model_as_it_was(self):
        """A step refused part way (a sparse gradient) steps nothing; Ctrl-C during
        a step waits for its end; an exception in a forward abandons the iteration, and the next
        trains as if it had never begun: the losses and weights bitwise those of plain PyTorch
        doing the same."""
        import signal

        class Failing(TinyLM):
            fail = False

            def forward(self, x):
                y = self.wte(x)
                for k, b in enumerate(self.h):
                    if self.fail and k == 1:
                        raise RuntimeError("a failure in the forward")
                    y = b(y)
                return self.head(self.ln_f(y))

        runs = []
        for wrapped in (True, False):
            m, x = self.tiny(Failing, layers=3)
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            w = None
            ref = LibraryAdam(opt)
            if wrapped:
                t = quiet(self.profiled, m, opt, x)
                w = st.wrap(m, opt, stowage.plan(t, gpu=self.budget(t, 0.25)), t)
                ref = None
            losses = [self.step(m, opt, x, 1, ref) for _ in range(2)]
            if wrapped:
                before = {k: v.clone() for k, v in m.state_dict().items()}
                loss_of(m, x).backward()
                m.h[1].fc.weight.grad = m.h[1].fc.weight.grad.to_sparse()
                with self.assertRaisesRegex(stowage.StowageError, r"^wrap: h\.1\.fc\.weight has a "
                                            "sparse gradient, which the library's AdamW does not "
                                            "step$"):
                    opt.step()
                for k, v in m.state_dict().items():  # nothing stepped
                    self.assertTrue(torch.equal(v, before[k]), k)
                self.assertEqual(float(opt.state_dict()["state"][0]["step"]), 2.0)
                opt.zero_grad()
                # Ctrl-C in the middle of a step: raised when the step has ended (the refused
                # iteration abandoned at this forward)
                adam, sent = w.rt.adam, []

                def interrupting(*args, **kwargs):
                    if not sent:
                        sent.append(True)
                        os.kill(os.getpid(), signal.SIGINT)
                    return adam(*args, **kwargs)

                w.rt.adam = interrupting
                loss = loss_of(m, x)
                loss.backward()
                with self.assertRaises(KeyboardInterrupt):
                    opt.step()
                w.rt.adam = adam
                opt.zero_grad()
                losses.append(loss.item())
                self.assertEqual({int(float(s["step"])) for s in
                                  opt.state_dict()["state"].values()}, {3})
                # an exception in a forward: the next step begins afresh
                m.fail = True
                with self.assertRaisesRegex(RuntimeError, "a failure in the forward"):
                    loss_of(m, x)
                m.fail = False
                with self.assertWarnsRegex(UserWarning, r"the last iteration stopped after 2 of "
                                           "its 33 ops"):
                    losses.append(self.step(m, opt, x))
                losses += [self.step(m, opt, x) for _ in range(2)]
                stats = w.stats
                st.unwrap(m)
                # the refused step's and the failed forward's
                self.assertEqual(stats["abandoned_iterations"], 2)
                self.assertEqual(stats["deviations"], 0)
            else:
                losses += [self.step(m, opt, x, 1, ref) for _ in range(4)]
            runs.append((losses, {k: v.clone() for k, v in m.state_dict().items()}))
        self.assertEqual(runs[0][0], runs[1][0])
        for k, v in runs[0][1].items():
            self.assertTrue(torch.equal(v, runs[1][1][k]), k)

    def test_the_profile_warns_of_what_wrap_refuses(self):
        m, x = self.tiny()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        with self.assertWarnsRegex(UserWarning, "wrap would refuse this model: the optimizer is "
                                   r"SGD; .* use torch\.optim\.AdamW\(model\.parameters\(\), "):
            with st.profile(m, opt):
                self.step(m, opt, x)

    def test_iterations_that_differ_are_named(self):
        class Skipping(TinyLM):
            skip = False

            def forward(self, x):
                y = self.wte(x)
                for k, b in enumerate(self.h):
                    y = y if self.skip and k == 1 else b(y)
                return self.head(self.ln_f(y))

        m, x = self.tiny(Skipping, layers=2)
        opt = torch.optim.AdamW(m.parameters())
        with self.assertWarnsRegex(UserWarning, r"iteration 1 ran other ops than the last \(op "
                                   r"2 is h\.1 \(fwd\) there and ln_f \(fwd\) in the last: 10 "
                                   r"and 8 ops\)"):
            with st.profile(m, opt):
                self.step(m, opt, x)
                m.skip = True  # the block skipped from now on
                self.step(m, opt, x)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TestHuggingFace(unittest.TestCase):
    """GPT-2 and Llama (tied and untied) from transformers, built from configs with random
    weights: wrapped training bitwise across plans and equal to plain PyTorch, and a Trainer."""

    def setUp(self):
        try:
            import transformers  # noqa: F401
        except ImportError as e:
            self.skipTest("transformers is not installed: %s" % e)
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    @staticmethod
    def hf_step(m, opt, x, stepper=None):
        """A training step of a Hugging Face causal LM on token ids X: its loss."""
        loss = m(input_ids=x, labels=x).loss
        loss.backward()
        (stepper or opt).step()
        opt.zero_grad()
        return loss.item()

    @staticmethod
    def model(kind):
        import transformers as tf
        torch.manual_seed(0)
        if kind == "gpt2":
            return tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128,
                                                    n_positions=32, bos_token_id=0,
                                                    eos_token_id=0))
        if kind == "deepseek_v3":  # latent attention; a dense block, then experts and a shared one
            return tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
                num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                moe_intermediate_size=16, n_routed_experts=4, num_experts_per_tok=2,
                first_k_dense_replace=1, kv_lora_rank=8, q_lora_rank=12, qk_rope_head_dim=4,
                qk_nope_head_dim=8, v_head_dim=8, n_group=1, topk_group=1, vocab_size=128,
                max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "qwen3_next":  # Gated DeltaNet's linear attention in every other block
            return tf.Qwen3NextForCausalLM(tf.Qwen3NextConfig(
                num_hidden_layers=4, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                head_dim=16, intermediate_size=64, moe_intermediate_size=16,
                shared_expert_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                linear_value_head_dim=8, full_attention_interval=2, vocab_size=128,
                max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "granitemoehybrid":  # Mamba-2's mixer beside attention, experts
            return tf.GraniteMoeHybridForCausalLM(tf.GraniteMoeHybridConfig(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                layer_types=["mamba", "attention", "mamba"], mamba_n_heads=4, mamba_d_state=8,
                shared_intermediate_size=24, intermediate_size=16, num_local_experts=4,
                num_experts_per_tok=2, vocab_size=128, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "lfm2":  # a gated short convolution beside attention
            return tf.Lfm2ForCausalLM(tf.Lfm2Config(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                intermediate_size=96, block_multiple_of=16, full_attn_idxs=[1], vocab_size=128,
                max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "falcon_h1":  # Mamba-2's mixer beside attention in every block
            return tf.FalconH1ForCausalLM(tf.FalconH1Config(
                num_hidden_layers=2, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                intermediate_size=48, mamba_d_ssm=32, mamba_n_heads=4, mamba_d_state=8,
                mamba_chunk_size=8, projectors_bias=True, vocab_size=128,
                max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "nemotron_h":  # blocks of one part: Mamba-2, MLP, attention, experts
            return tf.NemotronHForCausalLM(tf.NemotronHConfig(
                hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                intermediate_size=48, mamba_num_heads=4, mamba_head_dim=8, n_groups=2,
                ssm_state_size=8, chunk_size=8, n_routed_experts=4, num_experts_per_tok=2,
                moe_intermediate_size=16, moe_shared_expert_intermediate_size=24,
                hybrid_override_pattern="M-*E", vocab_size=128, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "mimo_v2_flash":  # narrower values; sliding blocks with sinks, more kv heads
            return tf.MiMoV2FlashForCausalLM(tf.MiMoV2FlashConfig(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=4, num_key_value_heads=1,
                head_dim=12, v_head_dim=8, intermediate_size=48, moe_intermediate_size=16,
                n_routed_experts=4, num_experts_per_tok=2,
                layer_types=["full_attention", "sliding_attention", "full_attention"],
                vocab_size=128, max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                pad_token_id=0))
        if kind == "lfm3":  # short convolutions, sliding and full attention gated a head
            return tf.Lfm3ForCausalLM(tf.Lfm3Config(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                head_dim=16, intermediate_size=48, conv_L_cache=3,
                layer_types=["conv", "sliding_attention", "full_attention"], vocab_size=128,
                max_position_embeddings=32, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "gemma4_text":  # a global block of wider heads, keys and values shared,
            # per-layer embeddings, experts beside the MLP
            return tf.Gemma4ForCausalLM(tf.Gemma4TextConfig(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                head_dim=16, global_head_dim=32, intermediate_size=48, num_kv_shared_layers=1,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                hidden_size_per_layer_input=4, vocab_size_per_layer_input=128,
                enable_moe_block=True, num_experts=4, top_k_experts=2, moe_intermediate_size=16,
                vocab_size=128, max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                pad_token_id=0))
        if kind == "gemma3n_text":  # AltUp over three copies of the stream, LAuReL, per-layer
            # embeddings, keys and values shared
            return tf.Gemma3nForCausalLM(tf.Gemma3nTextConfig(
                num_hidden_layers=3, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                head_dim=16, intermediate_size=48, num_kv_shared_layers=1,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                hidden_size_per_layer_input=4, vocab_size_per_layer_input=128,
                altup_num_inputs=3, laurel_rank=4, vocab_size=128, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "longcat_flash":  # layers of two blocks, experts and zero experts
            return tf.LongcatFlashForCausalLM(tf.LongcatFlashConfig(
                num_layers=1, hidden_size=32, num_attention_heads=2, ffn_hidden_size=48,
                expert_ffn_hidden_size=16, n_routed_experts=4, zero_expert_num=2, moe_topk=2,
                kv_lora_rank=8, q_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=4,
                v_head_dim=8, head_dim=4, vocab_size=128, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "minimax_m3_vl_text":  # a block indexer, a dense block, experts
            return tf.MiniMaxM3VLForCausalLM(tf.MiniMaxM3VLTextConfig(
                num_hidden_layers=2, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                head_dim=16, intermediate_size=16, dense_intermediate_size=48,
                shared_intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                index_n_heads=1, index_head_dim=8, index_block_size=4, index_topk_blocks=2,
                layer_types=["minimax_m3_sparse", "full_attention"],
                mlp_layer_types=["dense", "sparse"], vocab_size=128, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "gemma3":  # the multimodal model: SigLIP's tower, which text never reaches
            return tf.Gemma3ForConditionalGeneration(tf.Gemma3Config(
                text_config=tf.Gemma3TextConfig(
                    num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
                    num_key_value_heads=1, head_dim=16, intermediate_size=48, sliding_window=8,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                    pad_token_id=0),
                vision_config=tf.SiglipVisionConfig(
                    hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                    num_attention_heads=2, image_size=28, patch_size=14, vision_use_head=False),
                mm_tokens_per_image=4, image_token_index=127, boi_token_index=125,
                eoi_token_index=126))
        if kind == "gemma4":  # the multimodal model: Gemma 4's vision and audio towers
            return tf.Gemma4ForConditionalGeneration(tf.Gemma4Config(
                text_config=tf.Gemma4TextConfig(
                    num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
                    num_key_value_heads=1, head_dim=16, global_head_dim=16,
                    intermediate_size=48, layer_types=["sliding_attention", "full_attention"],
                    hidden_size_per_layer_input=4, vocab_size_per_layer_input=128,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=tf.Gemma4VisionConfig(
                    num_hidden_layers=1, hidden_size=16, intermediate_size=24,
                    num_attention_heads=2, num_key_value_heads=2, head_dim=8,
                    position_embedding_size=16, patch_size=4),
                audio_config=tf.Gemma4AudioConfig(
                    num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                    output_proj_dims=24, subsampling_conv_channels=[8, 4]),
                image_token_id=127, boi_token_id=125, eoi_token_id=126, audio_token_id=124,
                boa_token_id=123, eoa_token_index=122, video_token_id=121))
        if kind == "mistral3":  # the multimodal model: Pixtral's tower, its projector
            return tf.Mistral3ForConditionalGeneration(tf.Mistral3Config(
                text_config=tf.MistralConfig(
                    num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
                    num_key_value_heads=1, head_dim=16, intermediate_size=48, vocab_size=128,
                    max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                    pad_token_id=0),
                vision_config=tf.PixtralVisionConfig(
                    hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                    num_attention_heads=2, head_dim=8, patch_size=4, image_size=16),
                image_token_index=127, tie_word_embeddings=False))
        if kind == "llava":  # the multimodal model: CLIP's tower, LLaVA's projector
            return tf.LlavaForConditionalGeneration(tf.LlavaConfig(
                text_config=tf.LlamaConfig(
                    num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                    num_attention_heads=2, num_key_value_heads=1, vocab_size=128,
                    max_position_embeddings=32, bos_token_id=0, eos_token_id=0,
                    pad_token_id=0),
                vision_config=tf.CLIPVisionConfig(
                    hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                    num_attention_heads=2, patch_size=4, image_size=16),
                image_token_index=127))
        if kind == "llava_onevision":  # SigLIP's tower, LLaVA's projector, the image_newline
            return tf.LlavaOnevisionForConditionalGeneration(tf.LlavaOnevisionConfig(
                text_config=dict(
                    model_type="qwen2", num_hidden_layers=2, hidden_size=32,
                    intermediate_size=48, num_attention_heads=2, num_key_value_heads=1,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=dict(model_type="siglip_vision_model", hidden_size=16,
                                   intermediate_size=24, num_hidden_layers=1,
                                   num_attention_heads=2, patch_size=4, image_size=16),
                image_token_index=127, video_token_index=126))
        if kind == "paligemma":  # SigLIP's tower, one projection, a Gemma inside
            return tf.PaliGemmaForConditionalGeneration(tf.PaliGemmaConfig(
                text_config=dict(
                    model_type="gemma", num_hidden_layers=2, hidden_size=32,
                    intermediate_size=48, num_attention_heads=2, num_key_value_heads=1,
                    head_dim=16, vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=dict(model_type="siglip_vision_model", hidden_size=16,
                                   intermediate_size=24, num_hidden_layers=1,
                                   num_attention_heads=2, patch_size=4, image_size=16),
                projection_dim=32, image_token_index=127))
        if kind == "internvl":  # InternViT, InternVL's projector, a Qwen2 inside
            return tf.InternVLForConditionalGeneration(tf.InternVLConfig(
                text_config=dict(
                    model_type="qwen2", num_hidden_layers=2, hidden_size=32,
                    intermediate_size=48, num_attention_heads=2, num_key_value_heads=1,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=dict(hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                                   num_attention_heads=2, patch_size=4, image_size=16,
                                   attention_bias=True),
                image_token_id=127))
        if kind == "smolvlm":  # SigLIP's blocks, the pixel shuffle's connector, a Llama inside
            return tf.SmolVLMForConditionalGeneration(tf.SmolVLMConfig(
                text_config=dict(
                    model_type="llama", num_hidden_layers=2, hidden_size=32,
                    intermediate_size=48, num_attention_heads=2, num_key_value_heads=1,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=dict(hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                                   num_attention_heads=2, patch_size=4, image_size=16),
                image_token_id=127))
        if kind == "mllama":  # Llama 3.2 Vision's: a cross-attention block text skips
            return tf.MllamaForConditionalGeneration(tf.MllamaConfig(
                text_config=dict(
                    num_hidden_layers=3, cross_attention_layers=[1], hidden_size=32,
                    intermediate_size=48, num_attention_heads=2, num_key_value_heads=1,
                    vocab_size=128, max_position_embeddings=32, bos_token_id=0,
                    eos_token_id=0, pad_token_id=0),
                vision_config=dict(hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                                   num_global_layers=1, attention_heads=2, patch_size=4,
                                   image_size=16, max_num_tiles=2,
                                   supported_aspect_ratios=[[1, 1], [1, 2]],
                                   vision_output_dim=32),
                image_token_index=128))
        if kind == "glm4v":  # GLM-4.1V's: its tower and downsampling merger, a GLM-4 inside
            return tf.Glm4vForConditionalGeneration(tf.Glm4vConfig(
                text_config=dict(
                    num_hidden_layers=2, hidden_size=32, intermediate_size=48,
                    num_attention_heads=2, num_key_value_heads=1, vocab_size=128,
                    max_position_embeddings=32, rope_parameters={
                        "rope_type": "default", "mrope_section": [1, 1, 2],
                        "partial_rotary_factor": 0.5},
                    pad_token_id=0),
                vision_config=dict(depth=1, hidden_size=16, out_hidden_size=32,
                                   intermediate_size=24, num_heads=2, image_size=16,
                                   patch_size=4),
                image_token_id=127, video_token_id=126, image_start_token_id=125,
                image_end_token_id=124, video_start_token_id=123, video_end_token_id=122))
        if kind == "qwen2_5_vl":  # the multimodal model: Qwen2.5-VL's tower, its merger
            return tf.Qwen2_5_VLForConditionalGeneration(tf.Qwen2_5_VLConfig(
                text_config=dict(
                    num_hidden_layers=2, hidden_size=32, intermediate_size=48,
                    num_attention_heads=2, num_key_value_heads=1, vocab_size=128,
                    max_position_embeddings=32, rope_scaling={"type": "mrope",
                                                              "mrope_section": [2, 3, 3]},
                    bos_token_id=0, eos_token_id=0, pad_token_id=0),
                vision_config=dict(depth=1, hidden_size=16, intermediate_size=24, num_heads=2,
                                   out_hidden_size=32, patch_size=4, fullatt_block_indexes=[0]),
                image_token_id=127, video_token_id=126, vision_start_token_id=125,
                vision_end_token_id=124))
        if kind == "qwen3_vl":  # the multimodal model: Qwen3-VL's tower and DeepStack
            return tf.Qwen3VLForConditionalGeneration(tf.Qwen3VLConfig(
                text_config=dict(
                    num_hidden_layers=2, hidden_size=32, intermediate_size=48,
                    num_attention_heads=2, num_key_value_heads=1, head_dim=16, vocab_size=128,
                    max_position_embeddings=32, rope_scaling={"rope_type": "default",
                                                              "mrope_section": [2, 3, 3],
                                                              "mrope_interleaved": True},
                    bos_token_id=0, eos_token_id=0, pad_token_id=0),
                vision_config=dict(depth=2, hidden_size=16, intermediate_size=24, num_heads=2,
                                   out_hidden_size=32, patch_size=4, num_position_embeddings=16,
                                   deepstack_visual_indexes=[0]),
                image_token_id=127, video_token_id=126, vision_start_token_id=125,
                vision_end_token_id=124))
        if kind == "mamba2":  # Mamba-2's mixer alone in every block, no attention, no MLP
            return tf.Mamba2ForCausalLM(tf.Mamba2Config(
                num_hidden_layers=2, hidden_size=32, num_heads=4, head_dim=16, n_groups=2,
                state_size=8, vocab_size=128, bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "mamba":  # Mamba-1's mixer alone in every block
            return tf.MambaForCausalLM(tf.MambaConfig(
                num_hidden_layers=2, hidden_size=32, state_size=8, vocab_size=128,
                bos_token_id=0, eos_token_id=0, pad_token_id=0))
        if kind == "bloom":  # ALiBi, a norm over the embeddings
            return tf.BloomForCausalLM(tf.BloomConfig(n_layer=2, hidden_size=32, n_head=2,
                                                      vocab_size=128, bos_token_id=0,
                                                      eos_token_id=0, pad_token_id=0))
        return tf.LlamaForCausalLM(tf.LlamaConfig(
            num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
            num_key_value_heads=1, vocab_size=128, max_position_embeddings=32,
            tie_word_embeddings=kind == "llama-tied", bos_token_id=0, eos_token_id=0,
            pad_token_id=0))

    def replayed(self, m, opt, step, t, share, what):
        """Three STEPs of M and OPT wrapped with a plan of T at SHARE of its model data (16
        bytes a parameter) beside its non-model peak: their losses and the weights after them,
        and the wrap, whose bytes moved must be the plan's, with no deviation, within the
        budget."""
        budget = int(16 * t.summary()["params"] * share) + t.summary()["peak_nonmodel"]["bytes"]
        plan = stowage.plan(t, gpu=budget)
        with st.wrap(m, opt, plan, t) as w:
            losses = [step(m, opt) for _ in range(3)]
            weights = {k: v.clone() for k, v in m.state_dict().items()}
        pred = stowage.check(plan, t)
        self.assertEqual(w.stats["h2d_bytes"], pred["h2d_bytes"], what)
        self.assertEqual(w.stats["deviations"], 0, what)
        self.assertLessEqual(w.stats["peak_device_bytes"], budget, what)
        return losses, weights, w

    def test_models_train_as_plain_pytorch(self):
        """GPT-2, Llama (tied and untied), BLOOM, DeepSeek-V3 (latent attention, a dense
        block then experts), Qwen3-Next (Gated DeltaNet's linear attention beside softmax
        attention, experts), a Granite 4.0 hybrid (Mamba-2's mixer beside attention, experts)
        LFM2 (a short convolution beside attention), Mamba-2 and Mamba (their mixers alone),
        Falcon-H1 (Mamba-2's mixer and attention side by side in every block), Nemotron-H
        (blocks of one part each: Mamba-2, an MLP, attention, experts), Gemma 4 (a global
        block, shared keys and values, per-layer embeddings, experts beside the MLP), LFM3
        (short convolutions, attention gated a head, norms after each branch too),
        MiMo-V2-Flash (values narrower than keys, sinks in its sliding blocks, experts),
        Gemma 3n (AltUp over copies of the stream, LAuReL, per-layer embeddings), LongCat-Flash
        (layers of two blocks, experts and zero experts), MiniMax-M3 (a block indexer, a dense
        block among experts), Gemma 3's, Gemma 4's, Mistral 3's, LLaVA's, Qwen2.5-VL's,
        Qwen3-VL's, LLaVA-OneVision's, PaliGemma's, InternVL's, SmolVLM's, GLM-4.1V's and
        Llama 3.2 Vision's multimodal models (Llama 3.2 Vision's cross-attention blocks, which text
        skips, frozen with its tower)
        (their towers, which no gradient of a text step reaches: frozen in the trace), each
        step 2 micro-steps with an evaluation between steps:
        wrapped at everything resident and at a quarter of the model data, the losses and the
        weights state_dict gathers inside wrap bitwise plain PyTorch's."""
        x = torch.randint(0, 128, (4, 16), generator=torch.Generator().manual_seed(1))

        def step(m, opt, stepper=None):
            loss = 0.0
            for k in range(2):
                part = m(input_ids=x[k::2], labels=x[k::2]).loss / 2
                part.backward()
                loss += part.item()
            (stepper or opt).step()
            opt.zero_grad()
            with torch.no_grad():
                m(input_ids=x[:1])
            return loss

        for kind in ("gpt2", "llama", "llama-tied", "bloom", "deepseek_v3", "qwen3_next",
                     "granitemoehybrid", "lfm2", "mamba2", "mamba", "falcon_h1",
                     "nemotron_h", "gemma4_text", "lfm3", "mimo_v2_flash", "gemma3n_text",
                     "longcat_flash", "minimax_m3_vl_text", "gemma3", "gemma4", "mistral3",
                     "llava", "qwen2_5_vl", "qwen3_vl", "llava_onevision", "paligemma",
                     "internvl", "smolvlm", "mllama", "glm4v"):
            runs = []
            for share in (4, 0.25, None):
                m = self.model(kind)
                m.eval()  # no dropout: the runs compare bitwise
                opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
                start = {k: v.clone() for k, v in m.state_dict().items()}
                # Gemma 4's multimodal model looks its embeddings up in its own forward, outside
                # the language model that holds them: said, and held resident
                said = self.assertWarnsRegex(UserWarning, "parameters used outside the modules "
                                             "that hold them: model.language_model.embed_tokens"
                                             ".weight") if kind == "gemma4" else \
                    contextlib.nullcontext()
                with said, st.profile(m, opt) as p:
                    step(m, opt)
                t = p.trace()
                self.assertEqual(t.json()["model"]["micro_steps"], 2)
                m.load_state_dict(start)
                opt.state.clear()
                if share is None:
                    ref = LibraryAdam(opt)
                    runs.append(([step(m, opt, ref) for _ in range(3)], m.state_dict()))
                    continue
                losses, weights, w = self.replayed(m, opt, step, t, share, kind)
                runs.append((losses, weights))
                self.assertEqual(w.stats["unplanned_ops"], 3 * len(
                    [o for o in t.json()["ops"] if o["stage"] == "fwd"]) // 2, kind)
            for losses, weights in runs[:2]:
                self.assertEqual(losses, runs[2][0], kind)
                for k, v in weights.items():
                    self.assertTrue(torch.equal(v, runs[2][1][k]), (kind, k))

    def test_vision_language_models_train_on_images(self):
        """LLaVA's and Qwen2.5-VL's multimodal models fine-tuned on images and text, their
        images through the tower and projector inside the step: the whole model trained (the
        gradients reach the tower), and the language model alone (the tower and projector frozen,
        as a LoRA or LM-only fine-tune leaves them), each step 2 micro-steps with an evaluation
        between steps: wrapped at a quarter of the model data, the losses and the weights bitwise
        plain PyTorch's, the bytes moved the plan's."""
        g = torch.Generator().manual_seed(3)

        def batch(kind, k):
            """The k-th micro-batch: two sequences of an image and text, as the processor
            writes them (the image's placeholder tokens, the pixels, their grid)."""
            text = torch.randint(1, 120, (2, 8), generator=g)
            if kind == "llava":  # 16 x 16 pixels, 16 patches of 4: 16 image tokens
                ids = torch.cat([torch.full((2, 16), 127), text], 1)
                pixels = torch.randn(2, 3, 16, 16, generator=g)
                extra = {}
            else:  # Qwen2.5-VL: 8 x 8 pixels, 2 x 2 patches of 4 merged into one token
                ids = torch.cat([torch.tensor([[125, 127, 124]] * 2), text], 1)
                pixels = torch.randn(2 * 4, 3 * 2 * 16, generator=g)
                extra = {"image_grid_thw": torch.tensor([[1, 2, 2]] * 2)}
            labels = ids.masked_fill(ids >= 124, -100)
            return dict(input_ids=ids, labels=labels, pixel_values=pixels, **extra)

        for kind in ("llava", "qwen2_5_vl"):
            g.manual_seed(3)
            batches = [batch(kind, k) for k in range(2)]

            def step(m, opt, stepper=None):
                loss = 0.0
                for b in batches:
                    part = m(**b).loss / 2
                    part.backward()
                    loss += part.item()
                (stepper or opt).step()
                opt.zero_grad()
                with torch.no_grad():
                    m(**batches[0])
                return loss

            for frozen in (False, True):
                runs = []
                for share in (0.25, None):
                    torch.manual_seed(0)
                    m = self.model(kind)
                    m.eval()  # no dropout: the runs compare bitwise
                    if frozen:
                        tower = m.model.vision_tower if kind == "llava" else m.model.visual
                        tower.requires_grad_(False)
                        if kind == "llava":
                            m.model.multi_modal_projector.requires_grad_(False)
                    opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad],
                                            lr=1e-2)
                    start = {k: v.clone() for k, v in m.state_dict().items()}
                    if share is None:
                        ref = LibraryAdam(opt)
                        runs.append(([step(m, opt, ref) for _ in range(3)], m.state_dict()))
                        continue
                    with st.profile(m, opt) as p:
                        step(m, opt)
                    t = p.trace()
                    m.load_state_dict(start)
                    opt.state.clear()
                    what = (kind, "frozen tower" if frozen else "trained")
                    losses, weights, w = self.replayed(m, opt, step, t, share, what)
                    runs.append((losses, weights))
                    self.assertGreater(w.stats["h2d_bytes"], 0, what)
                self.assertEqual(runs[0][0], runs[1][0], what)
                for k, v in runs[0][1].items():
                    self.assertTrue(torch.equal(v, runs[1][1][k]), (what, k))

    def test_blocks_recomputed_and_offloaded(self):
        """GPT-2 and Llama with their decoder layers' activations kept, recomputed and
        offloaded to host memory (plan(activations=...)): the losses bitwise across the three,
        the bytes moved each way the plan's (its chunks' and the offloaded blocks' saved
        tensors), no deviation."""
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
        for kind in ("gpt2", "llama"):
            m = self.model(kind)
            m.eval()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
            start = {k: v.clone() for k, v in m.state_dict().items()}
            with st.profile(m, opt) as p:
                self.hf_step(m, opt, x)
            t = p.trace()
            names = [b["name"] for b in t.json()["blocks"]]
            runs = {}
            for activations in ("keep", "recompute", "offload"):
                m.load_state_dict(start)
                opt.state.clear()
                plan = stowage.plan(t, gpu="1GiB", activations=activations)
                with st.wrap(m, opt, plan, t) as w:
                    runs[activations] = [self.hf_step(m, opt, x) for _ in range(3)]
                    pred = stowage.check(plan, t)
                    self.assertEqual(w.stats["h2d_bytes"], pred["h2d_bytes"], kind)
                    self.assertEqual(w.stats["d2h_bytes"], pred["d2h_bytes"], kind)
                    self.assertEqual(w.stats["deviations"], 0, kind)
                if activations != "keep":
                    self.assertEqual(len(plan.predictions[activations]), len(names), kind)
            self.assertEqual(runs["keep"], runs["recompute"], kind)
            self.assertEqual(runs["keep"], runs["offload"], kind)
            self.assertIn("model.layers.1" if kind == "llama" else "transformer.h.1", names)

    def test_lora_blocks_offloaded(self):
        """A LoRA Llama's blocks offloaded: autograd does not save the storage of a decoder
        block's input there, and the profile counts the input as the block's input all the
        same, so that what wrap copies out and back is what the plan counts, to the byte (the
        input's 4 KiB each way more before)."""
        try:
            import peft
        except ImportError as e:
            self.skipTest("peft is not installed: %s" % e)
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
        m = peft.get_peft_model(self.model("llama"), peft.LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
        opt = torch.optim.AdamW([q for q in m.parameters() if q.requires_grad], lr=1e-2)
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt) as p:
            self.hf_step(m, opt, x)
        t = p.trace()
        m.load_state_dict(start)
        opt.state.clear()
        plan = stowage.plan(t, gpu="1GiB", activations="offload", measured_times=True)
        checked = stowage.check(plan, t)
        with st.wrap(m, opt, plan, t) as w:
            for _ in range(2):
                self.hf_step(m, opt, x)
            self.assertEqual(w.stats["deviations"], 0)
            self.assertGreater(w.offloaded_last, 0)
            self.assertEqual((w.stats["h2d_bytes"], w.stats["d2h_bytes"]),
                             (checked["h2d_bytes"], checked["d2h_bytes"]))

    def test_lora_with_peft(self):
        """LoRA adapters from peft on a Llama: the base frozen (its chunks without optimizer
        state, untouched), the adapters trained bitwise as plain PyTorch trains them, and
        save_pretrained writes the adapters' trained weights."""
        try:
            import peft
        except ImportError as e:
            self.skipTest("peft is not installed: %s" % e)
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))

        def step(m, opt, stepper=None):
            return self.hf_step(m, opt, x, stepper)

        runs = []
        for share in (0.25, None):
            m = peft.get_peft_model(self.model("llama"), peft.LoraConfig(
                r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
            opt = torch.optim.AdamW([q for q in m.parameters() if q.requires_grad], lr=1e-2)
            base = {k: v.clone() for k, v in m.state_dict().items() if "lora" not in k}
            if share is None:
                ref = LibraryAdam(opt)
                runs.append([step(m, opt, ref) for _ in range(3)])
            else:
                start = {k: v.clone() for k, v in m.state_dict().items()}
                with st.profile(m, opt) as p:
                    step(m, opt)
                t = p.trace()
                m.load_state_dict(start)
                opt.state.clear()
                j = t.json()
                frozen = [x_["name"] for x_ in j["tensors"] if x_.get("frozen")]
                self.assertEqual(len(frozen), len(j["tensors"]) - 8)  # 2 layers x 2 x (A, B)
                self.assertTrue(all("lora" not in n for n in frozen))
                n = t.summary()["params"]
                plan = stowage.plan(t, gpu=int(16 * n * share) +
                                    t.summary()["peak_nonmodel"]["bytes"])
                with st.wrap(m, opt, plan, t) as w:
                    runs.append([step(m, opt) for _ in range(3)])
                    m.save_pretrained(self.dir.name)
                    adapters = {k: v.clone() for k, v in m.state_dict().items() if "lora" in k}
                self.assertEqual(w.stats["deviations"], 0)
                self.assertEqual(w.stats["h2d_bytes"], stowage.check(plan, t)["h2d_bytes"])
            for k, v in base.items():
                self.assertTrue(torch.equal(m.state_dict()[k], v), k)
        self.assertEqual(runs[0], runs[1])
        from safetensors.torch import load_file
        saved = load_file(os.path.join(self.dir.name, "adapter_model.safetensors"))
        self.assertEqual(len(saved), 8)
        for k, v in saved.items():
            match = [a for n_, a in adapters.items() if n_.replace(".default", "").endswith(
                k.replace("base_model.model.", ""))]
            self.assertEqual(len(match), 1, k)
            self.assertTrue(torch.equal(v, match[0]), k)

    def test_a_trainer(self):
        """A Hugging Face Trainer given the wrapped model and optimizer: 20 steps with an
        evaluation and a save_pretrained; from_pretrained gives bitwise the weights."""
        import transformers as tf
        m = self.model("gpt2")
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        data = [{"input_ids": torch.randint(0, 128, (16,), generator=torch.Generator()
                                            .manual_seed(i))} for i in range(8)]
        for d in data:
            d["labels"] = d["input_ids"]
        args = tf.TrainingArguments(output_dir=self.dir.name, per_device_train_batch_size=2,
                                    max_steps=20, report_to=[], save_strategy="no",
                                    eval_strategy="steps", eval_steps=10, logging_steps=5,
                                    use_cpu=True, dataloader_num_workers=0,
                                    disable_tqdm=True)
        with st.profile(m, opt) as p:
            x = torch.stack([d["input_ids"] for d in data[:2]])
            m(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
        t = p.trace()
        n = t.summary()["params"]
        plan = stowage.plan(t, gpu=4 * n + t.summary()["peak_nonmodel"]["bytes"])
        model, optimizer = st.wrap(m, opt, plan, t)
        sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
        trainer = tf.Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:4],
                             optimizers=(optimizer, sched))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
        stats = m._stowage_wrap.stats
        self.assertEqual(stats["deviations"], 0)
        self.assertGreater(stats["unplanned_ops"], 0)  # the evaluations
        self.assertEqual(int(float(optimizer.state_dict()["state"][0]["step"])), 21)
        out = os.path.join(self.dir.name, "saved")
        model.save_pretrained(out)
        weights = {k: v.clone() for k, v in model.state_dict().items()}
        st.unwrap(model)
        loaded = tf.GPT2LMHeadModel.from_pretrained(out)
        for k, v in loaded.state_dict().items():
            self.assertTrue(torch.equal(v, weights[k]), k)
            self.assertTrue(torch.equal(v, model.state_dict()[k]), k)


if __name__ == "__main__":
    unittest.main()
