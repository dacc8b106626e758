"""The model as stowage's ops see it: shared by stowage.torch.profile and stowage.torch.wrap, so
that the ops the profile records are, by construction, the ops wrap replays.

A module at the chosen depth of the module tree (by default the layers': the first depth at
which a module class repeats) is an op reading the parameters it holds; its backward, an op of
the same parameters writing the gradients of those that are trained. A module above the depth
that holds parameters of its own and runs no op below it (a head beside the layers) is an op of
its own too. The parameters of a module above the depth that does run ops below it (minGPT's
`pos_emb` and ViT's `cls_token` on the root) are used between those ops, so they are *held*:
read by every forward and backward op, resident from the first forward op to the last backward
op; so are the parameters the profile saw used outside the ops that hold them (a head tied to
the embedding and computed in the parent's forward). A parameter is frozen when it needs no
gradient or no optimizer group holds it: no gradient, no optimizer op, no optimizer state.
"""
import collections

import torch as _torch

from . import StowageError

DTYPES = {_torch.float32: "fp32", _torch.float16: "fp16", _torch.bfloat16: "bf16"}

_CONTAINERS = (_torch.nn.ModuleList, _torch.nn.ModuleDict, _torch.nn.ParameterList,
               _torch.nn.ParameterDict)


def tree(model):
    """(name, module, depth) of every module that runs: containers that have no forward of
    their own (ModuleList, ModuleDict) are not levels of the tree. In the order of a recursive
    walk, made by a loop (a recursive closure is a reference cycle)."""
    out, stack = [], [("", iter(model.named_children()), 0)]
    while stack:
        prefix, children, depth = stack[-1]
        child_name, child = next(children, (None, None))
        if child is None:
            stack.pop()
            continue
        name = prefix + "." + child_name if prefix else child_name
        if not isinstance(child, _CONTAINERS):
            depth += 1
            out.append((name, child, depth))
        stack.append((name, iter(child.named_children()), depth))
    return out


def layer_depth(model):
    """The first depth of the module tree at which a module class appears twice (the layers);
    else the deepest."""
    by_depth = collections.defaultdict(list)
    for _, m, d in tree(model):
        by_depth[d].append(type(m).__name__)
    for d in sorted(by_depth):
        if len(set(by_depth[d])) < len(by_depth[d]):
            return d
    return max(by_depth) if by_depth else 1


def _is_adam(optimizer):
    return isinstance(optimizer, _torch.optim.Adam)  # AdamW is one


def amsgrad(optimizer):
    """Whether a group of OPTIMIZER keeps AMSGrad's largest variances (the trace says so, and
    the plan keeps room for them)."""
    return any(g.get("amsgrad") for g in optimizer.param_groups)


def refusals(model, optimizer, params, mixed=None):
    """What wrap cannot train, each with the fix: the profile warns of them at its start, and
    wrap refuses the first. PARAMS: (name, parameter) of every distinct parameter. MIXED: the
    16-bit compute dtype's name ("bf16", "fp16") in mixed precision, where the trained
    parameters are the fp32 masters and frozen ones may be 16-bit already; None: fp32."""
    out = []
    kind = type(optimizer).__name__
    if not _is_adam(optimizer):
        out.append("the optimizer is %s; stowage steps Adam and AdamW (the library's AdamW on "
                   "the chunks): use torch.optim.AdamW(model.parameters(), ...)" % kind)
    else:
        for i, g in enumerate(optimizer.param_groups):
            if g.get("differentiable"):
                out.append("%s(differentiable=True) (group %d) makes the step part of the "
                           "autograd graph, which a step in the runtime's chunks is not: use "
                           "differentiable=False" % (kind, i))
                break
    devices = sorted({str(p.device) for _, p in params})
    if len(devices) > 1:
        out.append("the parameters are on %s; stowage holds a model on one device: "
                   "model.to(one device)" % ", ".join(devices))
    elif devices and devices[0] not in ("cpu", "cuda", "cuda:0"):
        out.append("the model is on %s; stowage runs on the CPU or CUDA (cuda:0): "
                   "model.to(\"cpu\") or model.to(\"cuda:0\")" % devices[0])
    stepped = {id(q) for g in optimizer.param_groups for q in g["params"]}
    for name, p in params:
        if not p.is_contiguous():
            out.append("parameter %s must be a contiguous tensor: .contiguous() it" % name)
            break
        trained = p.requires_grad and id(p) in stepped
        if p.dtype == _torch.float32 or (mixed and not trained):
            continue
        if mixed:
            out.append("parameter %s is %s and trained: %s mixed precision keeps an fp32 master "
                       "of every trained weight and computes on a %s copy of it; give the "
                       "model fp32 weights (model.float(), or load it in fp32) and the chunks "
                       "hold the 16-bit copy" % (name, DTYPES.get(p.dtype, p.dtype), mixed,
                                                 mixed))
        elif p.dtype in (_torch.bfloat16, _torch.float16):
            out.append("parameter %s is %s: a %s model trains in mixed precision: profile "
                       "with precision=\"%s\" (fp32 masters in the chunks beside a %s "
                       "compute copy), and keep its weights fp32 where they are trained"
                       % (name, DTYPES[p.dtype], DTYPES[p.dtype], DTYPES[p.dtype],
                          DTYPES[p.dtype]))
        else:
            out.append("parameter %s must be fp32 (it is %s): model.float() keeps fp32 "
                       "weights" % (name, p.dtype))
        break
    return out


class Model:
    """MODEL's parameters by identity, named once (named_parameters drops the duplicates of a
    tie), which of them are frozen, and its ops."""

    def __init__(self, model, optimizer, depth=None, name=None):
        self.model, self.optimizer = model, optimizer
        self.depth = depth if depth is not None else layer_depth(model)
        self.name = name or type(model).__name__
        self.params = []
        self.index = {}
        for pname, p in model.named_parameters():
            if p.dtype not in DTYPES:
                raise StowageError("parameter %s is %s: stowage traces hold fp32, fp16 or bf16"
                                   % (pname, p.dtype))
            self.index[id(p)] = len(self.params)
            self.params.append((pname, p))
        stepped = {id(q) for g in optimizer.param_groups for q in g["params"]}
        self.frozen = [not p.requires_grad or id(p) not in stepped for _, p in self.params]
        self.ops = []  # (name, module, parameter ids): the modules that are ops
        self.held = []  # ids of the parameters every forward and backward op holds
        below = []
        for name, m, d in tree(model):
            if d == self.depth:
                self.ops.append((name, m, self._ids(m.parameters())))
                below.append(name + ".")
        # above the depth, in pre-order: a module with an op below it holds its own parameters
        # through the ops; one with none is an op of its whole subtree's parameters
        for name, m, d in [("", model, 0)] + tree(model):
            if d >= self.depth or any(name.startswith(b) for b in below):
                continue
            if any(b.startswith(name + "." if name else "") for b in below):
                self.held.extend(self._ids(m.parameters(recurse=False)))
                continue
            ids = self._ids(m.parameters())
            if ids:
                self.ops.append((name or self.name, m, ids))
                if not name:
                    break  # the root, with no op below it: the one op
                below.append(name + ".")
        self.held = sorted(set(self.held))
        # a tied parameter is one tensor: a module's own parameters may be another's
        self.owners = collections.defaultdict(list)  # id -> [(module, attribute name)]
        for m in model.modules():
            for attr, p in m._parameters.items():
                if p is not None and id(p) in self.index:
                    self.owners[self.index[id(p)]].append((m, attr))

    def _ids(self, params):
        return sorted({self.index[id(p)] for p in params if id(p) in self.index})

    def trained(self, ids):
        return [i for i in ids if not self.frozen[i]]

    def op_params(self, ids, held):
        """The parameters an op of module parameters IDS reads: them and the HELD ones."""
        return sorted(set(ids) | set(held)) if held else ids

    def numel(self):
        return sum(p.numel() for _, p in self.params)
