#!/bin/sh
# scripts/torch-env.sh — CPU PyTorch from PyPI in .venv-torch, for the Python package's torch
# tests (tests/test-python.sh uses it when it is there), with Hugging Face transformers,
# accelerate and peft (the tests build GPT-2 and Llama from configs, with random weights, run a
# Trainer and train LoRA adapters). Best effort: without a package registry it says so and the torch tests skip
# themselves. PyPI's wheel is the CUDA build, which imports on a machine without a GPU given the
# CUDA libraries: the toolkit's (installed here) and four that the toolkit lacks (cuFile,
# cuSPARSELt, NVSHMEM, and an NCCL as new as the wheel's), from PyPI too, and pytest, which runs
# the package's tests. Everything that depends on torch is installed without its dependencies,
# which are listed here, so that pip never pulls the wheel's CUDA libraries in (3 GB).
# .venv-torch/bin/python-torch runs Python with them found. The Hugging Face packages are pinned
# to the versions the tests were written against (transformers 5.25 made from_pretrained and
# Trainer ask for a `kernels` package), so that a fresh clone tests what was tested.
cd "$(dirname "$0")/.." || exit 1
venv=.venv-torch
run=$venv/bin/python-torch
HF_PINS="transformers==5.24.0 accelerate==1.15.0 peft==0.21.2"
HF_DEPS="huggingface_hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0"
hf() { # transformers, accelerate and peft, their dependencies but torch
  "$venv/bin/pip" install -q --no-deps $HF_PINS >> "$venv/install.log" 2>&1 &&
    "$venv/bin/pip" install -q numpy $HF_DEPS regex pyyaml tqdm \
      typer packaging psutil >> "$venv/install.log" 2>&1 ||
    echo "torch-env: transformers could not be installed (see $venv/install.log); its tests will skip" >&2
}
if [ -x "$run" ] && "$run" -c 'import torch' >/dev/null 2>&1; then
  "$run" -c 'import pytest' >/dev/null 2>&1 || "$venv/bin/pip" install -q pytest \
    >> "$venv/install.log" 2>&1 || echo "torch-env: pytest could not be installed" >&2
  "$run" -c 'import transformers, accelerate, peft
assert (transformers.__version__, accelerate.__version__, peft.__version__) == \
    ("5.24.0", "1.15.0", "0.21.2")' >/dev/null 2>&1 || hf
  exit 0
fi
start=$(date +%s)
python3 -m venv "$venv" || { echo "torch-env: python3 -m venv failed" >&2; exit 1; }
if ! "$venv/bin/pip" install -q --no-deps torch==2.15.0 nvidia-cufile nvidia-cusparselt-cu13 \
       nvidia-nvshmem-cu13 nvidia-nccl-cu13 > "$venv/install.log" 2>&1 ||
   ! "$venv/bin/pip" install -q filelock typing-extensions sympy networkx jinja2 fsspec pytest \
       >> "$venv/install.log" 2>&1; then
  echo "torch-env: PyTorch could not be installed from PyPI (see $venv/install.log); the torch tests will skip" >&2
  exit 1
fi
hf
site=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
libs=$(find "$site/nvidia" -name 'lib' -type d 2>/dev/null | tr '\n' ':')
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libs="$libs$d:"; done
cat > "$run" <<EOT
#!/bin/sh
LD_LIBRARY_PATH="$libs\${LD_LIBRARY_PATH:-}" exec "$PWD/$venv/bin/python" "\$@"
EOT
chmod +x "$run"
if ! "$run" -c 'import torch' > "$venv/import.log" 2>&1; then
  echo "torch-env: PyTorch was installed but does not import (see $venv/import.log); the torch tests will skip" >&2
  exit 1
fi
echo "torch-env: $("$run" -c 'import torch; print("torch", torch.__version__)') in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1)" >&2
