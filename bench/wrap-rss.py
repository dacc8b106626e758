#!/usr/bin/env python3
"""bench/wrap-rss.py — the plan's predicted RSS of a stowage.torch.wrap replay on the host
backend against the peak RSS the replay holds. For each model and budget: one process profiles
the model's training step (stowage.torch.profile, which measures the process's own memory: its
peak RSS less the model's state and the non-model memory, the trace's `device.process_bytes`)
and plans it on a profile that `probe` made (the emulated device's rates); a fresh process then
builds the same model, wraps it with the plan and trains STEPS steps, and reports its peak RSS
(getrusage) while training, set against the plan's RSS (the emulated device's peak, the chunks'
host memory, the process's), and its peak once unwrapped (the weights and the optimizer's state
handed back to PyTorch). Needs PyTorch and the built library (STOWAGE_LIB, PYTHONPATH=python).

Usage: bench/wrap-rss.py [STEPS]"""
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 4
# (layers, width, vocab, batch, sequence); budgets: a share of the model data (4 fp32 lists)
# beside the trace's peak non-model memory
MODELS = [(4, 256, 4096, 4, 64), (8, 384, 8192, 4, 64), (8, 512, 8192, 4, 128)]
SHARES = [0.25, 1.0]


def child(mode, layers, width, vocab, batch, seq, workdir, share=None):
    """Runs this script as MODE in a fresh process; its last line, as JSON."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--" + mode, str(layers),
                        str(width), str(vocab), str(batch), str(seq), workdir, str(share)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("bench/wrap-rss.py: %s failed:\n%s" % (mode, r.stderr[-2000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def setup():
    import torch
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
    import stowage
    import stowage.torch as st
    return torch, stowage, st


def build(torch, layers, width, vocab, batch, seq):
    from test_torch import TinyLM
    torch.manual_seed(0)
    m = TinyLM(vocab=vocab, d=width, layers=layers)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randint(0, vocab, (batch, seq))
    return m, opt, x


def step(torch, m, opt, x):
    loss = torch.nn.functional.cross_entropy(m(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
    loss.backward()
    opt.step()
    opt.zero_grad()


def profile_and_plan(args):
    layers, width, vocab, batch, seq = (int(a) for a in args[:5])
    workdir, share = args[5], float(args[6])
    torch, stowage, st = setup()
    # the profile of a process like the replay's: probed before any model is built
    record = stowage.probe(device="host")
    hw = os.path.join(workdir, "host.json")
    with open(hw, "w") as f:
        json.dump(record["profile"], f)
    m, opt, x = build(torch, layers, width, vocab, batch, seq)
    with st.profile(m, opt) as p:
        for _ in range(2):
            step(torch, m, opt, x)
    t = p.trace()
    t.save(os.path.join(workdir, "trace.json"))
    model = sum(v.numel() for v in m.parameters()) * 16
    peak = max(op["nonmodel_peak_bytes"] for op in t.json()["ops"])
    plan = stowage.plan(t, gpu=int(model * share) + peak, hw=hw, activations="keep")
    plan.save(os.path.join(workdir, "plan.json"), t)
    pred = plan.predictions
    print(json.dumps({"model_bytes": model, "gpu_budget": pred["gpu_budget"],
                      "peak_gpu_bytes": pred["peak_gpu_bytes"], "cpu_bytes": pred["cpu_bytes"],
                      "overhead": pred["host_overhead_bytes"]}))


def replay(args):
    layers, width, vocab, batch, seq = (int(a) for a in args[:5])
    workdir = args[5]
    torch, stowage, st = setup()
    m, opt, x = build(torch, layers, width, vocab, batch, seq)
    t = stowage.Trace.load(os.path.join(workdir, "trace.json"))
    plan = stowage.Plan.load(os.path.join(workdir, "plan.json"))
    def now():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    marks = [("built", now(), peak())]
    with st.wrap(m, opt, plan, t) as w:
        marks.append(("wrapped", now(), peak()))
        for _ in range(STEPS):
            step(torch, m, opt, x)
            marks.append(("step", now(), peak()))
        deviations = w.stats["deviations"]
        training = peak()
    print(json.dumps({"peak_rss": training, "closed_rss": peak(), "deviations": deviations,
                      "built": marks[0][1], "wrapped": marks[1][1], "last": marks[-1][1]}))


def main():
    print("| model | budget | predicted RSS | measured peak RSS | error | predicted: device peak, "
          "chunks, process | measured: model built, wrapped, last step | with unwrapping |")
    print("|---|---:|---:|---:|---:|---|---|---:|")
    mib = 2.0 ** 20
    for layers, width, vocab, batch, seq in MODELS:
        for share in SHARES:
            with tempfile.TemporaryDirectory() as d:
                p = child("plan", layers, width, vocab, batch, seq, d, share)
                r = child("replay", layers, width, vocab, batch, seq, d)
            want = p["peak_gpu_bytes"] + p["cpu_bytes"] + p["overhead"]
            print("| L%d-C%d-V%d | %.1f MiB | %.1f MiB | %.1f MiB | %+.1f%% | %.1f, %.1f, %.1f "
                  "MiB | %.1f, %.1f, %.1f MiB | %.1f MiB |" % (
                      layers, width, vocab, p["gpu_budget"] / mib, want / mib,
                      r["peak_rss"] / mib, 100.0 * (want - r["peak_rss"]) / r["peak_rss"],
                      p["peak_gpu_bytes"] / mib, p["cpu_bytes"] / mib, p["overhead"] / mib,
                      r["built"] / mib, r["wrapped"] / mib, r["last"] / mib,
                      r["closed_rss"] / mib))
            sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--plan":
        profile_and_plan(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "--replay":
        replay(sys.argv[2:])
    else:
        main()
