"""stowage.torch in mixed precision: profile(precision="bf16" | "fp16") records a 16-bit trace,
wrap trains it on 16-bit views of the param chunks beside fp32 masters, and the losses are
bitwise those of a plain PyTorch loop that keeps fp32 masters, computes on a 16-bit copy made
each step and steps the masters with the library's AdamW (MixedReference); fp16 with the loop's
torch.amp.GradScaler or stowage's LossScale; LoRA over a frozen 16-bit base; and the refusals.
Skips without PyTorch."""
import json
import os
import tempfile
import unittest

import stowage

try:
    import torch
    import stowage.torch as st
except ImportError as e:  # the C library and the CLI never need PyTorch
    torch = None
    WHY = str(e)

if torch is not None:
    from test_torch import TinyLM
    from test_torch_loop import quiet

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16} if torch else {}


def loss_of(m, x):
    return torch.nn.functional.cross_entropy(m(x).flatten(0, 1).float(), x.flatten())


class MixedReference:
    """The plain PyTorch loop of mixed precision: fp32 masters kept here, the model's parameters
    a 16-bit copy of them made before each step's forward, the 16-bit gradients widened (divided
    by the loss scale they carry) and the masters stepped with the library's AdamW
    (stowage.adam), or with torch's own AdamW when TORCH_ADAMW."""

    def __init__(self, m, precision, lr=1e-2, weight_decay=0.01, torch_adamw=False):
        self.params = [q for q in m.parameters() if q.requires_grad]
        self.frozen = [q for q in m.parameters() if not q.requires_grad]
        self.dtype = DTYPES[precision]
        self.device = self.params[0].device  # the masters and moments stay in host memory
        self.masters = [q.detach().cpu().clone() for q in self.params]
        self.lr, self.wd = lr, weight_decay
        self.state = [[torch.zeros(q.shape), torch.zeros(q.numel()), 0] for q in self.params]
        self.torch_opt = torch.optim.AdamW(self.masters, lr=lr, weight_decay=weight_decay) \
            if torch_adamw else None
        for q in self.frozen:  # a frozen base is held in 16-bit only
            q.data = q.data.to(self.dtype)

    def copies(self):
        for q, master in zip(self.params, self.masters):
            q.grad = None
            q.data = master.to(self.device, self.dtype)

    def step(self, scale=1.0):
        grads = [q.grad.float().cpu() * (1.0 / scale) for q in self.params]
        if self.torch_opt is not None:
            for master, g in zip(self.masters, grads):
                master.grad = g
            self.torch_opt.step()
            return
        for q, master, s, g in zip(self.params, self.masters, self.state, grads):
            g = g.contiguous()
            s[2] += 1
            stowage.adam(g.data_ptr(), master.data_ptr(), s[0].data_ptr(), s[1].data_ptr(),
                         q.numel(), s[2], lr=self.lr, weight_decay=self.wd)

    def train(self, m, x, steps, scale=1.0, step_loss=None):
        losses = []
        for _ in range(steps):
            self.copies()
            loss = (step_loss or loss_of)(m, x)
            (loss * scale if scale != 1.0 else loss).backward()
            losses.append(loss.item())
            self.step(scale)
        self.copies()
        return losses


@unittest.skipIf(torch is None, "PyTorch is not installed: %s" % (None if torch else WHY))
class TestMixedPrecision(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    @staticmethod
    def tiny():
        torch.manual_seed(0)
        m = TinyLM()
        return m, torch.optim.AdamW(m.parameters(), lr=1e-2), torch.randint(0, 64, (4, 8))

    @staticmethod
    def step(m, opt, x, scaler=None, loss=loss_of):
        value = loss(m, x)
        if scaler is not None:
            scaler.scale(value).backward()
            scaler.step(opt)
            scaler.update()
        else:
            value.backward()
            opt.step()
        opt.zero_grad()
        return value.item()

    def profiled(self, precision, make=None, scaler=None, loss_scale=None):
        m, opt, x = (make or self.tiny)()
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt, precision=precision, loss_scale=loss_scale) as p:
            for _ in range(2):
                self.step(m, opt, x, scaler)
        m.load_state_dict(start)
        return p.trace()

    @staticmethod
    def plan_at(t, share):
        """A plan at SHARE of the model data (14 bytes a parameter in mixed precision) beside the
        peak non-model memory, or the least above it that fits."""
        budget = int(14 * t.summary()["params"] * share) + t.summary()["peak_nonmodel"]["bytes"]
        for _ in range(20):
            try:
                return stowage.plan(t, gpu=budget)
            except stowage.StowageError:
                budget = budget * 9 // 8
        raise AssertionError("no plan fits")

    def wrapped(self, t, plan, steps=5, scaler_of=None, loss_scale=None, make=None):
        m, opt, x = (make or self.tiny)()
        scaler = scaler_of() if scaler_of else None
        with st.wrap(m, opt, plan, t, loss_scale=loss_scale) as w:
            losses = [self.step(m, opt, x, scaler) for _ in range(steps)]
        pred = stowage.check(plan, t)
        self.assertEqual((w.stats["h2d_bytes"], w.stats["d2h_bytes"]),
                         (pred["h2d_bytes"], pred["d2h_bytes"]))
        self.assertEqual(w.stats["deviations"], 0)
        return losses, m, w

    def test_the_trace_and_plan_are_16_bit(self):
        """The profile's tensors are the copy's dtype and the model comes back fp32; the plan's
        param chunks hold 2 bytes a parameter, 14 in all with the fp32 master and moments."""
        for precision in ("bf16", "fp16"):
            m, opt, x = self.tiny()
            with st.profile(m, opt, precision=precision) as p:
                self.step(m, opt, x, torch.amp.GradScaler("cpu") if precision == "fp16"
                          else None)
            self.assertEqual({q.dtype for q in m.parameters()}, {torch.float32})
            j = p.trace().json()
            self.assertEqual({x_["dtype"] for x_ in j["tensors"]}, {precision})
            s = p.trace().summary()
            n = s["params"]
            self.assertEqual(n, sum(q.numel() for q in m.parameters()))
            self.assertEqual(s["model_bytes"], {"param": 2 * n, "master": 4 * n, "momentum": 4 * n,
                                                "variance": 4 * n, "total": 14 * n})
            path = os.path.join(self.dir.name, "plan.json")
            self.plan_at(p.trace(), 4).save(path, p.trace())
            with open(path) as f:
                self.assertEqual(json.load(f)["chunks"]["dtype"], precision)

    def test_bf16_trains_as_the_reference_loop(self):
        """bf16 wrapped at everything resident and at a quarter of the model data: the losses
        and the weights unwrap hands back bitwise the reference loop's."""
        t = self.profiled("bf16")
        runs = [self.wrapped(t, self.plan_at(t, share)) for share in (4, 0.25)]
        m, _, x = self.tiny()
        ref = MixedReference(m, "bf16")
        losses = ref.train(m, x, 5)
        for got, wm, _ in runs:
            self.assertEqual(got, losses)
            for (name, q), master in zip(wm.named_parameters(), ref.masters):
                self.assertEqual(q.dtype, torch.float32)
                self.assertTrue(torch.equal(q, master), name)
        self.assertLess(losses[-1], losses[0])

    def test_fp16_with_a_grad_scaler(self):
        """fp16 with the loop's torch.amp.GradScaler: the wrapped step unscales in fp32; bitwise
        the reference loop that scales its loss by 2^16."""
        t = self.profiled("fp16", scaler=torch.amp.GradScaler("cpu"))
        runs = [self.wrapped(t, self.plan_at(t, share),
                             scaler_of=lambda: torch.amp.GradScaler("cpu"))[0]
                for share in (4, 0.25)]
        m, _, x = self.tiny()
        ref = MixedReference(m, "fp16").train(m, x, 5, scale=2.0 ** 16)
        self.assertEqual(runs, [ref, ref])

    def test_fp16_with_stowage_loss_scale(self):
        """LossScale scales the gradients at the model's outputs in their dtype: bitwise the
        reference scaling there; its state travels in the optimizer's state_dict."""
        t = self.profiled("fp16", loss_scale=True)
        plan = self.plan_at(t, 0.25)
        got, _, _ = self.wrapped(t, plan, loss_scale=st.LossScale(init_scale=1024.0))
        m, _, x = self.tiny()

        def scaled_at_outputs(m_, x_):
            logits = m_(x_)
            logits.register_hook(lambda g: g * 1024.0)
            return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), x_.flatten())

        ref_outputs = MixedReference(m, "fp16")
        at_outputs = []
        for _ in range(5):
            ref_outputs.copies()
            loss = scaled_at_outputs(m, x)
            loss.backward()
            at_outputs.append(loss.item())
            ref_outputs.step(1024.0)
        self.assertEqual(got, at_outputs)
        # the scale's state in the optimizer's state_dict, and back
        m, opt, x = self.tiny()
        scale = st.LossScale(init_scale=512.0, growth_interval=2)
        with st.wrap(m, opt, plan, t, loss_scale=scale):
            for _ in range(3):
                self.step(m, opt, x)
            saved = opt.state_dict()
        self.assertEqual(saved["stowage_loss_scale"],
                         {"scale": 1024.0, "clean": 1, "skipped": 0, "skipped_in_row": 0})
        other = st.LossScale()
        with st.wrap(m, opt, plan, t, loss_scale=other):
            opt.load_state_dict(saved)
        self.assertEqual(other.scale, 1024.0)

    def test_overflow_every_step_stops(self):
        """A loss that overflows fp16 at every scale: each step skipped (the weights untouched,
        the scale halved), and after 24 in a row a StowageError with the scale."""
        t = self.profiled("fp16", scaler=torch.amp.GradScaler("cpu"))
        plan = self.plan_at(t, 0.25)
        m, opt, x = self.tiny()
        before = {k: v.clone() for k, v in m.state_dict().items()}

        def overflowing(m_, x_):
            return (m_(x_) * 1e5).float().sum()  # fp16 infinities in forward

        scale = st.LossScale()
        with self.assertRaisesRegex(stowage.StowageError, r"^fp16: 24 optimizer steps in a row "
                                    r"skipped, their gradients not finite; the loss scale is now "
                                    r"0\.00390625: "):
            with st.wrap(m, opt, plan, t, loss_scale=scale):
                for _ in range(30):
                    self.step(m, opt, x, loss=overflowing)
        self.assertEqual(scale.skips.total, 24)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)

    def test_on_cuda(self):
        """On a GPU: bf16 and fp16 (with a GradScaler) profiled and wrapped on cuda:0 (16-bit
        views of device chunks; Adam where the plan puts it): bitwise across plans, the bytes
        the plan's, and the losses those of the reference loop on CUDA to 1e-3."""
        if not torch.cuda.is_available():
            self.skipTest("no GPU here: torch.cuda.is_available() is False")

        def make():
            m, _, x = self.tiny()
            m.to("cuda:0")
            return m, torch.optim.AdamW(m.parameters(), lr=1e-2), x.to("cuda:0")

        for precision in ("bf16", "fp16"):
            scaler = (lambda: torch.amp.GradScaler("cuda")) if precision == "fp16" else None
            t = self.profiled(precision, make=make, scaler=scaler() if scaler else None)
            runs = [self.wrapped(t, self.plan_at(t, share), steps=3, scaler_of=scaler,
                                 make=make)[0] for share in (4, 0.25)]
            self.assertEqual(runs[0], runs[1], precision)
            m, _, x = make()
            ref = MixedReference(m, precision).train(m, x, 3, scale=2.0 ** 16 if scaler else 1.0)
            for a, b in zip(runs[0], ref):
                self.assertLessEqual(abs(a - b), 1e-3 * max(1.0, abs(b)), precision)

    def test_against_torch_adamw(self):
        """The same loop stepping the masters with torch.optim.AdamW: the losses within 1e-4
        relative (the update's order of operations differs in the last bits)."""
        t = self.profiled("bf16")
        got, _, _ = self.wrapped(t, self.plan_at(t, 0.25))
        m, _, x = self.tiny()
        ref = MixedReference(m, "bf16", torch_adamw=True).train(m, x, 5)
        for a, b in zip(got, ref):
            self.assertLessEqual(abs(a - b), 1e-4 * abs(b))

    def test_autocast_in_the_step(self):
        """torch.autocast inside the user's step keeps working: bitwise across plans."""
        t = self.profiled("bf16")

        def autocast_loss(m_, x_):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return loss_of(m_, x_)

        runs = []
        for share in (4, 0.25):
            m, opt, x = self.tiny()
            with st.wrap(m, opt, self.plan_at(t, share), t):
                runs.append([self.step(m, opt, x, loss=autocast_loss) for _ in range(3)])
        self.assertEqual(runs[0], runs[1])
        self.assertTrue(all(v == v for v in runs[0]))

    def test_refusals(self):
        """A plan of another precision, trained 16-bit parameters, fp16 without a loss scale,
        a loss scale outside fp16: each refused with its reason, before anything trains."""
        t16 = self.profiled("bf16")
        t32 = quiet(self.profiled, None)
        m, opt, x = self.tiny()
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: precision='bf16', and the plan "
                                    r"was made for fp32 compute copies \(its trace's tensors are "
                                    r"fp32\): profile with precision='bf16' and plan again$"):
            st.wrap(m, opt, self.plan_at(t32, 4), t32, precision="bf16")
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: precision='fp32', and the plan "
                                    r"was made for bf16 compute copies"):
            st.wrap(m, opt, self.plan_at(t16, 4), t16, precision="fp32")
        m.to(torch.bfloat16)
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: parameter wte.weight is bf16 "
                                    r"and trained: bf16 mixed precision keeps an fp32 master of "
                                    r"every trained weight"):
            st.wrap(m, opt, self.plan_at(t16, 4), t16)
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: parameter wte.weight is bf16: "
                                    r"a bf16 model trains in mixed precision: profile with "
                                    r"precision=\"bf16\""):
            st.wrap(m, opt, self.plan_at(t32, 4), t32)
        m, opt, x = self.tiny()
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: loss_scale= is fp16's, and "
                                    r"this runs in bf16$"):
            st.wrap(m, opt, self.plan_at(t16, 4), t16, loss_scale=True)
        with self.assertRaisesRegex(stowage.StowageError, r"^profile: precision='fp8': "):
            st.profile(m, opt, precision="fp8")
        with self.assertRaisesRegex(stowage.StowageError, r"^LossScale: backoff_factor=1.5 is out "
                                    r"of range"):
            st.LossScale(backoff_factor=1.5)
        with self.assertRaisesRegex(stowage.StowageError, r"^LossScale: scale -2.0, clean 0, "
                                    r"skipped 0: out of range"):
            st.LossScale().load_state_dict({"scale": -2.0, "clean": 0, "skipped": 0})
        with self.assertRaisesRegex(stowage.StowageError, r"^LossScale: a state of scale, clean "
                                    r"and skipped is expected"):
            st.LossScale().load_state_dict({"scale": 2.0})
        t16 = self.profiled("fp16", loss_scale=True)
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: loss_scale= is a "
                                    r"stowage.torch.LossScale, True or None, not int"):
            st.wrap(m, opt, self.plan_at(t16, 4), t16, loss_scale=3)
        t = self.profiled("fp16", scaler=torch.amp.GradScaler("cpu"))
        before = {k: v.clone() for k, v in m.state_dict().items()}
        with self.assertRaisesRegex(stowage.StowageError, r"^wrap: fp16 gradients without a loss "
                                    r"scale underflow to zero: scale the loss with "
                                    r"torch.amp.GradScaler"):
            with st.wrap(m, opt, self.plan_at(t, 4), t):
                self.step(m, opt, x)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v, before[k]), k)


@unittest.skipIf(torch is None, "PyTorch is not installed: %s" % (None if torch else WHY))
class TestMixedHuggingFace(unittest.TestCase):
    """GPT-2 and Llama from transformers in bf16 mixed precision, and LoRA over a frozen bf16
    base with peft."""

    def setUp(self):
        try:
            import transformers  # noqa: F401
        except ImportError as e:
            self.skipTest("transformers is not installed: %s" % e)
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    @staticmethod
    def model(kind):
        from test_torch_loop import TestHuggingFace
        m = TestHuggingFace.model(kind)
        m.eval()  # no dropout: the runs compare bitwise
        return m

    @staticmethod
    def hf_loss(m, x):
        return m(input_ids=x, labels=x).loss

    def run_kind(self, make, share, x, steps=3):
        m, opt = make()
        start = {k: v.clone() for k, v in m.state_dict().items()}
        with st.profile(m, opt, precision="bf16") as p:
            TestMixedPrecision.step(m, opt, x, loss=self.hf_loss)
        t = p.trace()
        m.load_state_dict(start)
        opt.state.clear()
        plan = TestMixedPrecision.plan_at(t, share)
        with st.wrap(m, opt, plan, t) as w:
            losses = [TestMixedPrecision.step(m, opt, x, loss=self.hf_loss) for _ in range(steps)]
        self.assertEqual(w.stats["h2d_bytes"], stowage.check(plan, t)["h2d_bytes"])
        self.assertEqual(w.stats["deviations"], 0)
        return losses, m, t, w

    def test_models_train_as_the_reference_loop(self):
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
        for kind in ("gpt2", "llama"):
            def make():
                m = self.model(kind)
                return m, torch.optim.AdamW(m.parameters(), lr=1e-2)
            runs = [self.run_kind(make, share, x)[0] for share in (4, 0.25)]
            m = self.model(kind)
            ref = MixedReference(m, "bf16").train(m, x, 3, step_loss=self.hf_loss)
            self.assertEqual(runs, [ref, ref], kind)

    def test_lora_over_a_frozen_bf16_base(self):
        """peft LoRA on a Llama whose base is bf16: the base frozen in 16-bit param chunks only
        (no gradient, master or moments, never written back), the adapters fp32 masters
        trained in bf16; bitwise the reference; merge_and_unload's weights load bitwise."""
        try:
            import peft
        except ImportError as e:
            self.skipTest("peft is not installed: %s" % e)
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))

        def make():
            base = self.model("llama").to(torch.bfloat16)
            m = peft.get_peft_model(base, peft.LoraConfig(
                r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
            for name, q in m.named_parameters():
                if q.requires_grad:
                    q.data = q.data.float()  # the adapters' fp32 masters
            return m, torch.optim.AdamW([q for q in m.parameters() if q.requires_grad], lr=1e-2)

        losses, m, t, w = self.run_kind(make, 0.25, x)
        j = t.json()
        frozen = [x_ for x_ in j["tensors"] if x_.get("frozen")]
        self.assertEqual(len(frozen), len(j["tensors"]) - 8)  # 2 layers x 2 x (A, B)
        self.assertEqual({x_["dtype"] for x_ in j["tensors"]}, {"bf16"})
        s = t.summary()
        trained = sum(x_["numel"] for x_ in j["tensors"] if not x_.get("frozen"))
        self.assertEqual(s["model_bytes"]["total"], 2 * s["params"] + 12 * trained)
        ref_m, _ = make()
        ref = MixedReference(ref_m, "bf16").train(ref_m, x, 3, step_loss=self.hf_loss)
        self.assertEqual(losses, ref)
        base = {k: v for k, v in ref_m.state_dict().items() if "lora" not in k}
        for k, v in m.state_dict().items():
            if "lora" not in k:
                self.assertEqual(v.dtype, torch.bfloat16, k)
                self.assertTrue(torch.equal(v, base[k]), k)
        merged = m.merge_and_unload()
        path = os.path.join(self.dir.name, "merged")
        merged.save_pretrained(path)
        import transformers as tf
        back = tf.LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16)
        for k, v in merged.state_dict().items():
            self.assertTrue(torch.equal(back.state_dict()[k], v), k)

    def test_an_adapter_added_after_profiling_is_another_model(self):
        try:
            import peft
        except ImportError as e:
            self.skipTest("peft is not installed: %s" % e)
        x = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
        m = self.model("llama")
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        with st.profile(m, opt, precision="bf16") as p:
            TestMixedPrecision.step(m, opt, x, loss=self.hf_loss)
        t = p.trace()
        m = peft.get_peft_model(m, peft.LoraConfig(r=4, target_modules=["q_proj"],
                                                    lora_dropout=0.0))
        opt = torch.optim.AdamW([q for q in m.parameters() if q.requires_grad], lr=1e-2)
        with self.assertRaisesRegex(stowage.StowageError, "another model"):
            st.wrap(m, opt, TestMixedPrecision.plan_at(t, 4), t)


if __name__ == "__main__":
    unittest.main()
