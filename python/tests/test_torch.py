"""stowage.torch.profile on a small GPT-2 (transformers, random init) or a torch.nn GPT: real
names, the tied head once, ops per block, and the trace plans. Skips without PyTorch."""
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

    def test_no_iteration(self):
        m = TinyLM()
        opt = torch.optim.AdamW(m.parameters())
        with st.profile(m, opt) as p:
            m(torch.randint(0, 64, (1, 4)))
        with self.assertRaises(stowage.StowageError) as e:
            p.trace()
        self.assertIn("no iteration completed", str(e.exception))

    def test_refuses_integer_parameters(self):
        m = TinyLM()
        m.register_parameter("count", torch.nn.Parameter(torch.zeros(2, dtype=torch.int64),
                                                         requires_grad=False))
        with self.assertRaises(stowage.StowageError) as e:
            st.profile(m, torch.optim.AdamW([p for p in m.parameters() if p.is_floating_point()]))
        self.assertIn("parameter count is torch.int64", str(e.exception))


if __name__ == "__main__":
    unittest.main()
