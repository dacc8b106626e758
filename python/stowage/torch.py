"""stowage.torch — a PyTorch training step recorded as a stowage trace.

    with stowage.torch.profile(model, optimizer) as p:
        for step in range(3):
            loss = model(x).loss; loss.backward(); optimizer.step(); optimizer.zero_grad()
    p.save("trace.json")

Module hooks mark the ops: each forward of a module at the chosen depth of the module tree (by
default the layers': the first depth at which a module class repeats) is an op reading the
parameters that module owns, and its backward an op writing their gradients; parameters of no
such module are read by ops of their own (the module that owns them, wherever it runs). The
optimizer's step is one op per parameter, its time shared by size. Names are the model's own
(`transformer.h.3.attn.c_attn.weight`), a tied parameter once. Durations are measured. Non-model
memory is what the allocator holds beyond the model data, at each op's start and at its peak,
relative to the first op of the iteration: on a GPU from the CUDA allocator
(`torch.cuda.memory_allocated`, `max_memory_allocated`); on the CPU from the PyTorch profiler's
memory events (every allocation and free, with its bytes), each op a `record_function` range.
Gradients that PyTorch allocates during the iteration are model data (they live in the
gradient chunks), so their bytes are taken out. The last complete iteration (forward,
backward, optimizer step) is kept. The trace is built and checked by the C library.
"""
import bisect
import collections
import ctypes
import time
import warnings

import torch as _torch

from . import StowageError, Trace, _call, _lib

_DTYPES = {_torch.float32: "fp32", _torch.float16: "fp16", _torch.bfloat16: "bf16"}


_CONTAINERS = (_torch.nn.ModuleList, _torch.nn.ModuleDict, _torch.nn.ParameterList,
               _torch.nn.ParameterDict)


def _tree(model):
    """(name, module, depth) of every module that runs: containers that have no forward of
    their own (ModuleList, ModuleDict) are not levels of the tree."""
    out = []

    def walk(prefix, module, depth):
        for child_name, child in module.named_children():
            name = prefix + "." + child_name if prefix else child_name
            if isinstance(child, _CONTAINERS):
                walk(name, child, depth)
            else:
                out.append((name, child, depth + 1))
                walk(name, child, depth + 1)

    walk("", model, 0)
    return out


def _layer_depth(model):
    """The first depth of the module tree at which a module class appears twice (the layers);
    else the deepest."""
    by_depth = collections.defaultdict(list)
    for _, m, d in _tree(model):
        by_depth[d].append(type(m).__name__)
    for d in sorted(by_depth):
        if len(set(by_depth[d])) < len(by_depth[d]):
            return d
    return max(by_depth) if by_depth else 1


class _Op:
    __slots__ = ("name", "stage", "params", "grads", "start", "end", "mem0", "peak", "grads0",
                 "grads1", "range")

    def __init__(self, name, stage, params, grads, start):
        self.name, self.stage, self.params, self.grads = name, stage, params, grads
        self.start, self.end, self.mem0, self.peak = start, start, 0, 0
        self.grads0 = self.grads1 = 0  # bytes of the gradients PyTorch holds at start, at end
        self.range = None  # on the CPU: the profiler range that times its memory events


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
                    "__repr__", "__format__", "__hash__", "__len__", "__eq__"))


def _tensors_in(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, _torch.Tensor))
        elif isinstance(a, _torch.Tensor):
            yield a


class _OutsideUses(_torch.overrides.TorchFunctionMode):
    """Every torch function the profiled iterations call: a parameter passed to one outside the
    ops that hold it (a tied head computed in the parent's forward, F.linear(x, wte.weight)) is
    used where no op makes it resident, which the trace cannot say and wrap cannot serve."""

    def __init__(self, prof):
        super().__init__()
        self.prof = prof
        self.found = {}  # parameter name -> the first function that used it so

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        p = self.prof
        if not p.in_step and getattr(func, "__name__", "") not in _LOOKS:
            for t in _tensors_in(args, kwargs):
                i = p.index.get(id(t))
                if i is not None and not p.held.get(i):
                    self.found.setdefault(p.params[i][0], getattr(func, "__name__", str(func)))
        return func(*args, **kwargs)


class profile:
    """Records the iterations run inside it; save() writes the last complete one."""

    def __init__(self, model, optimizer, depth=None, name=None):
        self.model, self.optimizer = model, optimizer
        self.depth = depth if depth is not None else _layer_depth(model)
        self.name = name or type(model).__name__
        self.cuda = any(p.is_cuda for p in model.parameters())
        # parameters by identity, named once (named_parameters drops the duplicates of a tie)
        self.params = []
        self.index = {}
        for pname, p in model.named_parameters():
            if p.dtype not in _DTYPES:
                raise StowageError("parameter %s is %s: stowage traces hold fp32, fp16 or bf16"
                                   % (pname, p.dtype))
            self.index[id(p)] = len(self.params)
            self.params.append((pname, p))
        self.handles = []
        self.iterations = []
        self.current = []
        self.open = {}
        self.held = collections.Counter()  # parameter id -> the open ops that hold it
        self.in_step = False  # inside optimizer.step, which steps every parameter
        self.outside = {}  # parameter name -> a function that used it outside its ops
        self._uses = None  # while the first iteration runs: the watch that finds them
        self.cpu_memory = None  # on the CPU, while profiling: the allocator's events
        self.memory_unknown = None  # why non-model memory is not known, when it is not
        self.measured = False

    # ---- hooks --------------------------------------------------------------------------
    def _grad_bytes(self):
        """Bytes of the gradients PyTorch holds now (model data, not activations)."""
        return sum(p.grad.numel() * p.grad.element_size() for _, p in self.params
                   if p.grad is not None)

    def _begin(self, name, stage, ids, grads):
        self.held.update(ids)
        self.in_step = self.in_step or stage == "optim"
        op = _Op(name, stage, ids, grads, 0)
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
        self.held.subtract(op.params)
        if op.stage == "optim":
            self.in_step = False
        if self.cuda:
            _torch.cuda.synchronize()
        op.end = time.perf_counter_ns()
        if self.cuda:
            op.peak = _torch.cuda.max_memory_allocated()
        else:
            self.cpu_memory.close(op)
        op.grads1 = self._grad_bytes()

    def _ids(self, params):
        return sorted({self.index[id(p)] for p in params if id(p) in self.index})

    def _marked(self):
        """The modules that are ops, with the parameters each reads: those at the depth (all
        their parameters), and above it those holding parameters themselves (only those: a
        tied LM head reads the embedding it shares)."""
        marked = []
        below = []
        for name, m, d in _tree(self.model):
            if d == self.depth:
                marked.append((name, m, self._ids(m.parameters())))
                below.append(name + ".")
        roots = [("", self.model, 0)] + _tree(self.model)
        for name, m, d in roots:
            if d >= self.depth or any(name.startswith(b) for b in below):
                continue
            own = self._ids(m.parameters(recurse=False))
            if own:
                marked.append((name or self.name, m, own))
        return marked

    def __enter__(self):
        if not self.cuda:
            self.cpu_memory = _CpuMemory()
            self.cpu_memory.start()
        for name, m, ids in self._marked():
            self.handles.append(m.register_forward_pre_hook(self._fwd_pre(name, ids)))
            self.handles.append(m.register_forward_hook(self._fwd_post(name)))
            self.handles.append(m.register_full_backward_pre_hook(self._bwd_pre(name, ids)))
            self.handles.append(m.register_full_backward_hook(self._bwd_post(name)))
        step = self.optimizer.step

        def timed_step(*args, **kwargs):
            op = self._begin("optimizer.step", "optim", [], [])
            try:
                return step(*args, **kwargs)
            finally:
                self._end(op)
                self.iterations.append(self.current)
                self.current = []
                self._stop_watching_uses()

        self._step = step
        self.optimizer.step = timed_step
        # the first iteration is watched for parameters used outside their ops; the later ones,
        # whose times the trace keeps, run without the watch's cost
        self._uses = _OutsideUses(self)
        self._uses.__enter__()
        return self

    def _stop_watching_uses(self):
        if self._uses is not None:
            self._uses.__exit__(None, None, None)
            self.outside = self._uses.found
            self._uses = None

    def __exit__(self, *exc):
        self._stop_watching_uses()
        if self.outside:
            warnings.warn("stowage.torch.profile: parameters used outside the modules that hold "
                          "them: %s; no op of the trace makes them resident there, and wrap "
                          "refuses the trace (make the use a module's, or profile at a depth "
                          "whose modules contain it)" % ", ".join(
                              "%s (%s)" % kv for kv in sorted(self.outside.items())))
        for h in self.handles:
            h.remove()
        self.optimizer.step = self._step
        if self.cpu_memory is not None:
            self.cpu_memory.stop()
            for op in (op for it in self.iterations for op in it):
                op.mem0, op.peak = self.cpu_memory.measure(op) or (0, 0)
            self.memory_unknown = self.cpu_memory.unknown
            self.cpu_memory = None
            if self.memory_unknown is not None:
                warnings.warn("stowage.torch.profile: the non-model memory is not known: %s; "
                              "the trace says so (no_memory_events)" % self.memory_unknown)
        self.measured = True
        return False

    def _fwd_pre(self, name, ids):
        def hook(module, args):
            self.open[("fwd", name)] = self._begin(name, "fwd", ids, [])
        return hook

    def _fwd_post(self, name):
        def hook(module, args, out):
            op = self.open.pop(("fwd", name), None)
            if op is not None:
                self._end(op)
        return hook

    def _bwd_pre(self, name, ids):
        def hook(module, grad_out):
            self.open[("bwd", name)] = self._begin(name + ".bwd", "bwd", ids, ids)
        return hook

    def _bwd_post(self, name):
        def hook(module, grad_in, grad_out):
            op = self.open.pop(("bwd", name), None)
            if op is not None:
                self._end(op)
        return hook

    # ---- the trace ----------------------------------------------------------------------
    def trace(self, batch=0, seq=0):
        """The last complete iteration as a stowage.Trace."""
        if not self.iterations:
            raise StowageError("profile: no iteration completed inside the profile (an "
                               "iteration ends with optimizer.step())")
        if not self.measured:
            raise StowageError("profile: the trace is made after the `with` block (its "
                               "memory is measured when the profile ends)")
        ops = sorted(self.iterations[-1], key=lambda o: o.start)
        device = _torch.cuda.get_device_name() if self.cuda else "cpu"
        memory = _torch.cuda.get_device_properties(0).total_memory if self.cuda else 0
        t = Trace(_lib.trace_new(self.name.encode(), device.encode(), memory))
        for pname, p in self.params:
            shape = (_lib.u64 * max(p.dim(), 1))(*(list(p.shape) or [1]))
            _call(_lib.trace_add_tensor, t._h, pname.encode(), _DTYPES[p.dtype].encode(), shape,
                  max(p.dim(), 1))
        order = {"fwd": 0, "bwd": 1, "optim": 2}
        ops = sorted(ops, key=lambda o: (order[o.stage], o.start))
        # non-model bytes: what the allocator holds beyond its holding at the iteration's
        # first op, less the gradients PyTorch has allocated since (model data)
        base, grads_base = (ops[0].mem0, ops[0].grads0) if ops else (0, 0)
        step_ns = 0
        for op in ops:
            if op.stage == "optim":
                step_ns += op.end - op.start
                continue
            at_start = max(op.mem0 - base - (op.grads0 - grads_base), 0)
            peak = max(op.peak - base - (op.grads1 - grads_base), at_start)
            self._add_op(t, op.name, op.stage, op.params, op.grads, at_start, peak,
                         op.end - op.start)
        total = sum(p.numel() for _, p in self.params) or 1
        for i, (pname, p) in enumerate(self.params):
            self._add_op(t, "optimizer." + pname, "optim", [i], [], 0, 0,
                         step_ns * p.numel() // total)
        if self.memory_unknown is not None:  # said in the trace's source, as the importer does
            _lib.trace_warn(t._h, b"no_memory_events", 1)
        if self.outside:
            _lib.trace_warn(t._h, b"params_outside_ops", len(self.outside))
        _lib.trace_set_shape(t._h, batch, seq)
        _call(_lib.trace_validate, t._h)
        return t

    def model_trace(self):
        """The model's tensors as a trace of their own (one op), for the runtime to hold them
        and to hold a plan's trace against."""
        t = Trace(_lib.trace_new(self.name.encode(), b"cpu", 0))
        for pname, p in self.params:
            shape = (_lib.u64 * max(p.dim(), 1))(*(list(p.shape) or [1]))
            _call(_lib.trace_add_tensor, t._h, pname.encode(), _DTYPES[p.dtype].encode(), shape,
                  max(p.dim(), 1))
        self._add_op(t, "model", "fwd", [], [], 0, 0, 0)
        for i, (pname, _) in enumerate(self.params):
            self._add_op(t, "optimizer." + pname, "optim", [i], [], 0, 0, 0)
        _call(_lib.trace_validate, t._h)
        return t

    @staticmethod
    def _add_op(t, name, stage, params, grads, nonmodel, peak, ns):
        ps = (_lib.u32 * max(len(params), 1))(*params)
        gs = (_lib.u32 * max(len(grads), 1))(*grads)
        _call(_lib.trace_add_op, t._h, name.encode(), stage.encode(), ps, len(params), gs,
              len(grads), nonmodel, peak, max(ns, 0))

    def save(self, path, batch=0, seq=0):
        self.trace(batch, seq).save(path)


_PARAM_VIEW = object()  # marks a saved tensor kept as a view of a parameter


class _DeviceArray:
    """NUMEL fp32 at a CUDA device address, for torch.as_tensor through
    __cuda_array_interface__ (version 3): the runtime's memory itself, not a copy. There is no
    stream to wait on: the runtime's fetches are complete when op_begin returns, and its copies
    out wait for the work queued on the legacy default stream (wrap orders PyTorch's current
    stream against that one when they differ)."""

    def __init__(self, address, numel):
        self.__cuda_array_interface__ = {"shape": (numel,), "typestr": "<f4",
                                         "data": (address, False), "strides": None,
                                         "version": 3, "stream": None}


class wrap:
    """Trains MODEL with PLAN: the model data lives in the C runtime's chunks, moved as the plan
    says, on the emulated device (the host backend) for a model on the CPU, on the GPU (the CUDA
    backend, a budget of DEVICE_BYTES on cuda:0) for a model there; before each module runs,
    its parameters become views of their resident chunk memory (a buffer view on the CPU,
    __cuda_array_interface__ over the device pointer on a GPU); the optimizer step is the
    library's AdamW where the plan places it (the CPU's on host memory, the CUDA compute
    table's on the GPU), with OPTIMIZER's hyperparameters as they are at each step (a
    scheduler's learning rate included). On a GPU, the runtime's copies and GPU Adam follow the
    work on the legacy default stream; PyTorch computing on another stream is ordered against
    it at every op's start and end.

        p = stowage.torch.profile(model, optimizer) ...; p.save("trace.json")
        plan = stowage.plan(stowage.Trace.load("trace.json"), gpu="1MiB")
        with stowage.torch.wrap(model, optimizer, plan, "trace.json", gpu_bytes) as w:
            for step in range(10):
                loss = ...; loss.backward(); optimizer.step(); optimizer.zero_grad()

    TRACE is the profile the plan was made from (a path or a stowage.Trace); the model must be
    the one profiled (the runtime refuses another: its message). Gradients are PyTorch's (in
    its own memory) until the optimizer op, where each is written where the plan steps it.
    Between ops a parameter is NaN (one element expanded to its shape, no memory): a use outside
    the modules the trace knows gives NaN instead of reading memory the runtime has reused."""

    def __init__(self, model, optimizer, plan, trace, device_bytes):
        self.p = profile(model, optimizer)  # the same ops, names and tensor ids
        if isinstance(optimizer, _torch.optim.Adam) and not isinstance(optimizer,
                                                                       _torch.optim.AdamW):
            for g in optimizer.param_groups:
                if g.get("weight_decay", 0):
                    raise StowageError("wrap: Adam's weight decay is L2 (added to the gradient);"
                                       " the runtime steps AdamW's decoupled decay")
        self.trace = trace if isinstance(trace, Trace) else Trace.load(trace)
        outside = self.trace.json().get("source", {}).get("warnings", {}).get(
            "params_outside_ops", 0)
        if outside:
            raise StowageError("wrap: the profile saw %d parameter%s used outside the modules "
                               "that hold them (its warning names them): no op makes them "
                               "resident there; make each use a module's, or profile at a "
                               "depth whose modules contain it" % (outside,
                                                                   "" if outside == 1 else "s"))
        self.plan = plan
        devices = {p.device for _, p in self.p.params}
        if len(devices) != 1:
            raise StowageError("wrap: the parameters are on %s; stowage holds a model on one "
                               "device" % ", ".join(sorted(str(d) for d in devices)))
        self.device = devices.pop()
        if self.device.type == "cuda" and self.device.index not in (None, 0):
            raise StowageError("wrap: the model is on %s; the CUDA runtime runs on cuda:0"
                               % self.device)
        if self.device.type not in ("cpu", "cuda"):
            raise StowageError("wrap: the model is on %s; stowage runs on the CPU or CUDA"
                               % self.device)
        for name, p in self.p.params:
            if p.dtype != _torch.float32 or not p.is_contiguous():
                raise StowageError("wrap: parameter %s must be a contiguous fp32 tensor "
                                   "(it is %s%s)" % (name, p.dtype,
                                                     ", not contiguous" if not p.is_contiguous()
                                                     else ""))
        self.cuda = self.device.type == "cuda"
        # the initial weights from host memory (a GPU model's copied to the host first)
        self._init = [p.detach().cpu() if self.cuda else p.detach() for _, p in self.p.params]
        addresses = [t.data_ptr() for t in self._init]
        from . import Runtime
        # this model's tensors, held against the plan's trace by the runtime (its message when
        # the plan was made for another model)
        self.model = self.p.model_trace()
        self.rt = Runtime(self.model, device_bytes, plan=plan, plan_trace=self.trace,
                          init_addresses=addresses, device="cuda" if self.cuda else "host")
        self._init = None
        self.shapes = [tuple(p.shape) for _, p in self.p.params]
        self.numel = [p.numel() for _, p in self.p.params]
        # between ops a parameter is NaN of its shape, in no memory (one element, expanded)
        self.nan = _torch.tensor(float("nan"), device=self.device)
        self.step = 0
        self.in_iteration = False
        self.handles = []
        self.resident = {}  # the storage of each resident parameter view -> its tensor id

    def _view(self, i):
        """Tensor I's resident compute copy, as a tensor over the runtime's memory."""
        if self.cuda:
            return self._device_tensor(self.rt.param_address(i), i).view(self.shapes[i])
        buf = self.rt.param(i)
        return _torch.frombuffer(buf, dtype=_torch.float32).view(self.shapes[i])

    def _device_tensor(self, address, i):
        return _torch.as_tensor(_DeviceArray(address, self.numel[i]), device=self.device)

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

    def _begin(self, name, stage, ids, grads):
        if not self.in_iteration:
            self.rt.iteration_begin()
            self.in_iteration = True
        self._ordered(self.rt.op_begin, name, stage, ids, grads)
        if stage != "optim":  # the optimizer's lists are where the plan steps them
            for i in ids:
                view = self._view(i)
                self.p.params[i][1].data = view
                self.resident[view.untyped_storage().data_ptr()] = i

    # Autograd keeps tensors for backward, among them views of parameters (addmm's weight.t()):
    # kept as they are, they would point into chunk memory the runtime has since reused. They
    # are kept as (parameter, size, stride, offset) instead and made again, at backward, from
    # the parameter's resident memory of that moment.
    def _pack(self, t):
        try:
            i = self.resident.get(t.untyped_storage().data_ptr())
        except RuntimeError:  # a tensor without storage (sparse, nested): as it is
            return t
        if i is None:
            return t
        return (_PARAM_VIEW, i, tuple(t.size()), tuple(t.stride()), t.storage_offset())

    def _unpack(self, packed):
        if not (isinstance(packed, tuple) and packed and packed[0] is _PARAM_VIEW):
            return packed
        _, i, size, stride, offset = packed
        base = self.p.params[i][1].data
        if base.untyped_storage().data_ptr() not in self.resident:
            raise StowageError("wrap: backward needs %s outside an op that holds it resident"
                               % self.p.params[i][0])
        return base.as_strided(size, stride, offset)

    def _placeholder(self, i):
        return self.nan.expand(self.shapes[i])

    def _end(self, ids):
        self._ordered(self.rt.op_end)
        for i in ids:
            p = self.p.params[i][1]
            self.resident.pop(p.data.untyped_storage().data_ptr(), None)
            p.data = self._placeholder(i)

    def __enter__(self):
        for name, m, ids in self.p._marked():
            self.handles.append(m.register_forward_pre_hook(
                lambda mod, args, name=name, ids=ids: self._begin(name, "fwd", ids, [])))
            self.handles.append(m.register_forward_hook(
                lambda mod, args, out, ids=ids: self._end(ids)))
            self.handles.append(m.register_full_backward_pre_hook(
                lambda mod, g, name=name, ids=ids: self._begin(name + ".bwd", "bwd", ids, ids)))
            self.handles.append(m.register_full_backward_hook(
                lambda mod, gi, go, ids=ids: self._end(ids)))
        self._step = self.p.optimizer.step
        self.p.optimizer.step = self._optimizer_step
        for i, (_, p) in enumerate(self.p.params):
            p.data = self._placeholder(i)
        self._saved = _torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._saved.__enter__()
        return self

    def _optimizer_step(self, *args, **kwargs):
        self.step += 1
        group_of = {}
        for g in self.p.optimizer.param_groups:
            for q in g["params"]:
                group_of[id(q)] = g
        for i, (name, p) in enumerate(self.p.params):
            g = group_of[id(p)]
            self._begin("optimizer." + name, "optim", [i], [])
            grad = p.grad
            if grad is None:
                raise StowageError("wrap: %s has no gradient at the optimizer step" % name)
            dst, on_device = self.rt.optim_grad(i)
            src = grad.contiguous().view(-1)
            if on_device:  # GPU Adam: the gradient into its device slot, on the default stream
                self._device_tensor(dst, i).copy_(src)
            elif src.is_cuda:  # CPU Adam: into host memory, a copy that ends before it returns
                host = (ctypes.c_float * self.numel[i]).from_address(dst)
                _torch.frombuffer(host, dtype=_torch.float32).copy_(src)
            else:
                ctypes.memmove(dst, src.data_ptr(), src.numel() * 4)
            self._ordered(self.rt.adam, i, self.step, lr=float(g["lr"]),
                          betas=tuple(g["betas"]), eps=float(g["eps"]),
                          weight_decay=float(g.get("weight_decay", 0.0)))
            self._ordered(self.rt.op_end)
        self._ordered(self.rt.iteration_end)
        self.in_iteration = False

    def __exit__(self, *exc):
        self._saved.__exit__(*exc)
        for h in self.handles:
            h.remove()
        self.p.optimizer.step = self._step
        # the trained weights back into the model's own memory
        for i, (name, p) in enumerate(self.p.params):
            p.data = _torch.tensor(self.rt.master(i), dtype=_torch.float32).view(
                self.shapes[i]).to(self.device)
        return False

    @property
    def stats(self):
        return self.rt.stats

