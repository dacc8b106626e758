"""tests/gpu/torch-nvtx.py [TRACE] — a small PyTorch GPT trained 3 steps on CUDA, each step an NVTX
range `stowage.iteration` with PyTorch's own op ranges inside (torch.autograd.profiler.emit_nvtx),
for `stowage profile -- python3 tests/gpu/torch-nvtx.py`; and, when TRACE is given, the same
model's step recorded by stowage.torch.profile (module hooks, CUDA allocator memory) into TRACE.
Run by tests/gpu/run.sh on a GPU machine."""
import os
import sys

import torch


# the Python package tests' small GPT (an embedding, blocks, a head tied to the embedding)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                                "tests"))
from test_torch import TinyLM  # noqa: E402


def step(model, opt, x):
    logits = model(x)  # each position predicts the next token (its own, through the tied head,
    # would give a loss of 0)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), x[:, 1:].flatten())
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def main():
    torch.manual_seed(0)
    model = TinyLM(vocab=512, d=256, layers=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 512, (8, 128), device="cuda")
    with torch.autograd.profiler.emit_nvtx():
        for i in range(3):
            torch.cuda.nvtx.range_push("stowage.iteration")
            loss = step(model, opt, x)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            print("step %d loss %.6f" % (i + 1, loss))
    if len(sys.argv) > 1:
        import stowage.torch as st
        with st.profile(model, opt) as p:
            for _ in range(2):
                step(model, opt, x)
        p.save(sys.argv[1], batch=8, seq=128)
        print("stowage.torch.profile: %s" % sys.argv[1])


if __name__ == "__main__":
    main()
