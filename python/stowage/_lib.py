"""The C library, loaded once, every function of <stowage/bind.h> declared for ctypes."""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("STOWAGE_LIB")
    if env:
        yield env
        return
    try:  # the checkout's library that `pip install ./python` was built beside
        from ._built import LIBRARY
        if LIBRARY:
            yield LIBRARY
    except ImportError:
        pass
    # a checkout: python/stowage/ sits two folders below the build's .libs/
    for up in ("..", os.path.join("..", "..")):
        yield os.path.normpath(os.path.join(_HERE, up, ".libs", "libstowage.so"))
    found = ctypes.util.find_library("stowage")
    if found:
        yield found
    for prefix in ("/usr/local/lib", "/usr/lib"):
        yield os.path.join(prefix, "libstowage.so")


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("stowage: libstowage.so not found (set STOWAGE_LIB to its path); tried: "
                      + "; ".join(tried))


lib = _load()

c_char_pp = ctypes.POINTER(ctypes.c_char_p)
u64 = ctypes.c_uint64
u32 = ctypes.c_uint32


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# strings the library returns are the caller's: received as void pointers and freed
free = _fn("stw_bind_free", None, ctypes.c_void_p)
version = _fn("stw_bind_version", ctypes.c_char_p)

trace_load = _fn("stw_bind_trace_load", ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
synth = _fn("stw_bind_synth", ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
import_trace = _fn("stw_bind_import", ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                   ctypes.POINTER(ctypes.c_void_p))
trace_save = _fn("stw_bind_trace_save", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                 ctypes.POINTER(ctypes.c_void_p))
trace_free = _fn("stw_bind_trace_free", None, ctypes.c_void_p)
trace_summary = _fn("stw_bind_trace_summary", ctypes.c_void_p, ctypes.c_void_p, u32)
trace_new = _fn("stw_bind_trace_new", ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, u64)
trace_add_tensor = _fn("stw_bind_trace_add_tensor", ctypes.c_int64, ctypes.c_void_p,
                       ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(u64), u32,
                       ctypes.POINTER(ctypes.c_void_p))
trace_add_op = _fn("stw_bind_trace_add_op", ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p,
                   ctypes.c_char_p, ctypes.POINTER(u32), u32, ctypes.POINTER(u32), u32, u64, u64,
                   u64, ctypes.POINTER(ctypes.c_void_p))
trace_warn = _fn("stw_bind_trace_warn", None, ctypes.c_void_p, ctypes.c_char_p, u64)
trace_add_block = _fn("stw_bind_trace_add_block", ctypes.c_int64, ctypes.c_void_p,
                      ctypes.c_char_p, u32, u32, u32, u32, u64, u64, u64)
trace_set_shape = _fn("stw_bind_trace_set_shape", None, ctypes.c_void_p, u64, u64)
trace_validate = _fn("stw_bind_trace_validate", ctypes.c_int, ctypes.c_void_p,
                     ctypes.POINTER(ctypes.c_void_p))
trace_set_steps = _fn("stw_bind_trace_set_steps", ctypes.c_int, ctypes.c_void_p, u32,
                      ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
trace_freeze = _fn("stw_bind_trace_freeze", ctypes.c_int, ctypes.c_void_p, u32,
                   ctypes.POINTER(ctypes.c_void_p))
trace_set_amsgrad = _fn("stw_bind_trace_set_amsgrad", None, ctypes.c_void_p, ctypes.c_int)
trace_set_process_bytes = _fn("stw_bind_trace_set_process_bytes", None, ctypes.c_void_p, u64)
trace_set_gpu_process_bytes = _fn("stw_bind_trace_set_gpu_process_bytes", None, ctypes.c_void_p,
                                  u64)
trace_set_autocast = _fn("stw_bind_trace_set_autocast", ctypes.c_int, ctypes.c_void_p,
                         ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
size_parse = _fn("stw_bind_size_parse", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(u64),
                 ctypes.POINTER(ctypes.c_void_p))

plan = _fn("stw_bind_plan", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
           ctypes.POINTER(ctypes.c_void_p))
plan_load = _fn("stw_bind_plan_load", ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
plan_save = _fn("stw_bind_plan_save", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
plan_free = _fn("stw_bind_plan_free", None, ctypes.c_void_p)
plan_predictions = _fn("stw_bind_plan_predictions", ctypes.c_void_p, ctypes.c_void_p)
check = _fn("stw_bind_check", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_void_p))
simulate = _fn("stw_bind_simulate", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
               ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
probe = _fn("stw_bind_probe", ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
capacity = _fn("stw_bind_capacity", ctypes.c_void_p, ctypes.c_char_p,
               ctypes.POINTER(ctypes.c_void_p))
minmem = _fn("stw_bind_minmem", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
             ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
whatif = _fn("stw_bind_whatif", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
             ctypes.POINTER(ctypes.c_void_p))
compare = _fn("stw_bind_compare", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
              ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))


trace_json = _fn("stw_bind_trace_json", ctypes.c_void_p, ctypes.c_void_p,
                 ctypes.POINTER(ctypes.c_void_p))
f32p = ctypes.POINTER(ctypes.c_float)
runtime_new = _fn("stw_bind_runtime_new", ctypes.c_void_p, ctypes.c_void_p,
                  ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, u64,
                  ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
runtime_free = _fn("stw_bind_runtime_free", None, ctypes.c_void_p)
runtime_iteration_begin = _fn("stw_bind_runtime_iteration_begin", None, ctypes.c_void_p)
runtime_iteration_end = _fn("stw_bind_runtime_iteration_end", ctypes.c_int, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_void_p))
runtime_op_begin = _fn("stw_bind_runtime_op_begin", ctypes.c_int, ctypes.c_void_p,
                       ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(u32), u32,
                       ctypes.POINTER(u32), u32, ctypes.POINTER(ctypes.c_void_p))
runtime_op_end = _fn("stw_bind_runtime_op_end", None, ctypes.c_void_p)
runtime_unplanned_op_begin = _fn("stw_bind_runtime_unplanned_op_begin", ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(u32), u32,
                                 ctypes.POINTER(ctypes.c_void_p))
runtime_param = _fn("stw_bind_runtime_param", ctypes.c_void_p, ctypes.c_void_p, u32)
runtime_adam = _fn("stw_bind_runtime_adam", ctypes.c_int, ctypes.c_void_p, u32, ctypes.c_char_p,
                   u64, ctypes.POINTER(ctypes.c_void_p))
runtime_optim_grad = _fn("stw_bind_runtime_optim_grad", ctypes.c_void_p, ctypes.c_void_p,
                         u32, ctypes.POINTER(ctypes.c_int))
runtime_optim_weights = _fn("stw_bind_runtime_optim_weights", ctypes.c_void_p, ctypes.c_void_p,
                            u32)
adam = _fn("stw_bind_adam", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
           ctypes.c_void_p, u64, ctypes.c_char_p, u64, ctypes.POINTER(ctypes.c_void_p))
runtime_stats = _fn("stw_bind_runtime_stats", ctypes.c_void_p, ctypes.c_void_p)
runtime_master = _fn("stw_bind_runtime_master", ctypes.c_int, ctypes.c_void_p, u32, f32p,
                     ctypes.POINTER(ctypes.c_void_p))
runtime_iteration_abandon = _fn("stw_bind_runtime_iteration_abandon", None, ctypes.c_void_p)
runtime_read_state = _fn("stw_bind_runtime_read_state", ctypes.c_int, ctypes.c_void_p, u32,
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.POINTER(ctypes.c_void_p))
runtime_hand_back = _fn("stw_bind_runtime_hand_back", ctypes.c_int, ctypes.c_void_p, u32,
                        ctypes.POINTER(ctypes.c_void_p))
runtime_write_state = _fn("stw_bind_runtime_write_state", ctypes.c_int, ctypes.c_void_p, u32,
                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_void_p))


def take(ptr):
    """The library's string at PTR as a Python str, freed; None for NULL."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)
