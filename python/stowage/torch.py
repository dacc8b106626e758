"""stowage.torch — a PyTorch training loop profiled into a stowage trace, and trained with a plan.

The five lines (docs/pytorch.md):

    with stowage.torch.profile(model, optimizer) as p:    # one or more real training steps
        train_step(batch)
    p.save("trace.json")                                   # then: stowage plan trace.json --gpu 6GiB -o plan.json
    model, optimizer = stowage.torch.wrap(model, optimizer, plan="plan.json")
    ...                                                    # train as before; stowage.torch.unwrap(model)

The ops are the model's modules at a depth of its module tree (stowage/_torchmodel.py says
which, and which parameters each reads); every forward-backward pass between two optimizer steps
is a micro-step (gradient accumulation); forwards run without gradients (evaluation) are not the
iteration's. Gradients are PyTorch's own tensors from backward to the optimizer step (clipping,
scaling and the Trainer read them there), counted in the non-model memory; the optimizer's step
is one op per trained parameter. Durations are measured. Non-model memory is what the allocator
holds beyond the model's weights, at each op's start and at its peak: on a GPU from the CUDA
allocator (`torch.cuda.memory_allocated`, `max_memory_allocated`); on the CPU from the PyTorch
profiler's memory events (every allocation and free, with its bytes), each op a
`record_function` range. The last complete iteration is kept; the trace is built and checked by
the C library.

Mixed precision: profile(..., precision="bf16" or "fp16") trains on 16-bit copies beside the
model's fp32 masters and records a 16-bit trace; wrap under its plan computes on 16-bit views of
the param chunks and steps the masters in the runtime (docs/pytorch.md, "Mixed precision").
"""
import bisect
import collections
import ctypes
import os
import time
import types
import warnings

import torch as _torch

from . import Plan, StowageError, Trace, _call, _lib, parse_size
from ._torchmodel import DTYPES as _DTYPES
from ._torchmodel import Model, amsgrad, refusals


class _ProcessMemory:
    """The process's peak resident memory (RSS) while profiling. Linux resets the peak ("high
    water mark") when 5 is written to /proc/self/clear_refs and reports it as VmHWM; where that
    cannot be done, the most RSS seen at the ops' boundaries (sample()). None where neither can be
    read (no /proc)."""

    def __init__(self):
        self.reset = False
        self.sampled = 0

    @staticmethod
    def _rss():
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0

    def start(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.reset = True
        except OSError:
            self.reset = False
        self.sampled = self._rss()

    def sample(self):
        if not self.reset:
            self.sampled = max(self.sampled, self._rss())

    def peak(self):
        if self.reset:
            try:
                with open("/proc/self/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            return int(line.split()[1]) * 1024
            except (OSError, ValueError, IndexError):
                pass
        return self.sampled or None


class _CpuMemory:
    """The CPU allocator's bytes over time, from the PyTorch profiler's memory events: each op
    is a record_function range; after the profile, the bytes held at a range's start and the
    most held within it (both relative to the profile's start)."""

    def __init__(self):
        from torch.profiler import ProfilerActivity
        self.prof = _torch.profiler.profile(activities=[ProfilerActivity.CPU],
                                            profile_memory=True)
        self.open_ranges = {}  # range name -> its record_function, while the op runs
        self.ranges = {}  # range name -> (start ns, end ns), on the profiler's clock
        self.times, self.held = [], []  # each memory event's time, the bytes held after it
        self.count = 0
        self.running = False
        self.unknown = None  # why the memory is not known, when it is not

    def start(self):
        # one profiler at a time: inside the user's own, ours would end theirs
        enabled = getattr(_torch.autograd, "_profiler_enabled", lambda: False)
        if enabled():
            self.unknown = "a PyTorch profiler is already running (the profile leaves it alone)"
            return
        try:
            self.prof.__enter__()
            self.running = True
        except RuntimeError as e:
            self.unknown = "the PyTorch profiler could not start (%s)" % e

    def open(self, op):
        if not self.running:  # nothing to place: no range of ours in another profiler
            return
        self.count += 1
        op.range = "stowage.op#%d" % self.count
        self.open_ranges[op.range] = _torch.autograd.profiler.record_function(op.range)
        self.open_ranges[op.range].__enter__()

    def close(self, op):
        r = self.open_ranges.pop(op.range, None)
        if r is not None:
            r.__exit__(None, None, None)

    def stop(self):
        if not self.running:
            return
        self.prof.__exit__(None, None, None)
        events = []
        try:
            for e in self.prof.profiler.kineto_results.events():
                name = e.name()
                if name == "[memory]" and str(e.device_type()) == "DeviceType.CPU":
                    events.append((e.start_ns(), e.nbytes()))  # a free's bytes are negative
                elif name.startswith("stowage.op#"):
                    self.ranges[name] = (e.start_ns(), e.end_ns())
        except (AttributeError, RuntimeError) as e:  # another PyTorch's profiler results
            self.unknown = "this PyTorch's profiler results cannot be read (%s)" % e
            return
        if not events:
            self.unknown = "the PyTorch profiler recorded no memory events"
        total = 0
        for t, b in sorted(events):
            total += b
            self.times.append(t)
            self.held.append(total)

    def measure(self, op):
        """(bytes held at OP's start, most held within it), or None for an op not seen."""
        span = self.ranges.get(op.range)
        if span is None:
            return None
        lo = bisect.bisect_left(self.times, span[0])
        hi = bisect.bisect_right(self.times, span[1])
        at_start = self.held[lo - 1] if lo > 0 else 0
        return at_start, max([at_start] + self.held[lo:hi])


# what a function may do to a parameter outside the ops that hold it: look at it, not compute
_LOOKS = frozenset(("numel", "nelement", "size", "dim", "stride", "element_size", "data_ptr",
                    "is_contiguous", "untyped_storage", "storage_offset", "is_floating_point",
                    "requires_grad_", "register_hook", "detach", "__get__", "__set__",
                    "__repr__", "__format__", "__hash__", "__len__", "__eq__",
                    "register_post_accumulate_grad_hook"))


def _tensors_in(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, _torch.Tensor))
        elif isinstance(a, _torch.Tensor):
            yield a


class _OutsideUses(_torch.overrides.TorchFunctionMode):
    """Every torch function the watched iteration calls: a parameter passed to one outside the
    ops that hold it (a tied head computed in the parent's forward, F.linear(x, wte.weight)) is
    used where no op makes it resident. ON_USE(parameter index, function name) hears of each
    such use; HOLDS(index) says whether an op holds the parameter now."""

    def __init__(self, index, holds, on_use):
        super().__init__()
        self.index, self.holds, self.on_use = index, holds, on_use

    def __torch_function__(self, func, types=(), args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if name not in _LOOKS and _torch.is_grad_enabled():
            for t in _tensors_in(args, kwargs):
                i = self.index.get(id(t))
                if i is not None and not self.holds(i):
                    self.on_use(i, name)
        return func(*args, **kwargs)


def _first_input(args, kwargs):
    """The batch's tensor among a forward's arguments: `input_ids`, else the first tensor."""
    x = kwargs.get("input_ids")
    if isinstance(x, _torch.Tensor):
        return x
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, _torch.Tensor):
            return a
    return None


def _shape_of(x):
    """(batch, sequence) of a forward's input tensor X: its first dimension and, for token ids
    (an integer tensor of two or more dimensions), its second; 0 where not known."""
    if x is None or x.dim() == 0:
        return (0, 0)
    seq = x.shape[1] if x.dim() >= 2 and not x.is_floating_point() else 0
    return (int(x.shape[0]), int(seq))


def _grad_tensors(out):
    """The tensors of a module's output that need gradients (in tuples, lists, dicts and
    Hugging Face ModelOutputs), in order. A loop, not a recursive closure: a function that
    calls itself through its closure is a reference cycle, and the tensors found would live until
    Python's cycle collector ran (a step's activations, steps later)."""
    found, todo = [], [out]
    while todo:
        o = todo.pop()
        if isinstance(o, _torch.Tensor):
            if o.requires_grad:
                found.append(o)
        elif isinstance(o, (list, tuple)):
            todo.extend(reversed(o))
        elif isinstance(o, dict):
            todo.extend(reversed(list(o.values())))
    return found


_COMPUTE = {"fp32": _torch.float32, "bf16": _torch.bfloat16, "fp16": _torch.float16}


def _precision(precision, what):
    """The 16-bit compute dtype's name PRECISION asks for ("bf16", "fp16"), or None for fp32."""
    if precision is None or precision == "fp32":
        return None
    if precision not in ("bf16", "fp16"):
        raise StowageError("%s: precision=%r: \"bf16\" or \"fp16\" (mixed precision: a 16-bit "
                           "compute copy beside fp32 masters), or None for fp32" % (what, precision))
    return precision


MAX_SKIPPED = 24  # fp16 steps skipped in a row for overflow after which training stops


class _Skips:
    """fp16 steps skipped for gradients that overflowed: over the run and in a row; MAX_SKIPPED
    in a row stop the training with the scale in the message."""

    def __init__(self, limit=MAX_SKIPPED):
        self.limit, self.total, self.in_row = limit, 0, 0

    def count(self, overflowed, scale):
        if not overflowed:
            self.in_row = 0
            return
        self.total += 1
        self.in_row += 1
        if self.in_row >= self.limit:
            raise StowageError(
                "fp16: %d optimizer steps in a row skipped, their gradients not finite; the loss "
                "scale is now %g: the loss or the model's values overflow fp16 whatever the "
                "scale (train in bf16, or find the infinity or NaN)" % (self.in_row, scale))


class LossScale:
    """stowage's dynamic loss scale, for an fp16 loop without a torch.amp.GradScaler, by
    GradScaler's rules: the gradients backward brings to the model's outputs are multiplied by
    SCALE (INIT_SCALE at first); the step divides it out in fp32. A step whose gradients hold an infinity or NaN is skipped and the scale multiplied
    by BACKOFF_FACTOR; after GROWTH_INTERVAL steps in a row that were not, it is multiplied by
    GROWTH_FACTOR. MAX_SKIPPED steps skipped in a row stop the training (StowageError with the
    scale): the loss itself overflows fp16, which no scale mends (the same limit holds under a
    GradScaler). Its state (state_dict) travels
    in the optimizer's state_dict as "stowage_loss_scale"."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, max_skipped=24):
        for name, v, ok in (("init_scale", init_scale, init_scale > 0),
                            ("growth_factor", growth_factor, growth_factor > 1),
                            ("backoff_factor", backoff_factor, 0 < backoff_factor < 1),
                            ("growth_interval", growth_interval, growth_interval >= 1),
                            ("max_skipped", max_skipped, max_skipped >= 1)):
            if not ok or v != v or v in (float("inf"),):
                raise StowageError("LossScale: %s=%r is out of range (init_scale > 0, "
                                   "growth_factor > 1, 0 < backoff_factor < 1, growth_interval "
                                   "and max_skipped >= 1)" % (name, v))
        self.scale = float(init_scale)
        self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.clean = 0  # steps in a row not skipped, since the scale last changed
        self.skips = _Skips(int(max_skipped))

    @staticmethod
    def overflowed(grads):
        """Whether any of GRADS holds an infinity or NaN (one wait for the device)."""
        grads = [g for g in grads if g is not None]
        return bool(grads) and not bool(_torch.stack([g.isfinite().all() for g in grads]).all())

    def update(self, overflowed):
        """After a step: the scale by GradScaler's rules; StowageError after MAX_SKIPPED skipped
        steps in a row."""
        if overflowed:
            self.scale *= self.backoff_factor
            self.clean = 0
            self.skips.count(True, self.scale)
            return
        self.skips.count(False, self.scale)
        self.clean += 1
        if self.clean == self.growth_interval:
            self.scale *= self.growth_factor
            self.clean = 0

    def state_dict(self):
        return {"scale": self.scale, "clean": self.clean, "skipped": self.skips.total,
                "skipped_in_row": self.skips.in_row}

    def load_state_dict(self, state):
        try:
            scale = float(state["scale"])
            clean, skipped = int(state["clean"]), int(state["skipped"])
            in_row = int(state.get("skipped_in_row", 0))
        except (KeyError, TypeError, ValueError) as e:
            raise StowageError("LossScale: a state of scale, clean and skipped is expected (%s)"
                               % e)
        if not scale > 0 or scale == float("inf") or min(clean, skipped, in_row) < 0:
            raise StowageError("LossScale: scale %r, clean %d, skipped %d: out of range"
                               % (scale, clean, skipped))
        self.scale, self.clean = scale, clean
        self.skips.total, self.skips.in_row = skipped, in_row


def _loss_scale(loss_scale, precision, what):
    """LOSS_SCALE as given to profile or wrap (None, True for LossScale(), or a LossScale) for
    a run in PRECISION."""
    if loss_scale is None or loss_scale is False:
        return None
    if precision != "fp16":
        raise StowageError("%s: loss_scale= is fp16's, and this runs in %s" % (what, precision or
                                                                             "fp32"))
    if loss_scale is True:
        return LossScale()
    if not isinstance(loss_scale, LossScale):
        raise StowageError("%s: loss_scale= is a stowage.torch.LossScale, True or None, not %s"
                           % (what, type(loss_scale).__name__))
    return loss_scale


def _step_scale(optimizer, loss_scale, precision, grads, what):
    """(the scale the gradients GRADS carry, whether one overflowed) at an optimizer step in
    mixed PRECISION: the loop's torch.amp.GradScaler's (its step set optimizer.grad_scale and
    found_inf), else LOSS_SCALE's, else none (bf16). fp16 with neither is refused before anything
    is stepped: its small gradients would underflow to zero."""
    scaler = getattr(optimizer, "grad_scale", None)
    if scaler is not None:
        if loss_scale is not None:
            raise StowageError("%s: the loop's torch.amp.GradScaler and loss_scale= both scale "
                               "the loss: give one" % what)
        found = getattr(optimizer, "found_inf", None)
        return float(scaler), found is not None and float(found) > 0
    if loss_scale is not None:
        return loss_scale.scale, LossScale.overflowed(grads)
    if precision == "fp16":
        raise StowageError("%s: fp16 gradients without a loss scale underflow to zero: scale the "
                           "loss with torch.amp.GradScaler (scaler.scale(loss).backward(); "
                           "scaler.step(optimizer); scaler.update()), or give "
                           "loss_scale=stowage.torch.LossScale() for stowage's own at the "
                           "model's outputs" % what)
    return 1.0, False


class _scaler_hidden:
    """optimizer.grad_scale and found_inf (a GradScaler's, for an optimizer that says it
    unscales) hidden while the user's own optimizer steps the unscaled masters."""

    def __init__(self, optimizer):
        self.optimizer, self.saved = optimizer, {}

    def __enter__(self):
        for a in ("grad_scale", "found_inf"):
            if a in self.optimizer.__dict__:
                self.saved[a] = self.optimizer.__dict__.pop(a)

    def __exit__(self, *exc):
        self.optimizer.__dict__.update(self.saved)
        return False


def _scale_backward(out, scale):
    """The gradients that backward brings to OUT's tensors multiplied by SCALE, once: at the
    tensors no other of them was computed from (a Hugging Face model's loss, not the logits it
    was computed from), which is the loss times SCALE for any loss computed from them."""
    nodes = {id(t.grad_fn): t.grad_fn for t in _grad_tensors(out) if t.grad_fn is not None}
    if len(nodes) > 1:  # one walk of the graph below them: the outputs reached are not sinks
        seen, todo = set(), [c for n in nodes.values() for c, _ in n.next_functions if c is not None]
        while todo:
            n = todo.pop()
            if id(n) not in seen:
                seen.add(id(n))
                todo.extend(c for c, _ in n.next_functions if c is not None)
        nodes = {k: n for k, n in nodes.items() if k not in seen}

    def scaled(grad_outputs):
        return tuple(g * scale if g is not None else None for g in grad_outputs)

    for n in nodes.values():
        n.register_prehook(scaled)


class _MixedCopies:
    """Mixed precision in a profiled loop, as a plain PyTorch loop does it: the model's
    parameters are the masters (kept here); forward and backward run on a 16-bit copy of them,
    made at the start and after each optimizer step; the step widens each 16-bit gradient (fp16:
    divides the loss scale out, and skips the step when a gradient overflowed), steps the
    masters with the user's optimizer, and the copies are made again."""

    def __init__(self, params, precision, loss_scale):
        self.params, self.precision, self.loss_scale = params, precision, loss_scale
        self.dtype = _COMPUTE[precision]
        self.masters = []
        self.skips = loss_scale.skips if loss_scale is not None else _Skips()

    def start(self, optimizer):
        """The copies made; OPTIMIZER says it unscales (so that a GradScaler leaves the 16-bit
        gradients to its step)."""
        self.masters = [p.data for _, p in self.params]
        self._copies()
        self.optimizer = optimizer
        self.said = optimizer.__dict__.get("_step_supports_amp_scaling")
        optimizer._step_supports_amp_scaling = True

    def _copies(self, grads=None):
        for k, ((_, p), m) in enumerate(zip(self.params, self.masters)):
            g = p.grad if grads is None else grads[k]
            p.grad = None
            p.data = m.to(self.dtype)
            if g is not None:
                p.grad = g.to(self.dtype)

    def step(self, optimizer, run):
        """RUN (OPTIMIZER's step) on the masters; its result."""
        grads = [p.grad for _, p in self.params]
        scale, overflowed = _step_scale(optimizer, self.loss_scale, self.precision, grads,
                                        "profile")
        unscale = 1.0 / scale
        for (_, p), m, g in zip(self.params, self.masters, grads):
            p.grad = None
            p.data = m
            if g is not None:
                p.grad = g.float() * unscale if unscale != 1.0 else g.float()
        try:
            with _scaler_hidden(optimizer):
                result = None if overflowed else run()
        finally:
            self._copies(grads)
        if self.loss_scale is not None:
            self.loss_scale.update(overflowed)
        else:  # a GradScaler's scale, or none
            self.skips.count(overflowed, scale)
        return result

    def stop(self):
        """The masters back in the model, the gradients widened to them."""
        _restore_attribute(self.optimizer, "_step_supports_amp_scaling", self.said)
        for (_, p), m in zip(self.params, self.masters):
            g = p.grad
            p.grad = None
            p.data = m
            if g is not None:
                p.grad = g.to(m.dtype)


def _restore_attribute(obj, name, value):
    """OBJ's instance attribute NAME back to VALUE, or gone when VALUE is None."""
    if value is None:
        obj.__dict__.pop(name, None)
    else:
        setattr(obj, name, value)


def _micro_steps(stages):
    """Forward-backward runs in a sequence of stages (a forward after a backward begins one)."""
    runs = 1
    for a, b in zip(stages, stages[1:]):
        if a == "bwd" and b == "fwd":
            runs += 1
    return runs


class _interrupts_deferred:
    """Ctrl-C (SIGINT) held back until the block ends, then raised: an optimizer step is not
    left half done. Outside the main thread, where Python cannot catch signals, a no-op."""

    def __enter__(self):
        import signal
        import threading
        self.old, self.caught = None, []
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, lambda sig, frame: self.caught.append(sig))
        return self

    def __exit__(self, *exc):
        import signal
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
            if self.caught and exc[0] is None:
                raise KeyboardInterrupt
        return False


def _replace_step(optimizer, fn):
    """OPTIMIZER.step becomes FN(optimizer, *args, **kwargs) (a plain function) as a bound
    method, so that an LR scheduler created afterwards wraps it as it wraps the class's (it
    rebinds the function); returns how to undo it."""
    had = "step" in optimizer.__dict__
    old = optimizer.__dict__.get("step")

    def step(opt, *args, **kwargs):
        opt._opt_called = True  # what an LR scheduler's own wrapper would say
        return fn(opt, *args, **kwargs)

    # an LR scheduler made before or after finds a step it need not wrap again, and one that
    # says when it has been called
    step._wrapped_by_lr_sched = True
    optimizer.step = types.MethodType(step, optimizer)

    def undo():
        if had:
            optimizer.step = old
        else:
            optimizer.__dict__.pop("step", None)
    return undo


class _Op:
    __slots__ = ("name", "stage", "params", "start", "end", "mem0", "peak", "grads0", "range",
                 "input", "saved", "saving")

    def __init__(self, name, stage, params, start):
        self.name, self.stage, self.params = name, stage, params
        self.start, self.end, self.mem0, self.peak = start, start, 0, 0
        self.grads0 = 0  # bytes of the gradients PyTorch holds at its start
        self.range = None  # on the CPU: the profiler range that times its memory events
        self.input = 0  # a module's forward: the bytes of its input
        self.saved = None  # ... and the storages autograd saves for backward: address -> bytes
        self.saving = None  # the saved-tensor hooks that count them, while it runs


def _autocast_dtype(cuda):
    """The dtype autocast computes in on the profiled device ("bf16", "fp16"), None where the
    code runs without it."""
    kind = "cuda" if cuda else "cpu"
    try:
        on, dtype = _torch.is_autocast_enabled(kind), _torch.get_autocast_dtype(kind)
    except (TypeError, AttributeError):  # a PyTorch before 2.4
        on = _torch.is_autocast_enabled() if cuda else _torch.is_autocast_cpu_enabled()
        dtype = _torch.get_autocast_gpu_dtype() if cuda else _torch.get_autocast_cpu_dtype()
    return {_torch.bfloat16: "bf16", _torch.float16: "fp16"}.get(dtype) if on else None


def _tensor_bytes(x):
    return x.numel() * x.element_size() if isinstance(x, _torch.Tensor) else 0


class _Hooks:
    """The module hooks both the profile and wrap install, calling the owner's begin(name, stage,
    ids) and end(name, stage) at each op's forward and backward, and forward_begins(args,
    kwargs), forward_ends() and backward_begins() at the root's. A module's backward begins when
    the first gradient of its forward's output arrives: a pre-hook on the autograd nodes that made
    the output (cheaper than a full backward hook, which puts a Python autograd function around
    every input and output, and the same moment). Nothing marks a backward's end: a backward op
    ends where the next op begins (a module's backward goes on past the gradients of its inputs,
    with those of its parameters)."""

    def __init__(self, m, owner):
        self.m, self.owner, self.handles = m, owner, []
        root = m.model
        self.handles.append(root.register_forward_pre_hook(self._root_pre, with_kwargs=True))
        self.handles.append(root.register_forward_hook(self._root_post))
        for name, mod, ids in m.ops:
            self.handles.append(mod.register_forward_pre_hook(
                lambda mod, args, name=name, ids=ids: owner.begin(name, "fwd", ids, args)))
            self.handles.append(mod.register_forward_hook(
                lambda mod, args, out, name=name, ids=ids: self._op_post(name, ids, out)))

    @staticmethod
    def _on_first_gradient(out, fn):
        """FN() when the first gradient of OUT's tensors arrives in backward (a hook on the
        nodes that made them: one on the tensors would keep them alive until backward)."""
        fired = []

        def first(grad_outputs):
            if not fired:
                fired.append(True)
                fn()

        for node in {id(t.grad_fn): t.grad_fn for t in _grad_tensors(out)
                     if t.grad_fn is not None}.values():
            node.register_prehook(first)

    def _op_post(self, name, ids, out):
        self.owner.end(name, "fwd")
        if _torch.is_grad_enabled():
            self._on_first_gradient(out, lambda: self.owner.begin(name + ".bwd", "bwd", ids))

    def _root_pre(self, module, args, kwargs):
        self.owner.forward_begins(args, kwargs)

    def _root_post(self, module, args, out):
        self.owner.forward_ends()
        scale = self.owner.output_scale() if _torch.is_grad_enabled() else None
        if scale is not None:
            _scale_backward(out, scale)
        if _torch.is_grad_enabled() and self.owner.wants_backward_start():
            self._on_first_gradient(out, self.owner.backward_begins)

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []


class profile:
    """Records the training iterations run inside it (an iteration ends with optimizer.step());
    save() writes the last complete one.

    PRECISION "bf16" or "fp16" trains the iterations in mixed precision, as wrap trains under the
    plan: the model's fp32 parameters are the masters, forward and backward run on a 16-bit copy
    of them (the trace's tensors are 16-bit, its activations measured as the 16-bit run has them),
    and the optimizer steps the masters with the widened gradients. fp16 needs a loss scale: the
    loop's torch.amp.GradScaler (scaler.scale(loss).backward(); scaler.step(optimizer);
    scaler.update()), or LOSS_SCALE (a LossScale, or True) for stowage's own."""

    def __init__(self, model, optimizer, depth=None, name=None, precision=None, loss_scale=None):
        self.precision = _precision(precision, "profile")
        loss_scale = _loss_scale(loss_scale, self.precision, "profile")
        self.m = Model(model, optimizer, depth, name)
        self.model, self.optimizer = model, optimizer
        self.depth, self.name = self.m.depth, self.m.name
        self.params, self.index = self.m.params, self.m.index
        self.cuda = any(p.is_cuda for _, p in self.params)
        self.iterations = []  # (ops, input shape) of every iteration completed
        self.unreached = []  # of each: the trained parameters no gradient reached
        self.current = []
        self.op = None  # the open _Op (the ops never nest)
        self.shape = None  # the iteration's first training forward's (batch, sequence)
        self.holding = collections.Counter()  # parameter id -> the open ops that hold it
        self.in_step = False  # inside optimizer.step, which steps every parameter
        self.outside = {}  # parameter name -> a function that used it outside its ops
        self._uses = None  # while the first iteration runs: the watch that finds them
        self._hooks = None
        self.cpu_memory = None  # on the CPU, while profiling: the allocator's events
        self.memory_unknown = None  # why non-model memory is not known, when it is not
        self.process = _ProcessMemory()  # the process's peak RSS while profiling
        self.peak_rss = None
        self.gpu_outside = None  # on a GPU: its memory in use outside PyTorch's allocator
        self.measured = False
        self.refused = refusals(model, optimizer, self.params, self.precision)
        self.mixed = None  # while profiling in mixed precision: the masters and their copies
        self.autocast = None  # the dtype autocast ran the forward in, where it did
        if self.precision is not None:
            self.mixed = _MixedCopies(self.params, self.precision, loss_scale)

    # ---- hooks ----------------------------------------------------------------------------
    def _grad_bytes(self):
        """Bytes of the gradients PyTorch holds now."""
        return sum(p.grad.numel() * p.grad.element_size() for _, p in self.params
                   if p.grad is not None)

    def _begin(self, name, stage, ids):
        self.holding.update(ids or ())
        self.in_step = self.in_step or stage == "optim"
        self.process.sample()
        op = _Op(name, stage, ids, 0)
        op.grads0 = self._grad_bytes()
        if self.cuda:
            _torch.cuda.synchronize()
            _torch.cuda.reset_peak_memory_stats()
            op.mem0 = _torch.cuda.memory_allocated()
        else:
            self.cpu_memory.open(op)
        op.start = time.perf_counter_ns()
        self.current.append(op)
        return op

    def _end(self, op):
        if op.saving is not None:
            op.saving.__exit__(None, None, None)
            op.saving = None
        self.process.sample()
        self.holding.subtract(op.params or ())
        if op.stage == "optim":
            self.in_step = False
        if self.cuda:
            _torch.cuda.synchronize()
        op.end = time.perf_counter_ns()
        if self.cuda:
            op.peak = _torch.cuda.max_memory_allocated()
        else:
            self.cpu_memory.close(op)

    def _close(self):
        if self.op is not None:
            self._end(self.op)
            self.op = None

    def begin(self, name, stage, ids, args=None):
        if stage == "fwd" and not _torch.is_grad_enabled():
            return  # an evaluation: not the iteration's
        self._close()
        self.op = self._begin(name, stage, ids)
        if stage == "fwd":
            self._count_saved(self.op, args)

    def _count_saved(self, op, args):
        """A module's forward OP: its input's bytes, and the storages autograd saves for backward
        while it runs (the parameters' own left out: they are model data; and the input's, which
        the block's saved bytes count as its input's whether autograd saves it or not: what an
        offloaded block copies out, and a recomputed one frees, is the rest), by address."""
        x = _first_input(args or (), {})
        op.input = _tensor_bytes(x)
        op.saved = {}
        apart = {q.untyped_storage().data_ptr() for _, q in self.params}  # and the input's:
        if isinstance(x, _torch.Tensor):
            apart.add(x.untyped_storage().data_ptr())

        def pack(x):
            try:
                storage = x.untyped_storage()
                if storage.data_ptr() not in apart:
                    op.saved[storage.data_ptr()] = storage.nbytes()
            except RuntimeError:  # a tensor without storage: not counted
                pass
            return x

        op.saving = _torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x)
        op.saving.__enter__()

    def end(self, name, stage):
        if stage == "fwd" and self.op is not None and self.op.name == name:
            self._close()
        # a backward op ends where the next begins: a module's backward goes on past its hook
        # (its parameters' gradients; the whole of it when no input of the module needs one)

    def forward_begins(self, args, kwargs):
        if not _torch.is_grad_enabled():
            return
        if self.shape is None:
            self.shape = _shape_of(_first_input(args, kwargs))
        self.autocast = _autocast_dtype(self.cuda)  # the last iteration's, as its ops are
        self._close()
        self.op = self._begin(self.name, "fwd", None)  # None: the held parameters

    def forward_ends(self):
        if _torch.is_grad_enabled():
            self._close()

    def backward_begins(self):
        self._close()
        self.op = self._begin(self.name + ".bwd", "bwd", None)

    def _holds(self, i):
        return self.in_step or self.holding[i] > 0 or i in self.m.held

    def wants_backward_start(self):
        """Whether the backward's start is an op: only with held parameters (and while the
        first iteration is watched for them)."""
        return bool(self.m.held or self.outside or self._uses is not None)

    def output_scale(self):
        """fp16's loss scale, which backward's gradients take at the model's outputs."""
        mixed = self.mixed
        return mixed.loss_scale.scale if mixed is not None and mixed.loss_scale else None

    def __enter__(self):
        for why in self.refused:
            warnings.warn("stowage.torch.profile: wrap would refuse this model: " + why)
        if not self.cuda:
            self.cpu_memory = _CpuMemory()
            self.cpu_memory.start()
        if self.mixed is not None:
            self.mixed.start(self.optimizer)
        self.process.start()
        self._hooks = _Hooks(self.m, self)
        step = self.optimizer.step

        def timed_step(opt, *args, **kwargs):
            self._close()
            # the trained parameters no gradient reached (a multimodal model's vision tower in a
            # text step): PyTorch's optimizers step none of them and keep them no state. Not
            # known where the step computes the gradients (a closure) or none arrived at all;
            # and in mixed precision they stay trained, their fp32 masters whole (a frozen
            # parameter is held in the 16-bit dtype, which would round them)
            trained = self.m.trained(range(len(self.params)))
            none = [i for i in trained if self.params[i][1].grad is None]
            closure = bool(args) or "closure" in kwargs
            unreached = [] if closure or len(none) == len(trained) or \
                self.precision is not None else none
            op = self._begin("optimizer.step", "optim", [])
            try:
                if self.mixed is not None:
                    return self.mixed.step(opt, lambda: step(*args, **kwargs))
                return step(*args, **kwargs)
            finally:
                self._end(op)
                self.iterations.append((self.current, self.shape))
                self.unreached.append(unreached)
                self.current, self.shape = [], None
                self._stop_watching_uses()

        self._restore_step = _replace_step(self.optimizer, timed_step)
        # the first iteration is watched for parameters used outside their ops; the later ones,
        # whose times the trace keeps, run without the watch's cost
        self._uses = _OutsideUses(self.index, self._holds,
                                  lambda i, fn: self.outside.setdefault(self.params[i][0], fn))
        self._uses.__enter__()
        return self

    def _model_host_bytes(self):
        """Bytes of host memory the model's state takes now, which wrap's chunks take instead:
        the parameters (and in mixed precision their masters), the gradients beside them and the
        optimizer's state, each storage once."""
        seen, total = set(), 0
        tensors = [p for _, p in self.params] + [p.grad for _, p in self.params]
        tensors += self.mixed.masters if self.mixed is not None else []
        tensors += [v for s in self.optimizer.state.values() for v in s.values()
                    if isinstance(v, _torch.Tensor)]
        for x in tensors:
            if x is None or x.device.type != "cpu":
                continue
            s = x.untyped_storage()
            if s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                total += s.nbytes()
        return total

    def _stop_watching_uses(self):
        if self._uses is not None:
            self._uses.__exit__(None, None, None)
            self._uses = None

    def _held(self):
        """The parameters every forward and backward op of the trace holds: those of the
        modules above the ops, and those seen used outside their ops."""
        return sorted(set(self.m.held) | {self.index[id(p)] for n, p in self.params
                                          if n in self.outside})

    def __exit__(self, *exc):
        self._stop_watching_uses()
        self._close()
        self.peak_rss = self.process.peak()
        if self.cuda:  # the process's own GPU memory outside its tensors: the device's memory
            # in use less what PyTorch's allocator holds (its CUDA context, NCCL's and the
            # libraries' buffers; another process on the same GPU would count too)
            free, total = _torch.cuda.mem_get_info()
            self.gpu_outside = max(total - free - _torch.cuda.memory_reserved(), 0)
        self.model_host_bytes = self._model_host_bytes()
        if self.outside:
            held = [self.index[id(p)] for n, p in self.params if n in self.outside]
            mib = sum(self.params[i][1].numel() for i in held) * 4 / 2.0 ** 20
            warnings.warn("stowage.torch.profile: parameters used outside the modules that hold "
                          "them: %s; the trace holds them resident from the first forward op "
                          "to the last backward op (%.2f MiB of weights); to let the plan move "
                          "them, make each use a module's (a tied head as an nn.Linear whose "
                          "weight is the embedding's)" % (", ".join(
                              "%s (%s)" % kv for kv in sorted(self.outside.items())), mib))
        self._warn_uneven()
        self._hooks.remove()
        self._restore_step()
        if self.mixed is not None:
            self.mixed.stop()
        if self.cpu_memory is not None:
            self.cpu_memory.stop()
            for op in (op for it, _ in self.iterations for op in it):
                op.mem0, op.peak = self.cpu_memory.measure(op) or (0, 0)
            self.memory_unknown = self.cpu_memory.unknown
            self.cpu_memory = None
            if self.memory_unknown is not None:
                warnings.warn("stowage.torch.profile: the non-model memory is not known: %s; "
                              "the trace says so (no_memory_events)" % self.memory_unknown)
        self.measured = True
        return False

    def _warn_uneven(self):
        """Iterations that ran other ops than the last (which the trace keeps and wrap replays)."""
        def seq(it):
            return [(o.name, o.stage) for o in sorted(it, key=lambda o: o.start)
                    if o.params is not None and o.stage != "optim"]
        if len(self.iterations) < 2:
            return
        last = seq(self.iterations[-1][0])
        for n, (it, _) in enumerate(self.iterations[:-1], 1):
            other = seq(it)
            if other == last:
                continue
            k = next((k for k, (a, b) in enumerate(zip(other, last)) if a != b),
                     min(len(other), len(last)))
            at = lambda s: "%s (%s)" % s[k] if k < len(s) else "the end"  # noqa: E731
            warnings.warn("stowage.torch.profile: iteration %d ran other ops than the last "
                          "(op %d is %s there and %s in the last: %d and %d ops); the trace "
                          "keeps the last, and wrap refuses an iteration that runs otherwise "
                          "(a module skipped or run twice, another number of micro-steps)"
                          % (n, k, at(other), at(last), len(other), len(last)))
            return

    # ---- the trace ------------------------------------------------------------------------
    def _tensors(self, t):
        _lib.trace_set_amsgrad(t._h, amsgrad(self.optimizer))
        # PyTorch's AMP: fp32 weights, the forward under autocast (its GEMMs in 16 bits)
        if self.autocast and self.precision is None and \
                all(p.dtype == _torch.float32 for _, p in self.params):
            _call(_lib.trace_set_autocast, t._h, self.autocast.encode())
        for i, (pname, p) in enumerate(self.params):
            shape = (_lib.u64 * max(p.dim(), 1))(*(list(p.shape) or [1]))
            dtype = self.precision or _DTYPES[p.dtype]  # in mixed precision, the copy's
            _call(_lib.trace_add_tensor, t._h, pname.encode(), dtype.encode(), shape,
                  max(p.dim(), 1))
            if self.m.frozen[i]:
                _call(_lib.trace_freeze, t._h, i)

    def trace(self, batch=None, seq=None):
        """The last complete iteration as a stowage.Trace. BATCH and SEQ (sequences per
        iteration, tokens per sequence) default to what the first forward's input says (its
        first dimension, times the micro-steps, and a token tensor's second); 0: unknown."""
        if not self.iterations:
            raise StowageError("profile: no iteration completed inside the profile (an "
                               "iteration ends with optimizer.step())")
        if not self.measured:
            raise StowageError("profile: the trace is made after the `with` block (its "
                               "memory is measured when the profile ends)")
        recorded, shape = self.iterations[-1]
        # a parameter no gradient reached in that iteration is frozen in the trace: no gradient,
        # no optimizer op, no optimizer state (wrap refuses a step that a gradient reaches it in)
        for i in self.unreached[-1]:
            self.m.frozen[i] = True
        held = self._held()
        ops = sorted((o for o in recorded if o.params is not None or held),
                     key=lambda o: o.start)
        device = _torch.cuda.get_device_name() if self.cuda else "cpu"
        memory = _torch.cuda.get_device_properties(0).total_memory if self.cuda else 0
        t = Trace(_lib.trace_new(self.name.encode(), device.encode(), memory))
        self._tensors(t)
        micro = _micro_steps([o.stage for o in ops if o.stage != "optim"])
        _call(_lib.trace_set_steps, t._h, micro, b"framework")
        # non-model bytes: what the allocator holds beyond the model's weights (its holding at
        # the iteration's first op, less the gradients PyTorch held then): activations, and the
        # gradients, which are PyTorch's until the optimizer step
        base = ops[0].mem0 - ops[0].grads0 if ops else 0
        step_ns, step_bytes, nonmodel_peak = 0, 0, 0
        for op in ops:
            at_start = max(op.mem0 - base, 0)
            if op.stage == "optim":
                step_ns += op.end - op.start
                step_bytes = max(step_bytes, at_start)
                continue
            params = self.m.op_params(op.params or [], held)
            grads = self.m.trained(params) if op.stage == "bwd" else []
            peak = max(op.peak - base, at_start)
            nonmodel_peak = max(nonmodel_peak, peak)
            self._add_op(t, op.name, op.stage, params, grads, at_start, peak, op.end - op.start)
        trained = self.m.trained(range(len(self.params)))
        total = sum(self.params[i][1].numel() for i in trained) or 1
        for i in trained:
            pname, p = self.params[i]
            self._add_op(t, "optimizer." + pname, "optim", [i], [], step_bytes, step_bytes,
                         step_ns * p.numel() // total)
        self._blocks(t, [o for o in ops if o.stage != "optim"])
        if self.memory_unknown is not None:  # said in the trace's source, as the importer does
            _lib.trace_warn(t._h, b"no_memory_events", 1)
        # the process's own host memory: its peak RSS less the model's state (the chunks' in a
        # replay) and, on the CPU, the non-model memory (the emulated device's in a replay)
        if self.peak_rss is not None and self.memory_unknown is None:
            own = self.peak_rss - self.model_host_bytes - \
                (0 if self.cuda else max(nonmodel_peak, step_bytes))
            _lib.trace_set_process_bytes(t._h, max(own, 0))
        if self.gpu_outside:
            _lib.trace_set_gpu_process_bytes(t._h, self.gpu_outside)
        if self.outside:
            _lib.trace_warn(t._h, b"params_outside_ops", len(self.outside))
        if self.unreached[-1]:  # frozen above: said, counted
            _lib.trace_warn(t._h, b"params_unreached", len(self.unreached[-1]))
        b, s = shape or (0, 0)
        _lib.trace_set_shape(t._h, b * micro if batch is None else batch,
                             s if seq is None else seq)
        _call(_lib.trace_validate, t._h)
        return t

    def _blocks(self, t, ops):
        """The trace's blocks: each module op's forward (index k among OPS, as added to T) with
        the backward of it that follows, what its forward saved and read, and its time."""
        modules = {n for n, _, _ in self.m.ops}
        taken = set()
        for k, op in enumerate(ops):
            if op.stage != "fwd" or op.name not in modules or op.saved is None:
                continue
            back = next((j for j in range(k + 1, len(ops)) if j not in taken and
                         ops[j].name == op.name + ".bwd"), None)
            if back is None:  # a module whose backward the trace does not see
                continue
            taken.add(back)
            _lib.trace_add_block(t._h, op.name.encode(), k, k, back, back, op.input,
                                 op.input + sum(op.saved.values()), max(op.end - op.start, 0))

    def model_trace(self):
        """The model's tensors as a trace of their own (one op), for the runtime to hold them
        and to hold a plan's trace against."""
        t = Trace(_lib.trace_new(self.name.encode(), b"cpu", 0))
        self._tensors(t)
        _call(_lib.trace_set_steps, t._h, 1, b"framework")
        self._add_op(t, "model", "fwd", [], [], 0, 0, 0)
        for i in self.m.trained(range(len(self.params))):
            self._add_op(t, "optimizer." + self.params[i][0], "optim", [i], [], 0, 0, 0)
        _call(_lib.trace_validate, t._h)
        return t

    @staticmethod
    def _add_op(t, name, stage, params, grads, nonmodel, peak, ns):
        ps = (_lib.u32 * max(len(params), 1))(*params)
        gs = (_lib.u32 * max(len(grads), 1))(*grads)
        _call(_lib.trace_add_op, t._h, name.encode(), stage.encode(), ps, len(params), gs,
              len(grads), nonmodel, peak, max(ns, 0))

    def save(self, path, batch=None, seq=None):
        self.trace(batch, seq).save(path)


_PARAM_VIEW = object()  # marks a saved tensor kept as a view of a parameter
_ON_HOST = object()  # marks a saved tensor of an offloaded block, kept in host memory


class _DeviceArray:
    """NUMEL values at a CUDA device address (TYPESTR: "<f4" fp32, "<f2" fp16, "<i2" for bf16,
    which the interface cannot name: viewed as bf16 after), for torch.as_tensor through
    __cuda_array_interface__ (version 3): the runtime's memory itself, not a copy. There is no
    stream to wait on: the runtime's fetches are complete when op_begin returns, and its copies
    out wait for the work queued on the legacy default stream (wrap orders PyTorch's current
    stream against that one when they differ)."""

    def __init__(self, address, numel, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": (numel,), "typestr": typestr,
                                         "data": (address, False), "strides": None,
                                         "version": 3, "stream": None}


def _load_plan(plan):
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, (str, bytes)) or hasattr(plan, "__fspath__"):
        return Plan.load(plan)
    raise StowageError("wrap: plan= is a file or a stowage.Plan, not %s" % type(plan).__name__)


def _plan_trace(plan, trace):
    """The trace PLAN was made from: TRACE (a path or a stowage.Trace), else the file the plan
    names, as given or beside the plan's own file."""
    if isinstance(trace, Trace):
        return trace
    if trace is not None:
        return Trace.load(trace)
    import os
    named = plan.predictions.get("trace_file")
    if not named:
        raise StowageError("wrap: the plan does not name the trace it was made from: give it "
                           "as trace=")
    tried = [named]
    if plan.path is not None and not os.path.isabs(named):
        tried.append(os.path.join(os.path.dirname(os.path.abspath(plan.path)), named))
    for path in tried:
        if os.path.isfile(path):
            return Trace.load(path)
    raise StowageError("wrap: the plan was made from %s, which is not there (%s): give the "
                       "trace as trace=" % (named, " nor ".join(tried)))


class wrap:
    """Trains MODEL with PLAN until unwrap(MODEL) or the end of a `with` block: the model data
    lives in the C runtime's chunks, moved as the plan says, on the emulated device (the host
    backend) for a model on the CPU, on the GPU (the CUDA backend) for a model on cuda:0.

        model, optimizer = stowage.torch.wrap(model, optimizer, plan="plan.json")
        with stowage.torch.wrap(model, optimizer, plan) as w: ...; print(w.stats)

    PLAN is a plan file or a stowage.Plan; TRACE the trace it was made from (default: the file
    the plan names); DEVICE_BYTES the device's budget (bytes or a size such as "24MiB"; default:
    the plan's). The same model and optimizer objects train, wrapped in place: before each op its
    parameters become views of their resident chunk memory, and between ops they are NaN of their
    shape in no memory (weights are read through state_dict(), which gathers them). The
    optimizer's state comes in (step counts, moments) and goes back out on leaving; its step is
    the library's AdamW where the plan places each chunk, with the optimizer's hyperparameters
    as they are at each step (maximize and Adam's L2 decay applied to the gradient, as PyTorch
    does). Forwards without gradients (evaluation) run outside the plan, their parameters made
    resident on demand within the budget (stats: unplanned_*). A plan that keeps chunks'
    optimizer state on the storage tier (plan(..., nvme=...)) needs STORAGE_DIR, a directory
    there for its scratch file (stats: storage_read_bytes, storage_write_bytes); one that keeps
    chunks' parameters there too is replayed the same way.

    A plan whose trace is 16-bit (profile(..., precision="bf16" or "fp16")) trains in mixed
    precision: modules compute on 16-bit views of the param chunks, gradients come back 16-bit,
    and the optimizer op steps the fp32 master and moments wherever the plan places them and
    writes the new 16-bit copy. The model's trained parameters must be fp32 (the masters; read
    back through state_dict() and unwrap in their own dtype); frozen ones are held in 16-bit
    only. PRECISION, when given, must be the plan's. fp16 needs a loss scale: the loop's
    torch.amp.GradScaler, whose step the wrapped optimizer's unscales in fp32 (skipping it when a
    gradient overflowed), or LOSS_SCALE (a LossScale, or True) for stowage's own, which scales
    the gradients at the model's outputs and travels in the optimizer's state_dict."""

    def __init__(self, model, optimizer, plan, trace=None, device_bytes=None, depth=None,
                 precision=None, loss_scale=None, storage_dir=None):
        if getattr(model, "_stowage_wrap", None) is not None:
            raise StowageError("wrap: the model is wrapped already; stowage.torch.unwrap(model) "
                               "first")
        self.model, self.optimizer = model, optimizer
        self.plan = _load_plan(plan)
        self.trace = _plan_trace(self.plan, trace)
        tj = self.trace.json()
        if tj["model"].get("gradients", "chunks") != "framework":
            raise StowageError("wrap: the trace's gradients live in the chunks (a trace of "
                               "stowage's own trainer, synth or an import), and PyTorch's are its "
                               "own tensors: profile the model with stowage.torch.profile and "
                               "plan that trace")
        self.m = self._model(tj, depth)
        self.p = self.m  # (params, index: the tests' and older callers' name for it)
        self.recomputed = self._plan_blocks(tj, "recompute")
        self.offloaded = self._plan_blocks(tj, "offload")
        self.offloading = None  # the offloaded block's forward running: its input's storage, and
        # its saved storages' host copies by address
        self.offloaded_bytes = 0  # copied to host memory in this iteration (and back)
        self.offloaded_last = 0  # ... in the last completed one
        self._precision(tj, precision, loss_scale)
        why = refusals(model, optimizer, self.m.params, self.mixed)
        if why:
            raise StowageError("wrap: " + why[0])
        self.amsgrad = bool(tj["model"].get("amsgrad"))
        if amsgrad(optimizer) and not self.amsgrad:
            raise StowageError("wrap: the optimizer has amsgrad=True, and the plan's trace was "
                               "profiled without it (its chunks keep no largest variances): "
                               "profile with this optimizer and plan again")
        outside = tj.get("source", {}).get("warnings", {}).get("params_outside_ops", 0)
        self.held = self._held(tj)
        if outside and not self.held:
            raise StowageError("wrap: the profile saw %d parameter%s used outside the modules "
                               "that hold them, and its trace holds none through the ops: "
                               "profile again with this version" % (outside,
                                                                    "" if outside == 1 else "s"))
        self.micro_steps = tj["model"].get("micro_steps", 1)
        self.trace_stages = [o["stage"] for o in tj["ops"]]
        self.run_starts = {k for k, s in enumerate(self.trace_stages)
                           if s == "fwd" and (k == 0 or self.trace_stages[k - 1] == "bwd")}
        self.k = 0  # the plan's ops begun in this iteration
        batch, seq = tj["model"].get("batch", 0), tj["model"].get("seq", 0)
        self.shape = (batch // self.micro_steps, seq)
        self.device = self.m.params[0][1].device if self.m.params else _torch.device("cpu")
        self.cuda = self.device.type == "cuda"
        budget = self.plan.predictions["gpu_budget"] if device_bytes is None else \
            parse_size(device_bytes, "wrap: device_bytes")
        # the initial weights from host memory in fp32 (a GPU model's copied to the host first)
        init = [p.detach().to("cpu", _torch.float32) for _, p in self.m.params]
        from . import Runtime
        structure = profile(model, optimizer, depth=self.m.depth, name=self.m.name,
                            precision=self.mixed)
        structure.m.frozen = list(self.m.frozen)  # the plan's trace's (see _model)
        self.model_trace = structure.model_trace()
        self.rt = Runtime(self.model_trace, budget, plan=self.plan, plan_trace=self.trace,
                          init_addresses=[t.data_ptr() for t in init],
                          device="cuda" if self.cuda else "host", storage_dir=storage_dir)
        del init
        self.shapes = [tuple(p.shape) for _, p in self.m.params]
        self.numel = [p.numel() for _, p in self.m.params]
        self.steps = [0] * len(self.m.params)  # AdamW steps taken, per parameter
        self.views = [None] * len(self.m.params)  # (address, tensor) of each last view
        self.placeholders = [None] * len(self.m.params)  # NaN of each shape, in no memory
        self.slots = {}  # (index, address) -> the tensor over a parameter's optimizer slot
        self.step_like = {}  # parameter index -> its state's "step" tensor, as a model for ours
        self.own_dtypes = [p.dtype for _, p in self.m.params]  # what state_dict and unwrap give
        self.nan = _torch.tensor(float("nan"), dtype=self.dtype, device=self.device)
        self.in_iteration = False
        self.version = 0  # counts changes of the weights: every step and load
        self.resident = {}  # the storage of each resident parameter view -> its tensor id
        self.op = None  # (name, module parameter ids, saved-tensor hooks) of the open op
        self._sd_cache = (None, {})
        self._loading = set()
        self.closed = False
        self._take_state()
        self._activate()

    # ---- what the plan was made for --------------------------------------------------------
    def _precision(self, tj, precision, loss_scale):
        """The compute copy's dtype, from the plan's trace; PRECISION must agree with it."""
        planned = tj["tensors"][0]["dtype"] if tj["tensors"] else "fp32"
        asked = _precision(precision, "wrap")
        if precision is not None and (asked or "fp32") != planned:
            raise StowageError("wrap: precision=%r, and the plan was made for %s compute copies "
                               "(its trace's tensors are %s): profile with precision=%r and plan "
                               "again" % (precision, planned, planned, precision))
        if planned not in _COMPUTE:
            raise StowageError("wrap: the plan's tensors are %s: stowage trains fp32, bf16 or "
                               "fp16" % planned)
        self.dtype = _COMPUTE[planned]
        self.mixed = planned if planned != "fp32" else None
        self.loss_scale = _loss_scale(loss_scale, self.mixed, "wrap")
        self.skips = self.loss_scale.skips if self.loss_scale is not None else _Skips()

    def _model(self, tj, depth):
        """The model as the trace saw it: at DEPTH, else at the depth whose ops are the trace's
        (the profile's depth= is not in the trace); the parameters the trace has frozen that
        the optimizer would step (no gradient reached them when it was profiled) frozen too."""
        m = self._model_at(tj, depth)
        self.unreached = []
        for i, t in enumerate(tj["tensors"][:len(m.params)]):
            if t.get("frozen") and not m.frozen[i] and t["name"] == m.params[i][0]:
                m.frozen[i] = True
                self.unreached.append(i)
        return m

    def _model_at(self, tj, depth):
        name = tj["model"]["name"]
        m = Model(self.model, self.optimizer, depth, name)
        if depth is not None:
            return m
        want = {o["name"] for o in tj["ops"] if o["stage"] == "fwd"} - {name}
        if {n for n, _, _ in m.ops} == want:
            return m
        for d in range(1, 64):
            other = Model(self.model, self.optimizer, d, name)
            if {n for n, _, _ in other.ops} == want:
                return other
            if not other.ops:
                break
        return m

    def _plan_blocks(self, tj, key):
        """The module ops whose blocks the plan recomputes in backward or offloads to host
        memory (KEY: its "recompute" or "offload", indices into the trace's blocks)."""
        blocks = tj.get("blocks", [])
        modules = {n for n, _, _ in self.m.ops}
        names = set()
        for b in self.plan.predictions.get(key, []):
            name = blocks[b]["name"] if b < len(blocks) else None
            if name not in modules:
                raise StowageError("wrap: the plan %ss block %d (%s), which is not one of the "
                                   "model's module ops" % (key, b, name))
            names.add(name)
        return names

    def _held(self, tj):
        """The parameters the trace's ops hold throughout: those of its op of the root's own
        work (named as the model), when it has one."""
        names = {n for n, _, _ in self.m.ops}
        for o in tj["ops"]:
            if o["stage"] == "fwd" and o["name"] == self.m.name and self.m.name not in names:
                return list(o["params"])
        return []

    # ---- state in and out ------------------------------------------------------------------
    def _host(self, i):
        return _torch.empty(self.numel[i], dtype=_torch.float32)

    def _read(self, i):
        """Tensor I's weights, momentum, variance and AMSGrad's largest variance (zeros
        without), as host tensors gathered from wherever the runtime holds them."""
        master, m, v, vmax = (self._host(i) for _ in range(4))
        self.rt.read_state(i, master.data_ptr(), m.data_ptr(), v.data_ptr(), vmax.data_ptr())
        return master, m, v, vmax

    def _write(self, i, master, m=None, v=None, vmax=None):
        """Tensor I's state from these tensors, the parts not given as they are."""
        given = (master, m, v, vmax)
        if any(x is None for x in given):
            given = tuple(x if x is not None else old for x, old in zip(given, self._read(i)))
        args = [x.detach().to("cpu", _torch.float32).contiguous().view(-1) for x in given]
        for x in args:
            if x.numel() != self.numel[i]:
                raise StowageError("wrap: %s holds %d elements, and a value of %d was given"
                                   % (self.m.params[i][0], self.numel[i], x.numel()))
        self.rt.write_state(i, *(x.data_ptr() for x in args))
        self.version += 1

    def _take_state(self, loaded=False):
        """The optimizer's state (step counts, moments) into the chunks; PyTorch's copy goes.
        The weights beside them are the model's own when entering, the chunks' when the
        optimizer's state alone was LOADED."""
        for i, (name, p) in enumerate(self.m.params):
            state = self.optimizer.state.get(p)
            if not state or self.m.frozen[i]:
                continue
            step = state.get("step")
            if isinstance(step, _torch.Tensor):
                self.step_like[i] = step
            self.steps[i] = int(float(step)) if step is not None else 0
            if "exp_avg" in state and "exp_avg_sq" in state:
                weights = self._read(i)[0] if loaded else p.detach()
                vmax = state.get("max_exp_avg_sq")
                self._write(i, weights, state["exp_avg"], state["exp_avg_sq"],
                            vmax if vmax is not None else _torch.zeros(self.numel[i]))
            del self.optimizer.state[p]

    def _step_tensor(self, i):
        like = self.step_like.get(i)
        if like is None:
            return _torch.tensor(float(self.steps[i]), dtype=_torch.float32)
        return _torch.tensor(float(self.steps[i]), dtype=like.dtype, device=like.device)

    def _optimizer_state(self, i, read=None):
        """Parameter I's state as PyTorch's Adam keeps it (from READ, _read(i)'s, when given)."""
        _, m, v, vmax = read if read is not None else self._read(i)
        shape = self.shapes[i]
        state = {"step": self._step_tensor(i), "exp_avg": m.view(shape).to(self.device),
                 "exp_avg_sq": v.view(shape).to(self.device)}
        if self.group_of(i).get("amsgrad"):
            state["max_exp_avg_sq"] = vmax.view(shape).to(self.device)
        return state

    def group_of(self, i):
        p = self.m.params[i][1]
        return next((g for g in self.optimizer.param_groups
                     if any(q is p for q in g["params"])), {})

    def _weights(self, i, key):
        """Tensor I's weights as a tensor of its own on the model's device, in the model's
        dtype, one per state_dict call (a tie's names share it, as they share the parameter)."""
        if self._sd_cache[0] != key:
            self._sd_cache = (key, {})
        cache = self._sd_cache[1]
        if i not in cache:
            master = self._read(i)[0]
            cache[i] = master.view(self.shapes[i]).to(self.device, self.own_dtypes[i])
        return cache[i]

    # ---- the hooks -------------------------------------------------------------------------
    def _activate(self):
        self.hooks = _Hooks(self.m, self)
        def hook(method):  # a function of its own: torch marks the hooks it is given
            return lambda *args: method(*args)

        for m in {id(m): m for i in self.m.owners for m, _ in self.m.owners[i]}.values():
            self.hooks.handles += [
                m.register_state_dict_post_hook(hook(self._state_dict_hook)),
                m.register_load_state_dict_pre_hook(hook(self._load_pre_hook)),
                m.register_load_state_dict_post_hook(hook(self._load_post_hook))]
        opt = self.optimizer
        self._opt_filled = []
        self.hooks.handles.append(opt.register_state_dict_pre_hook(self._opt_state_pre))
        self.hooks.handles.append(opt.register_state_dict_post_hook(self._opt_state_post))
        self.hooks.handles.append(opt.register_load_state_dict_pre_hook(self._opt_load_pre))
        self.hooks.handles.append(opt.register_load_state_dict_post_hook(self._opt_load_post))
        self._restore_step = _replace_step(opt, lambda o, *a, **k: self._optimizer_step(o, *a, **k))
        # in mixed precision the step unscales: a torch.amp.GradScaler leaves the 16-bit
        # gradients to it (optimizer.grad_scale, found_inf) rather than unscaling them
        self._said_amp = opt.__dict__.get("_step_supports_amp_scaling")
        if self.mixed:
            opt._step_supports_amp_scaling = True
        for i, (_, p) in enumerate(self.m.params):
            p.data = self._placeholder(i)
        self._checkpointed = self._checkpoint_blocks()
        self.model._stowage_wrap = self

    def _checkpoint_blocks(self):
        """The recomputed blocks' modules run through torch.utils.checkpoint (non-reentrant):
        their forward keeps its inputs alone, and backward reruns it at its first saved tensor,
        bitwise (the same kernels on the same inputs, the RNG state restored). [(module, its
        forward before)] for close to restore."""
        out = []
        for name, mod, _ in self.m.ops:
            if name not in self.recomputed:
                continue
            before = mod.__dict__.get("forward")
            plain = mod.forward

            def forward(*args, _plain=plain, **kwargs):
                if not _torch.is_grad_enabled():
                    return _plain(*args, **kwargs)
                return _torch.utils.checkpoint.checkpoint(_plain, *args, use_reentrant=False,
                                                          **kwargs)
            mod.forward = forward
            out.append((mod, before))
        return out

    def _state_dict_hook(self, module, state_dict, prefix, local_metadata):
        for attr, p in module._parameters.items():
            i = self.m.index.get(id(p)) if p is not None else None
            if i is not None and prefix + attr in state_dict:
                state_dict[prefix + attr] = self._weights(i, (id(state_dict), self.version))

    def _load_pre_hook(self, module, state_dict, prefix, *args):
        # the model's own loading copies into a real tensor of the parameter's shape, with its
        # checks; the post hook takes the values into the chunks
        for attr, p in module._parameters.items():
            i = self.m.index.get(id(p)) if p is not None else None
            if i is not None and prefix + attr in state_dict and i not in self._loading:
                p.data = _torch.empty(self.shapes[i], dtype=self.own_dtypes[i],
                                      device=self.device)
                self._loading.add(i)

    def _load_post_hook(self, module, incompatible_keys):
        for attr, p in module._parameters.items():
            i = self.m.index.get(id(p)) if p is not None else None
            if i is not None and i in self._loading:
                self._loading.discard(i)
                self._write(i, p.data)
                p.data = self._placeholder(i)

    def _opt_state_pre(self, optimizer):
        for i, (_, p) in enumerate(self.m.params):
            if not self.m.frozen[i] and self.steps[i] > 0:
                optimizer.state[p] = self._optimizer_state(i)
                self._opt_filled.append(p)

    def _opt_state_post(self, optimizer, state_dict):
        for p in self._opt_filled:
            optimizer.state.pop(p, None)
        self._opt_filled = []
        if self.loss_scale is not None:
            state_dict["stowage_loss_scale"] = self.loss_scale.state_dict()
        return state_dict

    def _opt_load_pre(self, optimizer, state_dict):
        if self.loss_scale is not None and "stowage_loss_scale" in state_dict:
            self.loss_scale.load_state_dict(state_dict["stowage_loss_scale"])

    def _opt_load_post(self, optimizer):
        self._take_state(loaded=True)

    # ---- ops -------------------------------------------------------------------------------
    def _view(self, i):
        """Tensor I's resident compute copy, as a tensor over the runtime's memory (the one
        made last time while the chunk stays at the same address)."""
        address = self.rt.param_address(i)
        cached = self.views[i]
        if cached is not None and cached[0] == address:
            return cached[1]
        if self.cuda:
            view = self._device_tensor(address, i).view(self.shapes[i])
        else:
            view = self._host_tensor(address, i).view(self.shapes[i])
        self.views[i] = (address, view)
        return view

    def _device_tensor(self, address, i):
        """The compute copy's NUMEL values at a device ADDRESS, in the plan's dtype."""
        typestr = {_torch.float32: "<f4", _torch.float16: "<f2"}.get(self.dtype, "<i2")
        t = _torch.as_tensor(_DeviceArray(address, self.numel[i], typestr), device=self.device)
        return t.view(self.dtype) if t.dtype != self.dtype else t

    def _host_tensor(self, address, i):
        """The compute copy's NUMEL values at a host ADDRESS, in the plan's dtype."""
        ctype = ctypes.c_float if self.dtype == _torch.float32 else ctypes.c_uint16
        return _torch.frombuffer((ctype * self.numel[i]).from_address(address), dtype=self.dtype)

    def _ordered(self, fn, *args, **kwargs):
        """The runtime's FN, ordered against PyTorch's current stream: the runtime queues its
        copies and GPU Adam after the work on the legacy default stream, so PyTorch computing
        on another stream waits for that stream and is waited for, each way."""
        if not self.cuda:
            return fn(*args, **kwargs)
        current = _torch.cuda.current_stream(self.device)
        default = _torch.cuda.default_stream(self.device)
        if current == default:
            return fn(*args, **kwargs)
        default.wait_stream(current)
        result = fn(*args, **kwargs)
        current.wait_stream(default)
        return result

    def _placeholder(self, i):
        if self.placeholders[i] is None:
            self.placeholders[i] = self.nan.expand(self.shapes[i])
        return self.placeholders[i]

    def _show(self, ids):
        for i in ids:
            self.m.params[i][1].data = self._view(i)
            self.resident[self.views[i][0]] = i  # the view's storage begins at the address

    def _hide(self, ids):
        for i in ids:
            if self.views[i] is not None and self.resident.get(self.views[i][0]) == i:
                del self.resident[self.views[i][0]]
            self.m.params[i][1].data = self._placeholder(i)

    def _open(self, name, stage, ids, grads=True):
        """Begins op NAME over module parameters IDS (and the held ones): the plan's next op in
        a training pass, an unplanned one in a forward without gradients. A bwd op writes the
        trained ones' gradients unless GRADS is false (a recomputation)."""
        params = self.m.op_params(ids, self.held)
        unplanned = stage == "fwd" and not _torch.is_grad_enabled()
        if unplanned:
            self._ordered(self.rt.unplanned_op_begin, name, params)
        else:
            self._iteration()
            grads = self.m.trained(params) if stage == "bwd" and grads else []
            self._ordered(self.rt.op_begin, name, stage, params, grads)
            self.k += 1
        self._show(params)
        saved = None  # what the forward saves for backward (autograd's engine has its own
        if stage == "fwd" and not unplanned:  # thread state in backward, which saves nothing)
            saved = _torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
            saved.__enter__()
        self.op = (name, ids, saved)

    def _close(self):
        if self.op is None:
            return
        name, ids, saved = self.op
        self.op = None
        if self.offloading is not None:  # the device storages go: their host copies stay
            for entry in self.offloading[1].values():
                entry[2] = None
        self.offloading = None
        if saved is not None:
            saved.__exit__(None, None, None)
        self._ordered(self.rt.op_end)
        # the held parameters stay visible: they are used between the ops too
        self._hide([i for i in ids if i not in self.held] if self.held else ids)

    def begin(self, name, stage, ids, args=None):
        self._close()
        if stage == "bwd" and name[:-4] in self.recomputed:
            # the plan's recomputation op, before the block's backward: its parameters resident
            # (PyTorch reruns the block's forward at the backward's first saved tensor, in the
            # backward op, which holds them too)
            self._open(name[:-4] + ".recompute", "bwd", ids, grads=False)
            self._close()
        self._open(name, stage, ids)
        if stage == "fwd" and name in self.offloaded and _torch.is_grad_enabled():
            x = _first_input(args or (), {})
            self.offloading = (x.untyped_storage().data_ptr()
                               if isinstance(x, _torch.Tensor) else None, {})

    def end(self, name, stage):
        # a backward op ends where the next begins (profile.end says why)
        if stage == "fwd" and self.op is not None and self.op[0] == name:
            self._close()

    def _iteration(self):
        """An iteration begun, if none is."""
        if not self.in_iteration:
            self.rt.iteration_begin()
            self.in_iteration = True
            self.offloaded_bytes = 0
            self.k = 0
            self._sd_cache = (None, {})

    def _abandon(self):
        """Ends an iteration that stopped part way (an exception in the step): the runtime
        starts the plan's ops again at the next, as the model does."""
        self._close()
        self._hide(range(len(self.m.params)))
        self.rt.iteration_abandon()
        self.in_iteration = False
        warnings.warn("stowage.torch.wrap: the last iteration stopped after %d of its %d ops "
                      "(an exception in the step?): it is abandoned, and this forward begins "
                      "the next; the gradients PyTorch holds from it are left as they are"
                      % (self.k, len(self.trace_stages)))

    def forward_begins(self, args, kwargs):
        if _torch.is_grad_enabled():
            self._check_shape(args, kwargs)
            if self.in_iteration and self.k not in self.run_starts:
                self._abandon()
        self._close()
        if self.held:
            self._open(self.m.name, "fwd", [])

    def forward_ends(self):
        self._close()
        if self.held and not _torch.is_grad_enabled():
            self._hide(self.held)  # an evaluation's: its chunks may move before the next op

    def wants_backward_start(self):
        return bool(self.held)

    def output_scale(self):
        """fp16's loss scale, which backward's gradients take at the model's outputs."""
        return self.loss_scale.scale if self.loss_scale is not None else None

    def backward_begins(self):
        if self.held:
            self._close()
            self._open(self.m.name + ".bwd", "bwd", [])

    def _check_shape(self, args, kwargs):
        b, s = _shape_of(_first_input(args, kwargs))
        tb, ts = self.shape
        if (tb and b > tb) or (ts and s > ts):
            raise StowageError(
                "wrap: this forward's input is %d x %d (batch x sequence), and the plan's trace "
                "was profiled at %d x %d per micro-step: larger activations than the plan leaves "
                "room for (on a GPU, past its budget); profile this shape and plan again (a "
                "smaller batch, such as an epoch's last, trains under the plan)" % (b, s, tb, ts))

    # Autograd keeps tensors for backward, among them views of parameters (addmm's weight.t()):
    # kept as they are, they would point into chunk memory the runtime has since reused. They
    # are kept as (parameter, size, stride, offset) instead and made again, at backward, from
    # the parameter's resident memory of that moment.
    #
    # An offloaded block's forward keeps what it saves, but its input and the parameters, in
    # host memory: each storage copied once (several saved tensors may share one; the storage
    # itself held until the forward ends, so that its address names it alone), and brought
    # back whole at the first of them its backward unpacks; bitwise what it saved.
    def _pack(self, t):
        try:
            storage = t.untyped_storage()
            i = self.resident.get(storage.data_ptr())
        except RuntimeError:  # a tensor without storage (sparse, nested): as it is
            return t
        if i is None:
            if self.offloading is None or storage.data_ptr() == self.offloading[0]:
                return t
            return self._to_host(t, storage)
        return (_PARAM_VIEW, i, tuple(t.size()), tuple(t.stride()), t.storage_offset())

    def _to_host(self, t, storage):
        copies = self.offloading[1]
        entry = copies.get(storage.data_ptr())
        if entry is None:
            host = _torch.empty(storage.nbytes(), dtype=_torch.uint8, device="cpu",
                                pin_memory=self.device.type == "cuda")
            host.untyped_storage().copy_(storage)
            entry = copies[storage.data_ptr()] = [host, None, storage]
            self.offloaded_bytes += storage.nbytes()
        return (_ON_HOST, entry, t.dtype, tuple(t.size()), tuple(t.stride()), t.storage_offset())

    def _unpack(self, packed):
        if isinstance(packed, tuple) and packed and packed[0] is _ON_HOST:
            _, entry, dtype, size, stride, offset = packed
            if entry[1] is None:  # back on the device, once for all that share it
                back = _torch.empty(entry[0].numel(), dtype=_torch.uint8, device=self.device)
                back.untyped_storage().copy_(entry[0].untyped_storage())
                entry[0], entry[1], entry[2] = None, back.untyped_storage(), None
            return _torch.empty(0, dtype=dtype, device=self.device).set_(entry[1], offset, size,
                                                                         stride)
        if not (isinstance(packed, tuple) and packed and packed[0] is _PARAM_VIEW):
            return packed
        _, i, size, stride, offset = packed
        base = self.m.params[i][1].data
        if base.untyped_storage().data_ptr() not in self.resident:
            raise StowageError("wrap: backward needs %s outside an op that holds it resident"
                               % self.m.params[i][0])
        return base.as_strided(size, stride, offset)

    # ---- the optimizer's step --------------------------------------------------------------
    def _optimizer_step(self, optimizer, closure=None):
        loss = None
        if closure is not None:
            with _torch.enable_grad():
                loss = closure()
        self._close()
        self._hide(self.held)
        group_of = {id(q): g for g in optimizer.param_groups for q in g["params"]}
        # everything that can refuse the step is checked before any parameter is stepped, and
        # Ctrl-C waits for the step's end: the step completes, or leaves the model as it was
        for i in self.unreached:
            if self.m.params[i][1].grad is not None:
                raise StowageError("wrap: a gradient reached %s, which none reached in the "
                                   "iteration the plan's trace was profiled from (the plan "
                                   "keeps it no optimizer state): profile an iteration that "
                                   "reaches it and plan again" % self.m.params[i][0])
        for i, (name, p) in enumerate(self.m.params):
            grad = p.grad
            if self.m.frozen[i] or grad is None:
                continue
            if grad.is_sparse:
                raise StowageError("wrap: %s has a sparse gradient, which the library's AdamW "
                                   "does not step" % name)
            if grad.numel() != self.numel[i]:
                raise StowageError("wrap: %s has a gradient of %d elements for %d"
                                   % (name, grad.numel(), self.numel[i]))
        first = self.trace_stages.index("optim") if "optim" in self.trace_stages else 0
        trained = self.m.trained(range(len(self.m.params)))
        if self.in_iteration and self.k != first and trained:
            # not where the plan steps: the runtime refuses the step's first op with its message
            # (which op the plan has here, and why that happens), before anything is stepped
            i = trained[0]
            self._ordered(self.rt.op_begin, "optimizer." + self.m.params[i][0], "optim", [i], [])
        self._iteration()
        # the loss scale the gradients carry; one that overflowed skips the step (the plan's
        # moves still run)
        scale, overflowed = 1.0, False
        if self.mixed:
            scale, overflowed = _step_scale(optimizer, self.loss_scale, self.mixed, [
                p.grad for i, (_, p) in enumerate(self.m.params) if not self.m.frozen[i]], "wrap")
        with _interrupts_deferred():
            for i, (name, p) in enumerate(self.m.params):
                if self.m.frozen[i]:
                    continue
                self._ordered(self.rt.op_begin, "optimizer." + name, "optim", [i], [])
                self.k += 1
                try:
                    if not overflowed:
                        self._adam(i, name, p, group_of[id(p)], scale)
                finally:
                    self._ordered(self.rt.op_end)
            self._ordered(self.rt.iteration_end)
            self.in_iteration = False
            self.offloaded_last = self.offloaded_bytes
            self.version += 1
        if self.loss_scale is not None:
            self.loss_scale.update(overflowed)
        else:  # a GradScaler's scale, or none
            self.skips.count(overflowed, scale)
        return loss

    def _adam(self, i, name, p, g, scale=1.0):
        """One AdamW step of parameter I where the plan steps it, as PyTorch's Adam would: no
        gradient, no step; maximize and Adam's L2 decay applied to the gradient."""
        grad = p.grad
        if grad is None:
            return
        self.steps[i] += 1
        dst, on_device = self.rt.optim_grad(i)
        slot = self.slots.get((i, dst))
        if slot is None:  # the slot this parameter is stepped in, made once while it stays
            # GPU Adam: the gradient into its device slot, on the default stream; CPU Adam (or
            # the emulated device): host memory
            slot = self._device_tensor(dst, i) if on_device else self._host_tensor(dst, i)
            self.slots = {k: v for k, v in self.slots.items() if k[0] != i}
            self.slots[(i, dst)] = slot
        src = grad.detach().reshape(-1).to(slot.device, self.dtype)
        if g.get("maximize"):
            src = -src
        decoupled = isinstance(self.optimizer, _torch.optim.AdamW) or \
            g.get("decoupled_weight_decay", False)
        wd = float(g.get("weight_decay", 0.0))
        if wd and not decoupled:  # Adam's L2: the decay is part of the gradient (in mixed
            # precision, of the 16-bit weights in the slot, times the loss scale the gradient has;
            # an fp32 copy stepped on the CPU has handed its weights to the master's buffer)
            moved = self.rt.optim_weights(i)
            weights = slot if moved is None else self._host_tensor(moved, i)
            src = src.add(weights, alpha=wd) if not self.mixed else \
                (src.float() + weights.float() * (wd * scale)).to(self.dtype)
        slot.copy_(src)
        beta1, beta2 = g["betas"]
        self._ordered(self.rt.adam, i, self.steps[i], lr=float(g["lr"]),
                      betas=(float(beta1), float(beta2)), eps=float(g["eps"]),
                      weight_decay=wd if decoupled else 0.0, amsgrad=bool(g.get("amsgrad")),
                      loss_scale=scale)

    # ---- leaving ---------------------------------------------------------------------------
    def __iter__(self):
        return iter((self.model, self.optimizer))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Hands everything back: the trained weights into the model's own memory, the
        optimizer's state (step counts, moments) into the optimizer."""
        if self.closed:
            return
        self.closed = True
        if self.op is not None and self.op[2] is not None:
            self.op[2].__exit__(None, None, None)
        self.op = None
        self.hooks.remove()
        self._restore_step()
        for mod, before in self._checkpointed:
            _restore_attribute(mod, "forward", before)
        if self.mixed:
            _restore_attribute(self.optimizer, "_step_supports_amp_scaling", self._said_amp)
        # tensor by tensor, each chunk freed once its tensors are PyTorch's: the process never
        # holds the chunks and PyTorch's copies of the whole model at once
        self.final_stats = self.rt.stats
        for i, (name, p) in enumerate(self.m.params):
            read = self._read(i)
            if not self.m.frozen[i] and self.steps[i] > 0:
                self.optimizer.state[p] = self._optimizer_state(i, read)
            p.data = read[0].view(self.shapes[i]).to(self.device, self.own_dtypes[i])
            del read
            self.rt.hand_back(i)
        self.rt = None
        if getattr(self.model, "_stowage_wrap", None) is self:
            del self.model._stowage_wrap

    @property
    def stats(self):
        """The runtime's figures, its chunks' bytes moved with the offloaded blocks' saved
        tensors (copied to host memory and back, as the plan's predictions count them)."""
        s = dict(self.rt.stats if self.rt is not None else self.final_stats)
        s["h2d_bytes"] += self.offloaded_last
        s["d2h_bytes"] += self.offloaded_last
        return s


def unwrap(model):
    """Ends stowage.torch.wrap on MODEL: its weights and its optimizer's state are PyTorch's
    again. Returns the model."""
    w = getattr(model, "_stowage_wrap", None)
    if w is None:
        raise StowageError("unwrap: the model is not wrapped")
    w.close()
    return model
