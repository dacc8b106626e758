"""bench/cpu-mixed.py STOWAGE DATA [ROUNDS] [STEPS] — stowage's own trainer against PyTorch on this
CPU, the same GPT (llm.c's GPT-2: byte vocabulary of 256, tied embeddings, tanh GELU) at the
same shapes and threads, fp32 and bf16 mixed precision:

- stowage fp32: `stowage train --precision fp32`, everything resident (the trainer's fastest);
- stowage mixed: `--precision mixed`, bf16 matmuls (oneDNN) where the CPU has bf16 arithmetic;
- stowage mixed, fp32 matmuls: the same with ONEDNN_MAX_CPU_ISA=AVX512_CORE, as it ran before;
- torch eager fp32: an nn.Module GPT, AdamW(fused=True);
- torch autocast: the same under torch.autocast("cpu", dtype=torch.bfloat16).

Tokens/s of each run is the median of its steps after the first two; each configuration runs
ROUNDS times (default 3), interleaved, and the table shows the median of the rounds. Prints
Markdown."""
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = [("L4-C256", 4, 256, 4), ("L12-C768", 12, 768, 12)]
T, B, V = 64, 4, 256


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.NH = NH

    def forward(self, x):
        Bx, Tx, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(Bx, Tx, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(Bx, Tx, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, NH):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))


def torch_run(L, C, NH, threads, steps, autocast, text):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = GPT(L, C, NH)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    times, pos = [], 0
    for _ in range(steps):
        window = torch.tensor(list(text[pos:pos + B * T + 1]), dtype=torch.long)
        pos += B * T
        x, y = window[:-1].view(B, T), window[1:].view(B, T)
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = m(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    return B * T / statistics.median(times[2:])


def torch_process(L, C, NH, threads, steps, autocast, data):
    """torch_run in a process of its own, as each stowage run is: no threads of one run left
    spinning beside the next"""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, __file__, "torch", str(L), str(C), str(NH),
                          str(threads), str(steps), str(int(autocast)), data],
                         check=True, env=env, capture_output=True, text=True).stdout
    return float(out)


def stowage_run(cli, data, L, C, NH, threads, steps, precision, fp32_matmuls=False):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if fp32_matmuls:
        env["ONEDNN_MAX_CPU_ISA"] = "AVX512_CORE"
    out = subprocess.run([cli, "train", "--layers", str(L), "--width", str(C), "--heads",
                          str(NH), "--context", str(T), "--batch", str(B), "--steps", str(steps),
                          "--data", data, "--precision", precision],
                         check=True, env=env, capture_output=True, text=True).stdout
    rates = [float(r) for r in re.findall(r"^step\s+\d+\s+loss\s+\S+\s+(\d+) tokens/s", out, re.M)]
    head = re.search(r"^trained .*$", out, re.M).group(0)
    return statistics.median(rates[2:]), head


def main():
    if sys.argv[1] == "torch":
        L, C, NH, threads, steps, autocast = (int(a) for a in sys.argv[2:8])
        print(torch_run(L, C, NH, threads, steps, bool(autocast), open(sys.argv[8], "rb").read()))
        return
    cli, data = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    runs = [("stowage fp32", lambda *a: stowage_run(cli, data, *a, steps, "fp32")[0]),
            ("stowage mixed", lambda *a: stowage_run(cli, data, *a, steps, "mixed")[0]),
            ("stowage mixed, fp32 matmuls",
             lambda *a: stowage_run(cli, data, *a, steps, "mixed", True)[0]),
            ("torch eager fp32", lambda *a: torch_process(*a, steps, False, data)),
            ("torch autocast bf16", lambda *a: torch_process(*a, steps, True, data))]
    results = {}
    for _ in range(rounds):
        for name, L, C, NH in SHAPES:
            for threads in (1, 2):
                for label, fn in runs:
                    results.setdefault((name, threads, label), []).append(fn(L, C, NH, threads))
    _, head = stowage_run(cli, data, 4, 256, 4, 1, 3, "mixed")
    print("torch %s; stowage's mixed run says: `%s`\n" % (torch.__version__, head.split(":")[0]))
    print("| shape, T%d B%d | threads | %s | mixed / autocast | fp32 / eager |" %
          (T, B, " | ".join(label for label, _ in runs)))
    print("|---|---:|" + "---:|" * (len(runs) + 2))
    for name, _, _, _ in SHAPES:
        for threads in (1, 2):
            med = {label: statistics.median(results[(name, threads, label)]) for label, _ in runs}
            print("| %s | %d | %s | %.2fx | %.2fx |" % (
                name, threads, " | ".join("%.0f" % med[label] for label, _ in runs),
                med["stowage mixed"] / med["torch autocast bf16"],
                med["stowage fp32"] / med["torch eager fp32"]))


if __name__ == "__main__":
    main()
