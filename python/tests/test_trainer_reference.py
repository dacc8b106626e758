"""stowage's own trainer (`stowage train`) against PyTorch on the CPU as an independent reference:
the GPT of llm.c written here in torch, started from a checkpoint the trainer wrote (its
master weights, Adam's moments, the step and the data position), trains the same batches with
the same AdamW, and the losses the trainer prints after resuming that checkpoint must match.

- fp32: every step's loss within 1e-6 relative (the sums' orders differ, nothing else; 1e-7
  measured).
- mixed precision, emulated: the reference rounds where the trainer's mixed precision rounds (the
  compute copy of every weight, the matmuls' inputs and output gradients to bf16, nearest; the
  products summed in fp32; gradients committed to bf16), so the trainer's bf16 matmuls
  (oneDNN's, where the CPU has bf16 arithmetic) or its fp32 fallback must match it within 5e-5
  (2.3e-5 measured either way).
- mixed precision against torch.autocast(bfloat16), what a PyTorch user would run: within
  1e-3 relative (7e-5 measured; autocast also keeps the matmuls' outputs in bf16).

Skips without PyTorch or the CLI ($STOWAGE)."""
import json
import math
import os
import re
import struct
import subprocess
import tempfile
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the C library and the CLI never need PyTorch
    torch = None
    WHY = str(e)

CLI = os.environ.get("STOWAGE")
SRC = os.environ.get("STW_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SHAPE = dict(layers=2, width=64, heads=4, context=16, batch=2)
STEPS_BEFORE, STEPS_AFTER = 2, 5
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.01


def shape_args():
    return [a for k, v in SHAPE.items() for a in ("--" + k, str(v))]


def read_checkpoint(path, names, numels):
    """The trainer's checkpoint (train/checkpoint.c): an 88-byte header (magic, then layers,
    width, heads, context, batch, seed, step, pos, tensors, total floats), the master weights,
    the momentum and the variance (fp32, tensor by tensor), a SHA-256."""
    data = open(path, "rb").read()
    assert data[:8] == b"STWCKPT1", data[:8]
    head = struct.unpack("<10Q", data[8:88])
    step, pos, total = head[6], head[7], head[9]
    assert total == sum(numels)
    flat = torch.frombuffer(bytearray(data[88:88 + 12 * total]), dtype=torch.float32)
    lists = [flat[i * total:(i + 1) * total] for i in range(3)]
    state = {}
    at = 0
    for name, n in zip(names, numels):
        state[name] = [lst[at:at + n].clone() for lst in lists]
        at += n
    return step, pos, state


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


class _RoundedLinear(torch.autograd.Function if torch else object):
    """y = bf16(x) bf16(w)^T + b, the backward's products from bf16(dy): the trainer's mixed
    precision matmul (stw_matmul_forward_bf16 / backward); the bias gradient from dy as it is."""

    @staticmethod
    def forward(ctx, x, w, b):
        xr, wr = bf16(x), bf16(w)
        ctx.save_for_backward(xr, wr)
        ctx.has_bias = b is not None
        y = xr @ wr.t()
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, dy):
        xr, wr = ctx.saved_tensors
        dyr = bf16(dy)
        dx = dyr @ wr
        dw = dyr.reshape(-1, dyr.shape[-1]).t() @ xr.reshape(-1, xr.shape[-1])
        db = dy.reshape(-1, dy.shape[-1]).sum(0) if ctx.has_bias else None
        return dx, dw, db


def gpt_loss(p, inputs, targets, mode):
    """llm.c's GPT-2 over the parameters P (nn.Linear's (out, in) weights), MODE: "fp32",
    "emulated" (the trainer's rounding) or "autocast" (under torch.autocast)."""
    L, C, NH = SHAPE["layers"], SHAPE["width"], SHAPE["heads"]
    B, T = inputs.shape

    def lin(x, w, b=None):
        if mode == "emulated":
            return _RoundedLinear.apply(x, w, b)
        return F.linear(x, w, b)

    def ln(x, w, b):
        return F.layer_norm(x.float(), (C,), w, b, 1e-5)

    x = p["wte"][inputs] + p["wpe"][:T]
    for i in range(L):
        h = "h.%d." % i
        a = ln(x, p[h + "ln_1.weight"], p[h + "ln_1.bias"])
        qkv = lin(a, p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"]).float()
        q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in qkv.split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + lin(y, p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"]).float()
        a = ln(x, p[h + "ln_2.weight"], p[h + "ln_2.bias"])
        f = F.gelu(lin(a, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + lin(f, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"]).float()
    a = ln(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = lin(a, p["wte"]).float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def reference_losses(state, names, shapes, text, pos, step, mode):
    """STEPS_AFTER steps from the checkpoint's state: each the loss of the batch at the data
    position, then AdamW on the master weights (in the trainer's formula and fp32 arithmetic)."""
    master = {n: state[n][0].clone() for n in names}
    m = {n: state[n][1].clone() for n in names}
    v = {n: state[n][2].clone() for n in names}
    B, T = SHAPE["batch"], SHAPE["context"]
    losses = []
    for _ in range(STEPS_AFTER):
        if pos > len(text) or len(text) - pos < B * T + 1:
            pos = 0
        window = torch.tensor(list(text[pos:pos + B * T + 1]), dtype=torch.long)
        inputs, targets = window[:-1].view(B, T), window[1:].view(B, T)
        pos += B * T
        rounded = mode != "fp32"
        params = {n: (bf16(master[n]) if rounded else master[n].clone())
                  .view(shapes[n]).requires_grad_(True) for n in names}
        if mode == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = gpt_loss(params, inputs, targets, mode)
        else:
            loss = gpt_loss(params, inputs, targets, mode)
        losses.append(loss.item())
        loss.backward()
        step += 1
        rbc1 = 1.0 / (1.0 - BETA1 ** step)
        rbc2 = 1.0 / (1.0 - BETA2 ** step)
        for n in names:
            g = params[n].grad.reshape(-1).float()
            if rounded:
                g = bf16(g)
            m[n] = BETA1 * m[n] + (1 - BETA1) * g
            v[n] = BETA2 * v[n] + (1 - BETA2) * g * g
            w = master[n]
            master[n] = w - LR * ((m[n] * rbc1) / (torch.sqrt(v[n] * rbc2) + EPS) + WD * w)
    return losses


@unittest.skipIf(torch is None, "PyTorch is not installed: %s" % (None if torch else WHY))
@unittest.skipIf(CLI is None, "the CLI is not given ($STOWAGE)")
class TrainerAgainstTorch(unittest.TestCase):
    def setUp(self):
        torch.set_num_threads(1)
        self.tmp = tempfile.TemporaryDirectory()
        self.data = os.path.join(SRC, "README.md")
        self.text = open(self.data, "rb").read()

    def tearDown(self):
        self.tmp.cleanup()

    def run_trainer(self, precision):
        """The trainer's losses of steps STEPS_BEFORE + 1 on, resumed from its checkpoint after
        STEPS_BEFORE; the reference's state from that checkpoint."""
        ckpt = os.path.join(self.tmp.name, precision + ".ckpt")
        trace = os.path.join(self.tmp.name, precision + ".json")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        common = [CLI, "train"] + shape_args() + ["--data", self.data, "--lr", str(LR),
                                                   "--precision", precision]
        subprocess.run(common + ["--steps", str(STEPS_BEFORE), "--checkpoint", ckpt,
                                 "--profile", trace, "--quiet"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        out = subprocess.run(common + ["--steps", str(STEPS_AFTER),
                                       "--resume", ckpt],
                             check=True, env=env, capture_output=True, text=True).stdout
        got = [float(x) for x in re.findall(r"^step\s+\d+\s+loss\s+(\S+)", out, re.M)]
        self.assertEqual(len(got), STEPS_AFTER, out)
        tensors = json.load(open(trace))["tensors"]
        names = [t["name"] for t in tensors]
        numels = [math.prod(t["shape"]) for t in tensors]
        # nn.Linear's (out, in): the trainer's matmul weights are row-major (OC, C), shaped in
        # HF's Conv1D (in, out) order by the trace; the embeddings are (rows, C) as they are
        shapes = {t["name"]: tuple(reversed(t["shape"])) if t["name"].endswith(".weight")
                  and len(t["shape"]) == 2 else tuple(t["shape"]) for t in tensors}
        step, pos, state = read_checkpoint(ckpt, names, numels)
        self.assertEqual(step, STEPS_BEFORE)
        return got, (state, names, shapes, self.text, pos, step), out

    def check(self, got, want, rtol, what):
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertLess(abs(g - w) / w, rtol, "%s, step %d: stowage %.9g, torch %.9g"
                            % (what, STEPS_BEFORE + 1 + i, g, w))

    def test_fp32(self):
        got, ref, _ = self.run_trainer("fp32")
        self.check(got, reference_losses(*ref, "fp32"), 1e-6, "fp32")

    def test_mixed_precision(self):
        got, ref, out = self.run_trainer("mixed")
        self.assertRegex(out, r"in mixed precision \((bf16 matmuls, (AVX512-BF16|AMX)|fp32 matmuls:)")
        emulated = reference_losses(*ref, "emulated")
        self.check(got, emulated, 5e-5, "mixed precision against the emulated rounding")
        self.check(got, reference_losses(*ref, "autocast"), 1e-3,
                   "mixed precision against torch.autocast(bfloat16)")


if __name__ == "__main__":
    unittest.main()
