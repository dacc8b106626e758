"""bench/adam.py — one AdamW step over N fp32 parameters, side by side in one process: stowage's
CPU Adam (the library's step on the runtime's layout: the compute copy holds the gradient and
gets the new weights beside the fp32 master, 32 bytes an element, with bf16 moments 24 — how it
steps on several ranks; "stowage-in-copy": the new weights into the compute copy alone, the
master only read, 28 and 20 — how one rank steps an fp32 compute copy),
torch.optim.AdamW(fused=True) and DeepSpeed's DeepSpeedCPUAdam (weights, gradient and two fp32
moments, 28 bytes), every array from the same allocator: anonymous memory on 2 MiB boundaries,
madvise'd onto 4 KiB or 2 MiB pages. Interleaved rounds, the median step of each.

    OMP_NUM_THREADS=T python bench/adam.py N 4k|2m ROUNDS     (bench/adam.sh runs it)

Prints one line per implementation: name, G elements/s, GB/s of the bytes it moves. DeepSpeed's
line says why when its CPU Adam does not build or import here.
"""
import ctypes
import mmap
import os
import sys
import time

import torch

import stowage

N, PAGES, ROUNDS = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
THREADS = int(os.environ.get("OMP_NUM_THREADS", "1"))
torch.set_num_threads(THREADS)
LIBC = ctypes.CDLL(None, use_errno=True)
MADV_HUGEPAGE, MADV_NOHUGEPAGE = 14, 15
KEEP = []  # the mappings outlive their tensors


def pages(n, dtype=torch.float32):
    """N elements of DTYPE, zeroed, on 2 MiB boundaries, on the pages asked for."""
    size = n * torch.tensor([], dtype=dtype).element_size()
    align = 2 << 20
    m = mmap.mmap(-1, size + align)
    KEEP.append(m)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    off = (-base) % align
    advice = MADV_HUGEPAGE if PAGES == "2m" else MADV_NOHUGEPAGE
    if LIBC.madvise(ctypes.c_void_p(base + off), ctypes.c_size_t(size), advice) != 0:
        raise OSError(ctypes.get_errno(), "madvise")
    t = torch.frombuffer(memoryview(m)[off:off + size], dtype=dtype)
    t.zero_()  # touched by the threads' first writes
    return t


def filled(n, dtype=torch.float32, scale=1.0):
    t = pages(n, dtype)
    t.copy_((torch.rand(n) - 0.5) * scale)
    return t


def torch_like(cls, **kw):
    """A torch optimizer's step over our pages: its state, made by a first step, moved there."""
    p = torch.nn.Parameter(filled(N))
    p.grad = filled(N, scale=1e-2)
    opt = cls([p], lr=1e-3, **kw)
    opt.step()
    for key in ("exp_avg", "exp_avg_sq"):
        fresh = pages(N)
        fresh.copy_(opt.state[p][key])
        opt.state[p][key] = fresh
    return opt.step, 28


def stowage_step(state, weights="both"):
    param, master = filled(N, scale=1e-2), filled(N)
    dt = torch.float32 if state == "fp32" else torch.bfloat16
    m, v = pages(N, dt), pages(N, dt)
    count = [0]

    def step():
        count[0] += 1
        stowage.adam(param.data_ptr(), master.data_ptr(), m.data_ptr(), v.data_ptr(), N,
                     count[0], state=state, weights=weights)
    return step, (32 if state == "fp32" else 24) - (4 if weights == "copy" else 0)


def deepspeed_step():
    try:
        from deepspeed.ops.adam import DeepSpeedCPUAdam
    except Exception as e:  # not installed, or its op does not build here
        return "does not import here: %s" % str(e).splitlines()[0][:120]
    try:
        return torch_like(DeepSpeedCPUAdam, adamw_mode=True)
    except Exception as e:
        return "its CPU Adam does not build or run here: %s" % str(e).splitlines()[0][:120]


impls = {
    "stowage fp32 moments": stowage_step("fp32"),
    "stowage bf16 moments": stowage_step("bf16"),
    "stowage-in-copy fp32 moments": stowage_step("fp32", "copy"),
    "stowage-in-copy bf16 moments": stowage_step("bf16", "copy"),
    "torch AdamW(fused=True)": torch_like(torch.optim.AdamW, fused=True),
    "DeepSpeedCPUAdam": deepspeed_step(),
}
times = {name: [] for name in impls}
for _ in range(ROUNDS):
    for name, impl in impls.items():
        if isinstance(impl, str):
            continue
        step, _ = impl
        t0 = time.perf_counter()
        step()
        times[name].append(time.perf_counter() - t0)
for name, impl in impls.items():
    if isinstance(impl, str):
        print("%-28s -  (%s)" % (name, impl))
        continue
    s = sorted(times[name])[len(times[name]) // 2]
    print("%-28s %.3f G/s  %.1f GB/s" % (name, N / s / 1e9, N * impl[1] / s / 1e9))
