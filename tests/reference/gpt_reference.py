#!/usr/bin/env python3
"""An independent reference for the C trainer (runtime/trainer.c): the same tiny GPT written in
PyTorch, with autograd computing every gradient and torch.optim.AdamW taking one step.

Writes tests/fixtures/reference/gpt-tiny.json: the configuration, the tokens, every tensor's
initial weights (by the trainer's tensor names and layouts: matmul weights are (out, in)
row-major), the loss, every gradient, and every tensor after one AdamW step. tests/test-runtime.c
loads it, runs the C trainer from the same weights and tokens, and compares.

Run on a developer machine with PyTorch (CPU) installed: python3 gpt_reference.py. Not run by CI.
"""
import json
import math
import os

import numpy as np
import torch

L, C, NH, T, B, V = 2, 8, 2, 8, 2, 256
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01
rng = np.random.default_rng(2026)


def tensor_names():
    names = [("wte", (V, C)), ("wpe", (T, C))]
    for l in range(L):
        p = f"h.{l}."
        names += [(p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
                  (p + "attn.c_attn.weight", (3 * C, C)), (p + "attn.c_attn.bias", (3 * C,)),
                  (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
                  (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
                  (p + "mlp.c_fc.weight", (4 * C, C)), (p + "mlp.c_fc.bias", (4 * C,)),
                  (p + "mlp.c_proj.weight", (C, 4 * C)), (p + "mlp.c_proj.bias", (C,))]
    names += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return names


params = {}
for name, shape in tensor_names():
    scale = 0.3 if "ln_" not in name else 0.1
    base = 1.0 if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight" else 0.0
    params[name] = torch.tensor(base + scale * rng.standard_normal(shape), dtype=torch.float32,
                                requires_grad=True)
tokens = rng.integers(0, V, size=(B, T + 1))
inputs = torch.tensor(tokens[:, :T], dtype=torch.long)
targets = torch.tensor(tokens[:, 1:], dtype=torch.long)


def layernorm(x, w, b):
    return torch.nn.functional.layer_norm(x, (C,), w, b, eps=1e-5)


def forward():
    P = params
    x = P["wte"][inputs] + P["wpe"][torch.arange(T)]
    hs = C // NH
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        p = f"h.{l}."
        h = layernorm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
        qkv = h @ P[p + "attn.c_attn.weight"].T + P[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ P[p + "attn.c_proj.weight"].T + P[p + "attn.c_proj.bias"]
        h = layernorm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
        h = h @ P[p + "mlp.c_fc.weight"].T + P[p + "mlp.c_fc.bias"]
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ P[p + "mlp.c_proj.weight"].T + P[p + "mlp.c_proj.bias"]
    x = layernorm(x, P["ln_f.weight"], P["ln_f.bias"])
    logits = x @ P["wte"].T
    return torch.nn.functional.cross_entropy(logits.view(-1, V), targets.reshape(-1))


initial = {n: p.detach().clone() for n, p in params.items()}
loss = forward()
loss.backward()
grads = {n: p.grad.detach().clone() for n, p in params.items()}
opt = torch.optim.AdamW(params.values(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
opt.step()


def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]


out = {
    "comment": "made by tests/reference/gpt_reference.py with PyTorch " + torch.__version__,
    "config": {"layers": L, "width": C, "heads": NH, "context": T, "batch": B, "lr": LR,
               "beta1": BETAS[0], "beta2": BETAS[1], "eps": EPS, "weight_decay": WD},
    "inputs": tokens[:, :T].reshape(-1).tolist(),
    "targets": tokens[:, 1:].reshape(-1).tolist(),
    "loss": float(loss.item()),
    "tensors": [{"name": n, "initial": flat(initial[n]), "grad": flat(grads[n]),
                 "after_step": flat(params[n].detach())} for n, _ in tensor_names()],
}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "fixtures", "reference", "gpt-tiny.json"), "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print("loss", out["loss"])
