"""tests/python-alone.py — runs each pytest case ID given on the command line alone: every case in
a process of its own, forked from this one after it has imported the libraries the cases import
(PyTorch, transformers, peft, stowage) and nothing else, so no case sees what another did, and
none pays the seconds PyTorch's import takes. As many cases at once as there are CPUs. Prints
" ID" for each case that failed (nothing when all passed); exits 0.

Usage (from python/, with the environment of test-python.sh): python tests/python-alone.py ID..."""
import importlib
import os
import sys
import warnings


def run_alone(case):
    """In a forked child: the case under pytest, its output discarded; never returns."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-W", "ignore", case])
    except BaseException:  # noqa: BLE001 (a child must not return into the parent's loop)
        code = 1
    os._exit(int(code))


def main(cases):
    warnings.simplefilter("ignore")
    for name in ("pytest", "torch", "transformers", "peft", "stowage", "stowage.torch"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (what is missing, a case imports and reports itself)
            pass
    # as many at once as this process may run on (its CPU affinity, as nproc counts them)
    width = max(len(os.sched_getaffinity(0)), 1)
    running, failed = {}, []
    pending = list(cases)
    while pending or running:
        while pending and len(running) < width:
            case = pending.pop(0)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                run_alone(case)
            running[pid] = case
        pid, status = os.wait()
        case = running.pop(pid)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            failed.append(case)
    order = {c: i for i, c in enumerate(cases)}
    sys.stdout.write("".join(" " + c for c in sorted(failed, key=order.get)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
