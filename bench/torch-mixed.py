#!/usr/bin/env python3
"""bench/torch-mixed.py — a Hugging Face model (GPT-2 or Llama, built from a config with random
weights) trained by stowage.torch.wrap in fp32 and in bf16 mixed precision, each under a plan of
the same GPU budget (half the bf16 param list, a quarter of the fp32 one, beside the larger
peak non-model memory),
against plain PyTorch in fp32: tokens/s (CPU seconds, one thread), bytes moved per step (H2D and
D2H, as the runtime counted them), and the model data the plan keeps in host memory. Each
configuration trains STEPS steps in its own round, rounds interleaved, medians of ROUNDS. Needs
PyTorch, transformers and the built library (STOWAGE_LIB, PYTHONPATH=python).

Usage: bench/torch-mixed.py [ROUNDS] [STEPS] [gpt2|llama]"""
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
import stowage  # noqa: E402
import stowage.torch as st  # noqa: E402

torch.set_num_threads(1)
torch.set_flush_denormal(True)  # (bench/torch-wrap.py says why)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
MODEL = sys.argv[3] if len(sys.argv) > 3 else "gpt2"
B, T, D, L, V = 2, 64, 128, 4, 256


def build():
    import transformers as tf
    torch.manual_seed(0)
    if MODEL == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(
            n_layer=L, n_embd=D, n_head=4, vocab_size=V, n_positions=T, bos_token_id=0,
            eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)), "GPT-2"
    if MODEL == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(
            num_hidden_layers=L, hidden_size=D, intermediate_size=4 * D, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=V, max_position_embeddings=T, bos_token_id=0,
            eos_token_id=0, pad_token_id=0)), "Llama"
    sys.exit("bench/torch-mixed.py: MODEL is gpt2 or llama, not %s" % MODEL)


model, name = build()
start = {k: v.clone() for k, v in model.state_dict().items()}
x = torch.randint(0, V, (B, T))


def step(o):
    model(input_ids=x, labels=x).loss.backward()
    o.step()
    o.zero_grad()


def profiled(precision):
    model.load_state_dict(start)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with st.profile(model, opt, precision=precision) as p:
            for _ in range(2):
                step(opt)
    return p.trace()


traces = {"fp32": profiled(None), "bf16": profiled("bf16")}
n = sum(q.numel() for q in model.parameters())
nonmodel = max(t.summary()["peak_nonmodel"]["bytes"] for t in traces.values())
budget = n + nonmodel  # half the bf16 param list, a quarter of the fp32 one


def plan_of(trace):
    b = budget
    for _ in range(20):  # whole chunks must fit beside the activations: the least that does
        try:
            return stowage.plan(trace, gpu=b), b
        except stowage.StowageError:
            b = b * 9 // 8
    sys.exit("bench/torch-mixed.py: no plan near %d bytes" % b)


plans = {k: plan_of(t) for k, t in traces.items()}


def run(kind):
    model.load_state_dict(start)
    o = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = st.wrap(model, o, plans[kind][0], traces[kind], plans[kind][1]) if kind in plans else None
    step(o)  # a first step outside the timing
    t0 = time.process_time()
    for _ in range(STEPS):
        step(o)
    dt = time.process_time() - t0
    # (the runtime's figures are the last iteration's)
    moved = (w.stats["h2d_bytes"], w.stats["d2h_bytes"]) if w else (0, 0)
    if w:
        st.unwrap(model)
    return dt, moved


kinds = ("plain fp32", "fp32", "bf16")
times = {k: [] for k in kinds}
moved = {}
for _ in range(ROUNDS):
    for k in kinds:
        dt, mv = run(k)
        times[k].append(dt)
        moved[k] = mv
med = {k: statistics.median(v) for k, v in times.items()}
print("%s of %d parameters (%d layers, width %d, vocab %d), %d sequences of %d tokens per step, "
      "%d steps, medians of %d rounds, CPU seconds, 1 thread; GPU budget %d B for both plans"
      % (name, n, L, D, V, B, T, STEPS, ROUNDS, budget))
print("| run | tokens/s | vs plain fp32 | H2D per step (plan's) | D2H per step | host memory "
      "(the plan's cpu_bytes) | model data |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k in kinds:
    per = med[k] / STEPS
    if k in plans:
        pred = plans[k][0].predictions
        host = "%d" % pred["cpu_bytes"]
        h2d = "%d (%d)" % (moved[k][0], pred["h2d_bytes"])
        data = "%d" % traces[k].summary()["model_bytes"]["total"]
    else:
        host, data, h2d = "-", "%d" % (16 * n), "0"
    print("| %s | %.0f | %.3fx | %s | %d | %s | %s |" % (
        k, B * T / per, (med["plain fp32"] / STEPS) / per, h2d, moved[k][1], host, data))
