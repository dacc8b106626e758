"""stowage — chunk-based memory planning for training models larger than GPU memory.

The Python face of libstowage: every call goes to the C library (<stowage/bind.h> through
ctypes), whose error messages arrive as StowageError.
"""
import ctypes
import json
import os

from . import _lib

__all__ = ["StowageError", "Trace", "Plan", "Runtime", "plan", "check", "simulate",
           "import_trace", "parse_size", "version"]


class StowageError(Exception):
    """A failure of the C library, with its message (the file, the field, what was expected)."""


def version():
    return _lib.version().decode()


def _path(p):
    if not isinstance(p, (str, bytes)) and not hasattr(p, "__fspath__"):
        raise StowageError("expected a file name, not %s" % type(p).__name__)
    return os.fsencode(os.fspath(p))


def _whole(value, what, low=0, high=2 ** 64 - 1):
    """VALUE as a whole number from LOW to HIGH (ctypes would wrap a negative or a larger one
    silently), or StowageError naming WHAT."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise StowageError("%s: expected a whole number from %d to %d, not %r"
                           % (what, low, high, value))
    return value


def _address(value, what):
    """VALUE as a memory address: a positive whole number (a tensor's data_ptr())."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value >= 2 ** 64:
        raise StowageError("%s: expected the address of an array (a positive whole number such "
                           "as a tensor's data_ptr()), not %r" % (what, value))
    return value


def _of(value, cls, what):
    if not isinstance(value, cls):
        raise StowageError("%s: expected a stowage.%s, not %s" % (what, cls.__name__,
                                                                  type(value).__name__))
    return value


def parse_size(size, what="size"):
    """SIZE in bytes: a whole number of bytes, or a string the CLI reads ("24MiB", "1.5GB")."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise StowageError("%s: expected a number of bytes or a size such as \"4GiB\", not %r"
                           % (what, size))
    if isinstance(size, int):
        if size < 0:
            raise StowageError("%s: %d bytes is negative" % (what, size))
        return size
    out = _lib.u64()
    err = ctypes.c_void_p()
    if not _lib.size_parse(size.encode(), ctypes.byref(out), ctypes.byref(err)):
        raise StowageError("%s: %s" % (what, _lib.take(err.value)))
    return out.value


def _call(fn, *args):
    """FN(*ARGS, &error): its result, or StowageError with the library's message."""
    err = ctypes.c_void_p()
    result = fn(*args, ctypes.byref(err))
    failed = result < 0 if fn.restype is ctypes.c_int64 else not result
    if failed:
        message = _lib.take(err.value) or "stowage: unknown error"
        raise StowageError(message)
    return result


class Trace:
    """One training iteration: model tensors and ops (docs/trace-format.md)."""

    def __init__(self, handle, path=None):
        self._h = handle
        self.path = os.fspath(path) if path is not None else None

    @classmethod
    def load(cls, path):
        return cls(_call(_lib.trace_load, _path(path)), path)

    def save(self, path):
        _call(_lib.trace_save, self._h, _path(path))
        self.path = os.fspath(path)

    def json(self):
        """The trace as the dict of its file (docs/trace-format.md)."""
        return json.loads(_lib.take(_call(_lib.trace_json, self._h)))

    def summary(self, top=10):
        """What `stowage inspect --json` prints, as a dict."""
        return json.loads(_lib.take(_lib.trace_summary(self._h, _whole(top, "summary: top", 0,
                                                                       2 ** 32 - 1))))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.trace_free(h)


def synth(model=None, model_config=None, batch=None, seq=None, dtype=None, checkpointing=None,
          attention=None, kernels=None, loss=None, freeze=None, lora=None, lora_targets=None,
          hw=None, memory=None, micro_steps=None, checkpoint_every=None, amp=None,
          optimizer_impl=None, images=None, image_size=None, vision_trained=None, gradients=None,
          collectives=None, reduce_bucket_size=None, sub_group_size=None, init=None,
          checkpoints=None):
    """The trace of one training iteration of MODEL (a zoo name or a model config file) or
    MODEL_CONFIG (a file), not run but modelled: what `stowage synth` writes, the options read
    and refused as it reads them (docs/synth.md). FREEZE, LORA_TARGETS: comma text or lists.
    IMAGES, IMAGE_SIZE: images a sequence through a vision tower, their side in pixels;
    VISION_TRAINED: "none", "projector" or "all", what of the tower they train. GRADIENTS:
    "device", "host" or "host-via-device", where the loop keeps its gradients to the step.
    COLLECTIVES: "overlapped" or "blocking", whether its collectives hold the compute stream.
    REDUCE_BUCKET_SIZE, SUB_GROUP_SIZE: with OPTIMIZER_IMPL "deepspeed", its ZeRO configuration's,
    in elements, which size the buffers its step holds (DeepSpeed's defaults where not given).
    INIT: "sharded", "host" or "host-fp32", how each rank builds its model before training it.
    CHECKPOINTS: with CHECKPOINTING, "device" or "host", where each block's input waits for its
    recomputation (DeepSpeed's cpu_checkpointing: host)."""
    opts = _options("synth", model=model, model_config=os.fspath(model_config)
                    if model_config is not None else None, batch=batch, seq=seq, dtype=dtype,
                    checkpointing=checkpointing, attention=attention, kernels=kernels, loss=loss,
                    freeze=text_list(freeze), lora=lora, lora_targets=text_list(lora_targets),
                    hw=hw, memory=memory, micro_steps=micro_steps,
                    checkpoint_every=checkpoint_every, amp=amp, optimizer_impl=optimizer_impl,
                    images=images, image_size=image_size, vision_trained=vision_trained,
                    gradients=gradients, collectives=collectives,
                    reduce_bucket_size=reduce_bucket_size, sub_group_size=sub_group_size,
                    init=init, checkpoints=checkpoints)
    return Trace(_call(_lib.synth, opts), None)


def import_trace(path, et=None, memory_timeline=None, iteration=None, depth=None,
                 device_id=None, pid=None, params_from_memory=False):
    """A PyTorch profiler file as a Trace (stowage import; docs/profiling.md)."""
    if not isinstance(params_from_memory, bool):
        raise StowageError("import: params_from_memory: expected true or false, not %r"
                           % (params_from_memory,))
    opts = {"params_from_memory": params_from_memory}
    for key, value in (("et", et), ("memory_timeline", memory_timeline),
                       ("iteration", iteration), ("depth", depth), ("device_id", device_id),
                       ("pid", pid)):
        if value is not None:
            opts[key] = os.fspath(value) if key in ("et", "memory_timeline") else value
    return Trace(_call(_lib.import_trace, _path(path), json.dumps(opts).encode()), None)


class Plan:
    """Where every chunk lives at every op, and the moves between (docs/plan-format.md)."""

    def __init__(self, handle):
        self._h = handle

    @classmethod
    def load(cls, path):
        plan = cls(_call(_lib.plan_load, _path(path)))
        plan.path = os.fspath(path)
        return plan

    path = None  # the file it was loaded from, if any

    def save(self, path, trace):
        _call(_lib.plan_save, self._h, _of(trace, Trace, "Plan.save: trace")._h, _path(path))

    @property
    def predictions(self):
        """The plan's predictions (bytes each way, peak, times), its policy, chunk size, GPU
        budget ("gpu_budget") and what of it is kept free at every moment ("gpu_reserved": the
        reserve asked for, or the process's own GPU memory where the budget reaches into it,
        the larger), the file of the trace it was made from ("trace_file"), the
        blocks it recomputes in backward and offloads to host memory ("recompute", "offload":
        indices into the trace's blocks) and the offloaded blocks' copies ("activation_moves":
        block, out and in [moment, done], bytes, as in the plan file)."""
        return json.loads(_lib.take(_lib.plan_predictions(self._h)))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.plan_free(h)


def _options(command, **given):
    """The options given (None: not given) as the JSON the library reads, as the CLI's."""
    opts = {k: v for k, v in given.items() if v is not None}
    try:
        return json.dumps(opts).encode()
    except (TypeError, ValueError) as e:
        raise StowageError("%s: the options cannot be read: %s" % (command, e))


def plan(trace, gpu, cpu=None, reserve=None, gpus=None, nodes=None, hw=None, beyond_device=None,
         policy=None, objective=None, chunk_size=None, oversized=None, gemini_fraction=None,
         prefetch_bucket=None, activations=None, nvme=None, nvme_devices=None, storage=None,
         optimizer_state=None, pinned=None, zero_stage=None, margin=None, measured_times=None,
         layout=None):
    """Plans TRACE for a GPU budget (bytes, or a size such as "4GiB"): stowage plan, whose
    options these are (--chunk-size is chunk_size), read and refused as the CLI reads them. A
    trace measured on a CPU is re-timed for a GPU's profile unless MEASURED_TIMES."""
    text = _options("plan", gpu=gpu, cpu=cpu, reserve=reserve, gpus=gpus, nodes=nodes, hw=hw,
                    beyond_device=beyond_device, policy=policy, objective=objective,
                    chunk_size=chunk_size, oversized=oversized, gemini_fraction=gemini_fraction,
                    prefetch_bucket=prefetch_bucket, activations=activations, nvme=nvme,
                    nvme_devices=nvme_devices, storage=storage,
                    optimizer_state=optimizer_state, pinned=pinned,
                    zero_stage=zero_stage, margin=margin, measured_times=measured_times,
                    layout=layout)
    _of(trace, Trace, "plan: trace")
    trace_file = _path(trace.path) if trace.path else None
    return Plan(_call(_lib.plan, trace._h, trace_file, text))


def check(plan, trace):
    """Proves PLAN sound for TRACE (stowage check): the recomputed predictions, or StowageError
    naming the first failure."""
    return json.loads(_lib.take(_call(_lib.check, _of(plan, Plan, "check: plan")._h,
                                      _of(trace, Trace, "check: trace")._h)))


def simulate(plan, trace, detail=False):
    """Simulates PLAN on its hardware: the record `stowage simulate --json` prints (with
    DETAIL, every op and transfer as it does)."""
    return json.loads(_lib.take(_call(_lib.simulate, _of(plan, Plan, "simulate: plan")._h,
                                      _of(trace, Trace, "simulate: trace")._h,
                                      1 if detail else 0)))


def compare(trace, gpu, cpu=None, reserve=None, gpus=None, nodes=None, hw=None,
            beyond_device=None, activations=None, nvme=None, nvme_devices=None, storage=None,
            optimizer_state=None, pinned=None, measured_times=None, layout=None):
    """Every policy on TRACE with a GPU budget against unlimited memory: the record `stowage
    compare --json` prints, the options read and refused as the CLI reads them."""
    text = _options("compare", gpu=gpu, cpu=cpu, reserve=reserve, gpus=gpus, nodes=nodes, hw=hw,
                    beyond_device=beyond_device, activations=activations, nvme=nvme,
                    nvme_devices=nvme_devices, storage=storage,
                    optimizer_state=optimizer_state, pinned=pinned,
                    measured_times=measured_times, layout=layout)
    _of(trace, Trace, "compare: trace")
    return json.loads(_lib.take(_call(_lib.compare, trace._h,
                                      trace.path.encode() if trace.path else None, text)))


def probe(base=None, name=None, device=None, collectives=None, nvme=None, nvme_depth=None):
    """Measures this machine (memcpy, CPU Adam, host memory; with DEVICE "host" or "cuda" its
    copies as the runtime makes them; with NVME a directory, the storage under it: reads and
    writes by request size at NVME_DEPTH in flight): the record `stowage probe --json` prints,
    the hardware profile made of them under "profile" (json.dump of it is a profile file).
    Takes some seconds."""
    text = _options("probe", base=base, name=name, device=device, collectives=collectives,
                    nvme=nvme, nvme_depth=nvme_depth)
    return json.loads(_lib.take(_call(_lib.probe, text)))


def text_list(v):
    """A list option as the CLI's comma text (a Python list or tuple joined; else as given)."""
    return ",".join(str(x) for x in v) if isinstance(v, (list, tuple)) else v


def capacity(family, hidden=None, batch=None, seq=None, no_checkpointing=None, attention=None,
             kernels=None, loss=None,
             dtype=None, policy=None, cpu=None, reserve=None, gpus=None, nodes=None, hw=None,
             beyond_device=None, lora=None, lora_targets=None,
             activations=None, nvme=None, nvme_devices=None, storage=None,
             optimizer_state=None, pinned=None,
             micro_steps=None, amp=None, optimizer_impl=None, gradients=None, collectives=None,
             layout=None, reduce_bucket_size=None, sub_group_size=None, init=None,
             checkpoints=None):
    """The largest model of FAMILY ("gpt": layers at HIDDEN; or a zoo family) whose checked
    plan fits, per policy: the record `stowage capacity --json` prints (LORA: each model
    LoRA-tuned, adapters of that rank on LORA_TARGETS, the base frozen)."""
    text = _options("capacity", family=family, hidden=hidden, batch=batch, seq=seq,
                    no_checkpointing=no_checkpointing, attention=attention, kernels=kernels,
                    loss=loss, dtype=dtype,
                    lora=lora, lora_targets=text_list(lora_targets),
                    policy=",".join(policy) if isinstance(policy, (list, tuple)) else policy,
                    cpu=cpu, reserve=reserve, gpus=gpus, nodes=nodes, hw=hw,
                    beyond_device=beyond_device, activations=activations, nvme=nvme,
                    nvme_devices=nvme_devices, storage=storage,
                    optimizer_state=optimizer_state, pinned=pinned,
                    micro_steps=micro_steps, amp=amp, optimizer_impl=optimizer_impl,
                    gradients=gradients, collectives=collectives, layout=layout,
                    reduce_bucket_size=reduce_bucket_size, sub_group_size=sub_group_size,
                    init=init, checkpoints=checkpoints)
    return json.loads(_lib.take(_call(_lib.capacity, text)))


def minmem(trace, slowdown=None, policy=None, cpu=None, reserve=None, gpus=None, nodes=None,
           hw=None, beyond_device=None, activations=None, nvme=None, nvme_devices=None,
           storage=None,
           optimizer_state=None, pinned=None, host=None, gpu=None, measured_times=None,
           layout=None):
    """The smallest GPU budget (to 64 MiB) whose plan is within SLOWDOWN (a percentage, "10%"
    by default) of unlimited memory; with HOST, the smallest host budget at the GPU budget GPU
    (all the profile's by default) within SLOWDOWN of host memory to spare: the record
    `stowage minmem --json` prints."""
    text = _options("minmem", slowdown=slowdown, policy=policy, host=host, gpu=gpu, cpu=cpu,
                    reserve=reserve,
                    gpus=gpus, nodes=nodes, hw=hw, beyond_device=beyond_device,
                    activations=activations, nvme=nvme, nvme_devices=nvme_devices, storage=storage,
                    optimizer_state=optimizer_state, pinned=pinned,
                    measured_times=measured_times, layout=layout)
    _of(trace, Trace, "minmem: trace")
    return json.loads(_lib.take(_call(_lib.minmem, trace._h,
                                      trace.path.encode() if trace.path else None, text)))


def whatif(trace=None, gpu=None, policy=None, model=None, model_config=None, batch=None,
           seq=None, dtype=None, checkpointing=None, attention=None, kernels=None, loss=None,
           chunk_size=None, cpu=None,
           reserve=None, gpus=None, nodes=None, hw=None, beyond_device=None, lora=None,
           lora_targets=None, activations=None, nvme=None, nvme_devices=None, storage=None,
           optimizer_state=None, pinned=None, micro_steps=None, checkpoint_every=None,
           amp=None, optimizer_impl=None, images=None, image_size=None, vision_trained=None,
           gradients=None, collectives=None, measured_times=None, layout=None,
           reduce_bucket_size=None, sub_group_size=None, init=None, checkpoints=None):
    """Sweeps budgets (GPU: "8GiB..80GiB:8GiB" or "8GiB,16GiB"), policies, batch sizes and chunk
    sizes for TRACE (a stowage.Trace or a file) or a MODEL: the rows `stowage whatif --json`
    prints, the options read and refused as the CLI reads them (lists as their comma text, or
    Python lists). LORA, LORA_TARGETS: with MODEL, LoRA-tuned as `synth --lora` makes it."""
    text = text_list
    handle = None
    if isinstance(trace, Trace):
        handle, trace = trace._h, None
    elif trace is not None:
        trace = os.fspath(trace)
    opts = _options("whatif", trace=trace, gpu=text(gpu), policy=text(policy), model=model,
                    model_config=model_config, batch=text(batch), seq=seq, dtype=dtype,
                    checkpointing=checkpointing, attention=attention, kernels=kernels,
                    loss=loss, chunk_size=text(chunk_size), cpu=cpu, reserve=reserve, gpus=gpus,
                    nodes=nodes, hw=hw, beyond_device=beyond_device, activations=activations,
                    nvme=nvme, nvme_devices=nvme_devices, storage=storage,
                    optimizer_state=text(optimizer_state),
                    pinned=pinned, lora=lora, lora_targets=text(lora_targets),
                    micro_steps=micro_steps, checkpoint_every=checkpoint_every, amp=amp,
                    optimizer_impl=optimizer_impl, images=images, image_size=image_size,
                    vision_trained=vision_trained, gradients=gradients,
                    collectives=collectives, measured_times=measured_times, layout=layout,
                    reduce_bucket_size=reduce_bucket_size, sub_group_size=sub_group_size,
                    init=init, checkpoints=checkpoints)
    return json.loads(_lib.take(_call(_lib.whatif, handle, opts)))


class Runtime:
    """The C runtime on DEVICE: "host", the host backend (an emulated device of DEVICE_BYTES), or
    "cuda", the CUDA backend on GPU 0 (a budget of DEVICE_BYTES): the model data in chunks,
    moved as PLAN says (made for PLAN_TRACE) or, without a plan, on demand (profile mode).
    MODEL's tensors are fp32 and start from INIT (a list of float sequences, one per tensor in
    id order; None: zeros) or from host arrays at INIT_ADDRESSES. A plan with chunks' optimizer
    state on the storage tier needs STORAGE_DIR, a directory there for its scratch file. Ops are
    run as in runtime.h: op_begin, param, op_end."""

    _STAGES = ("fwd", "bwd", "optim")

    def __init__(self, model, device_bytes, plan=None, plan_trace=None, init=None,
                 init_addresses=None, device="host", storage_dir=None):
        self._h = None
        _of(model, Trace, "runtime: model")
        if plan is not None:
            _of(plan, Plan, "runtime: plan")
            _of(plan_trace or model, Trace, "runtime: plan_trace")
        device_bytes = _whole(parse_size(device_bytes, "runtime: device_bytes"),
                              "runtime: device_bytes", 1)
        if device not in ("host", "cuda"):
            raise StowageError("runtime: device '%s' is not host or cuda" % (device,))
        self._keep = (model, plan, plan_trace)  # the library holds pointers to them
        self.model = model
        self.numel = [x["numel"] for x in model.json()["tensors"]]
        arrays = None
        if init is not None or init_addresses is not None:
            n = len(init if init is not None else init_addresses)
            if n != len(self.numel):
                raise StowageError("runtime: %d initial tensors for a model of %d"
                                   % (n, len(self.numel)))
            if init is not None:
                self._init = [(ctypes.c_float * k)(*values) for k, values in zip(self.numel, init)]
                init_addresses = [ctypes.addressof(a) for a in self._init]
            arrays = (ctypes.c_void_p * n)(*(_address(a, "runtime: init_addresses")
                                             for a in init_addresses))
        self.device = device
        self._arrays = {}
        self._adam_json = {}
        self._h = _call(_lib.runtime_new, model._h, arrays, plan._h if plan else None,
                        (plan_trace or model)._h if plan else None, device_bytes,
                        device.encode(),
                        None if storage_dir is None else os.fsencode(storage_dir))

    def iteration_begin(self):
        _lib.runtime_iteration_begin(self._h)

    def iteration_abandon(self):
        """The iteration ended early (an exception in the caller's step): the next one starts
        from the plan's start state again (runtime.h)."""
        _lib.runtime_iteration_abandon(self._h)

    def _tensor(self, tensor, what):
        return _whole(tensor, "runtime: %s: tensor" % what, 0, len(self.numel) - 1)

    def iteration_end(self):
        _call(_lib.runtime_iteration_end, self._h)

    def _ids(self, ids):
        """IDS as a ctypes array, made once per distinct list (an iteration repeats its ops)."""
        key = tuple(ids)
        array = self._arrays.get(key)
        if array is None:
            for i in key:
                _whole(i, "runtime: a tensor id", 0, 2 ** 32 - 1)
            array = self._arrays[key] = (_lib.u32 * max(len(key), 1))(*key)
        return array

    def op_begin(self, name, stage, params=(), grads=()):
        _call(_lib.runtime_op_begin, self._h, name.encode(), stage.encode(), self._ids(params),
              len(params), self._ids(grads), len(grads))

    def op_end(self):
        _lib.runtime_op_end(self._h)

    def unplanned_op_begin(self, name, params=()):
        """An op outside the plan (an evaluation forward): PARAMS resident on demand within the
        budget, counted in the stats' unplanned figures; ended by op_end."""
        _call(_lib.runtime_unplanned_op_begin, self._h, name.encode(), self._ids(params),
              len(params))

    def read_state(self, tensor, master, m, v, vmax=None):
        """TENSOR's weights, momentum and variance (fp32, numel each) into host memory at the
        addresses MASTER, M, V, and at VMAX AMSGrad's largest variances (zeros when the plan
        keeps none), from wherever the runtime holds them."""
        _call(_lib.runtime_read_state, self._h, self._tensor(tensor, "read_state"),
              *(_address(a, "runtime: read_state") for a in (master, m, v)),
              None if vmax is None else _address(vmax, "runtime: read_state"))

    def hand_back(self, tensor):
        """TENSOR read out for good (read_state): once every tensor of its chunk is, the chunk's
        memory is freed (one rank). The runtime trains no more after the first."""
        _call(_lib.runtime_hand_back, self._h, self._tensor(tensor, "hand_back"))

    def write_state(self, tensor, master, m, v, vmax=None):
        """TENSOR's weights (its compute copy too), momentum and variance from host memory at
        the addresses MASTER, M, V, and AMSGrad's largest variances at VMAX (a frozen tensor:
        its weights only)."""
        _call(_lib.runtime_write_state, self._h, self._tensor(tensor, "write_state"),
              *(_address(a, "runtime: write_state") for a in (master, m, v)),
              None if vmax is None else _address(vmax, "runtime: write_state"))

    def param_address(self, tensor):
        """The address of TENSOR's compute copy for the current op (device memory on "cuda",
        its fetch complete), valid until the op ends."""
        ptr = _lib.runtime_param(self._h, self._tensor(tensor, "param"))
        if not ptr:
            raise StowageError("runtime: tensor %d is not resident: no open op holds it" % tensor)
        return ptr

    def param(self, tensor):
        """The compute copy of TENSOR for the current op, a ctypes float array over the
        runtime's memory (valid until the op ends); host memory only."""
        if self.device != "host":
            raise StowageError("runtime: param() reads host memory; on %s use param_address()"
                               % self.device)
        address = self.param_address(tensor)
        return (ctypes.c_float * self.numel[tensor]).from_address(address)

    def adam(self, tensor, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
             amsgrad=False, loss_scale=1.0):
        """One AdamW step at TENSOR's optimizer op, wherever the plan steps it. An fp16 compute
        copy's gradient carries LOSS_SCALE, divided out in fp32 before the step."""
        key = (lr, betas[0], betas[1], eps, weight_decay, bool(amsgrad), loss_scale)
        text = self._adam_json.get(key)
        if text is None:  # the same settings step every tensor of a group, step after step
            opts = {"lr": lr, "beta1": betas[0], "beta2": betas[1], "eps": eps,
                    "weight_decay": weight_decay, "amsgrad": bool(amsgrad),
                    "loss_scale": loss_scale}
            if len(self._adam_json) > 64:  # a scheduler's every rate: keep the recent ones
                self._adam_json.clear()
            text = self._adam_json[key] = json.dumps(opts).encode()
        _call(_lib.runtime_adam, self._h, self._tensor(tensor, "adam"), text,
              _whole(step, "runtime: adam: step", 1))

    def optim_grad(self, tensor):
        """At TENSOR's optimizer op: where its gradient goes for the step, (address, on_device):
        on_device True when that is a GPU's memory (the plan steps it there)."""
        on_device = ctypes.c_int(0)
        ptr = _lib.runtime_optim_grad(self._h, self._tensor(tensor, "optim_grad"),
                                      ctypes.byref(on_device))
        if not ptr:
            raise StowageError("runtime: optim_grad: tensor %d is frozen: it has no optimizer "
                               "state" % tensor)
        return ptr, bool(on_device.value)

    def optim_weights(self, tensor):
        """After optim_grad: the address of TENSOR's fp32 weights (host memory) when the
        gradient's place no longer holds them (an fp32 copy stepped by CPU Adam: its weights
        move to the master's buffer as the gradient arrives), None when it still does."""
        return _lib.runtime_optim_weights(self._h, self._tensor(tensor, "optim_weights")) or None

    def master(self, tensor):
        out = (ctypes.c_float * self.numel[self._tensor(tensor, "master")])()
        _call(_lib.runtime_master, self._h, tensor, out)
        return list(out)

    @property
    def stats(self):
        return json.loads(_lib.take(_lib.runtime_stats(self._h)))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.runtime_free(h)


def adam(param, master, m, v, n, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
         amsgrad=False, state="fp32", weights="both"):
    """The library's AdamW step on plain fp32 arrays at these addresses (N elements): PARAM holds
    the gradient and gets the new weights; the same code the runtime steps its chunks with. With
    AMSGRAD, V holds 2 N values: the variances, then their largest so far. STATE "bf16": M and V
    are bf16 arrays (16-bit patterns), rounded stochastically at each step. WEIGHTS "both": the
    new weights into PARAM and MASTER; "copy": into PARAM alone, MASTER only read (how the
    runtime steps an fp32 compute copy on the CPU: 4 bytes an element fewer)."""
    opts = {"lr": lr, "beta1": betas[0], "beta2": betas[1], "eps": eps,
            "weight_decay": weight_decay, "amsgrad": bool(amsgrad), "state": state,
            "weights": weights}
    arrays = [_address(a, "adam: " + what) for a, what in
              ((param, "param"), (master, "master"), (m, "m"), (v, "v"))]
    _call(_lib.adam, *arrays, _whole(n, "adam: n", 1, 2 ** 48), json.dumps(opts).encode(),
          _whole(step, "adam: step", 1))
