#!/usr/bin/env python3
"""bench/published.py [BUILDDIR] [DATA] [--rows ID,...] [--keep DIR] [--commands] -- stowage's
predictions against what other people measured for offloaded training
(../shared/data/published/measurements.csv, read its README).

Every usable row is replayed with the policy it names: the model rebuilt from the row's own
architecture columns (a Hugging Face config: gpt2, opt, gpt_neox (Pythia), falcon, gptj,
gpt_bigcode (StarCoder), mpt, or a llama-style family by its name: llama, mistral, qwen2, qwen3,
gemma, gemma2, gemma3, phi3, granite, smollm, and as llama the families without a config class
of their own (Yi, InternLM, Baichuan, DeepSeek's dense models, Vicuna, OLMo, Aquila) or a row
that names llama's blocks (SwiGLU, RMSNorm, rotary positions, grouped queries); bloom; a
mixture of experts by its words: Mixtral's or Qwen3-MoE's blocks with "N experts" and "top-K"
or "K active", ffn_hidden an expert's width, Mixtral's two a token where the row does not say;
shared experts and latent attention, whose sizes the columns do not give, listed as not
replayed), synthesized at the
row's batch, sequence and gradient accumulation (micro-steps; each micro-step's gradients
copied to the host, where the row's gradients are on the CPU and not in Gemini's chunks: added
there, `--gradients host`, as FSDP does, or on the GPU, `--gradients host-via-device`, as
DeepSpeed does) in its precision (`stowage synth`;
PyTorch's AMP, fp32 weights and 16-bit GEMMs, under plain DDP: `--amp`;
attention fused where its configuration says so or, in bf16, from 2024 on; activations recomputed
where it says so, or where it does not and only that fits; their checkpoints in host memory,
`--checkpoints host`, where it says so, or where its sources disagree and only that fits),
planned on the shipped profile of
its GPU with its host memory and GPU count (`stowage plan`):

  Gemini placement_policy=cpu    gemini-static, --gemini-fraction 0 (every chunk on the host)
  Gemini placement_policy=auto   patrickstar (PatrickStar's dynamic placement, Gemini's origin),
                                 --margin its gpu_margin_mem_ratio (Gemini's default: 0)
  Gemini placement_policy=const  gemini-static with the const boundary's share of the model data
  Gemini cuda, ZeRO-3 no offload gemini-static, --gemini-fraction 1 (sharded, nothing offloaded)
  ZeRO-Offload (ZeRO-2 + CPU)    zero-offload
  ZeRO-2 without offload         the trace with unlimited memory (`compare`'s unlimited time)
  PyTorch DDP                    `compare`'s ddp baseline (every GPU the whole model, the
                                 gradients all-reduced in buckets; its time and GPU peak)
  other words for these          the policy the row's emulation_target names
  none of these words            where its location columns put the data: the parameters on
                                 the host, zero-infinity (FSDP's CPU offload); the optimizer
                                 alone, zero-offload; all on the GPUs, gemini-static
                                 --gemini-fraction 1 where sharded, else the ddp baseline

and the published figure is set against the prediction in the row's own terms: the step time
(from TFLOPS or PFLOPS by the source's own formula; from iterations, samples or tokens a second,
a GPU's where the unit says so; from seconds an iteration in any of their spellings, `ms/step`,
`s/it`, `sec/iteration`; or from an epoch's time as the row derives a step from it; forward and
backward alone where the row times only those: the simulated end of the last backward op),
whether it ran out of memory, or
the largest model of a zoo that ran (the most layers at the row's width whose plan fits, against
the zoo's sizes). Each row names the profile it replays on. Rows no policy can represent, and
rows with a field this bench cannot read, are listed with the reason. Prints Markdown: one line
per row, then the mean absolute error per system, the rates in the rows' own units where they
publish one (TFLOPS, samples or tokens a second: the published rate times the published step
time over the simulated one) with their mean absolute error per system, the peaks (and theirs)
and largest models where rows publish them, and where a row ran out of memory or its plan does
not fit, what each says (the plan's GPU peak against its budget, or the planner's reason, and
for a GPT-2 row of one node the most layers at its width whose plan fits). Its last result is
bench/results/published.md.

  --rows ID,...  replay only these rows (their row_id), in the set's order
  --keep DIR     write each row's config, trace and plan into DIR (made where missing) and keep
                 them, rather than in a temporary directory
  --commands     print each stowage command a row runs, as a shell line, to standard error:
                 with --keep, commands that run again as they are
"""
import contextlib
import csv
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def arguments(argv):
    """[BUILDDIR] [DATA] and the options, from ARGV; exit 2 with usage on anything else."""
    usage = ("usage: published.py [BUILDDIR] [DATA] [--rows ID,...] [--keep DIR] [--commands]")
    positional, rows, keep, commands = [], None, None, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--rows", "--keep"):
            if i + 1 >= len(argv) or not argv[i + 1] or argv[i + 1].startswith("--"):
                sys.stderr.write("published.py: %s needs a value\n%s\n" % (a, usage))
                sys.exit(2)
            if a == "--rows":
                rows = [r.strip() for r in argv[i + 1].split(",") if r.strip()]
            else:
                keep = argv[i + 1]
            i += 2
            continue
        if a == "--commands":
            commands = True
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        elif a.startswith("-") or len(positional) == 2:
            sys.stderr.write("published.py: %r: not an option or argument it takes\n%s\n"
                             % (a, usage))
            sys.exit(2)
        else:
            positional.append(a)
        i += 1
    build = positional[0] if positional else os.path.dirname(HERE)
    data = positional[1] if len(positional) > 1 else os.path.join(
        os.path.dirname(HERE), "..", "shared", "data", "published")
    return build, data, rows, keep, commands


BUILD, DATA, ROWS, KEEP, COMMANDS = arguments(sys.argv[1:])
STOWAGE = os.path.join(BUILD, "stowage")

# the shipped profile each row's GPU is replayed on: (its name's pattern, the profile of the
# NVLink/SXM part, the PCIe card's), the first that matches: the PCIe card's where the source says
# the GPUs sit on PCIe or names the PCIe card, and where it states no link between several GPUs
# (servers of SXM boards are DGX/HGX systems whose users name them; bench/results/published.md
# has both readings of those rows); the SXM part where it names one, a DGX or NVLink, or where
# one GPU's workers share nothing. The row's own GPU memory is the plan's budget.
GPUS = [  # (the GPU's name, its SXM or NVLink board's profile, its PCIe card's)
    (r"GH200", "GH200-96GB", "GH200-96GB"),
    (r"A100\S*[ -]\(?40 ?GB", "A100-SXM4-40GB", "A100-40GB-PCIe4"),
    (r"A100", "A100-SXM4-80GB", "A100-80GB-PCIe4"),
    (r"A800", "A800-SXM4-80GB", "A100-80GB-PCIe4"),  # the PCIe A800 computes as the A100's
    (r"H200", "H200-SXM-141GB", "H200-141GB-PCIe5"),
    (r"H100", "H100-SXM5-80GB", "H100-80GB-PCIe5"),
    (r"H800", "H800-SXM5-80GB", "H100-80GB-PCIe5"),
    (r"V100", "V100-SXM2-32GB", "V100-32GB-PCIe3"),
    (r"\bA6000\b", "RTXA6000-48GB-PCIe4", "RTXA6000-48GB-PCIe4"),
    (r"\bA40\b", "A40-48GB-PCIe4", "A40-48GB-PCIe4"),
    (r"\bL4\b", "L4-24GB-PCIe4", "L4-24GB-PCIe4"),
    (r"\bA10G?\b", "A10-24GB-PCIe4", "A10-24GB-PCIe4"),
    (r"\bT4\b", "T4-16GB-PCIe3", "T4-16GB-PCIe3"),
    (r"2080 ?Ti", "RTX2080Ti-11GB-PCIe3", "RTX2080Ti-11GB-PCIe3"),
    (r"RTX ?4090", "RTX4090-24GB-PCIe4", "RTX4090-24GB-PCIe4"),
    (r"RTX ?3090", "RTX3090-24GB-PCIe4", "RTX3090-24GB-PCIe4"),
    (r"L40S", "L40S-48GB-PCIe4", "L40S-48GB-PCIe4"),
    (r"Titan RTX", "TitanRTX-24GB-PCIe3", "TitanRTX-24GB-PCIe3"),
    (r"RTX PRO 6000", "RTXPRO6000-96GB-PCIe5", "RTXPRO6000-96GB-PCIe5"),
]


COMMAND_LIMIT_S = 600  # a command longer than this (a row's values far out of range) fails


def run(*args):
    if COMMANDS:
        sys.stderr.write("$ %s\n" % " ".join(shlex.quote(a) for a in (STOWAGE, *args)))
    try:
        r = subprocess.run([STOWAGE, *args], capture_output=True, text=True,
                           timeout=COMMAND_LIMIT_S)
    except subprocess.TimeoutExpired:
        return 124, "stowage: %s: no answer within %d s" % (args[0], COMMAND_LIMIT_S)
    return r.returncode, r.stdout + r.stderr


def failed(command, out):
    """What a stowage COMMAND that failed said, in one line: its last, named by the command
    once (the CLI's own "stowage: " and, where it gives it, the command's name taken off)."""
    said = re.sub(r"^stowage: ", "", out.strip().splitlines()[-1] if out.strip() else "no output")
    return "%s: %s" % (command, re.sub(r"^%s: " % command, "", said))


COLUMNS = (  # the columns of the published set this bench reads (its README defines them)
    "row_id", "system_family", "emulation_target", "system", "policy_config",
    "params_fp16_location", "grads_location", "optimizer_state_and_master_location",
    "optimizer_impl", "activation_checkpointing", "precision", "model_name", "arch_type",
    "n_layers", "hidden_size", "n_heads", "n_kv_heads", "ffn_hidden", "vocab_size",
    "tied_embeddings", "seq_len", "params_total_B_computed", "micro_batch_per_gpu",
    "grad_accum_steps", "global_batch", "n_gpus", "n_nodes", "tensor_parallel", "gpu_model",
    "gpu_mem_GB", "gpu_gpu_link", "host_mem_GB", "nvme", "metric", "value", "unit",
    "metric_definition", "peak_gpu_mem_measured", "source_date")


def profile_of(row):
    gpu, link = row["gpu_model"], row["gpu_gpu_link"].strip().lower()
    sxm = re.search(r"SXM|DGX|HGX|NVLink|NVSwitch", gpu + " " + link, re.IGNORECASE)
    pcie = (link.startswith("pcie") or re.search(r"PCIe", gpu, re.IGNORECASE) is not None or
            (link in ("", "not stated") and not sxm and whole(row, "n_gpus", 1) > 1))
    for pattern, sxm, card in GPUS:
        if re.search(pattern, gpu, re.IGNORECASE):
            return card if pcie else sxm
    return None


def gpu_budget(row, hw):
    """The plan's GPU budget: the row's GPU memory in GiB, or all of the shipped profile's (its
    file in hw/) where the row names its card's nominal size (a "24 GB" TITAN RTX has 23.65
    GiB)."""
    if gib(row["gpu_mem_GB"]) is None:
        raise ValueError("gpu_mem_GB: %r is not a memory size in GB" % row["gpu_mem_GB"])
    want = int(gib(row["gpu_mem_GB"])) * 2 ** 30
    try:
        with open(os.path.join(os.path.dirname(HERE), "hw", hw + ".json")) as f:
            have = int(json.load(f)["gpu"]["memory_bytes"])
    except (OSError, ValueError, KeyError):
        have = want
    return "%d" % min(want, have)


def whole(row, field, default=None):
    """ROW's FIELD as a count, a whole number from 1 up (DEFAULT where it is empty and there is
    one); a ValueError naming the field where it is not one."""
    text = row[field].strip()
    if not text and default is not None:
        return default
    if not re.fullmatch(r"0*[1-9]\d*", text):
        raise ValueError("%s: %r is not a whole number from 1 up" % (field, row[field]))
    return int(text)


def number(row, field):
    """ROW's FIELD as a finite number, or a ValueError naming the field."""
    try:
        x = float(row[field])
    except ValueError:
        x = float("nan")
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("%s: %r is not a number" % (field, row[field]))
    return x


def gib(text):
    m = re.match(r"\s*(\d+(?:\.\d+)?)", text or "")
    return float(m.group(1)) if m else None


def config_of(row):
    """The row's architecture as a Hugging Face config.json, or None with why."""
    arch, name = row["arch_type"].lower(), row["model_name"].lower()
    layers, hidden = whole(row, "n_layers"), whole(row, "hidden_size")
    heads = whole(row, "n_heads")
    vocab, seq = whole(row, "vocab_size"), whole(row, "seq_len")
    if "gpt2" in name or "gpt-2" in arch or "gpt2" in arch or megatron(row):
        return {"model_type": "gpt2", "n_layer": layers, "n_embd": hidden, "n_head": heads,
                "vocab_size": vocab, "n_positions": max(seq, 1024),
                "n_inner": whole(row, "ffn_hidden", 4 * hidden)}
    # OPT (GPT-2's block with a ReLU MLP ffn wide) and GPT-NeoX (Pythia), by their names
    if re.search(r"\bopt\b", arch) or re.search(r"(^|/)opt-\d", name):
        return {"model_type": "opt", "num_hidden_layers": layers, "hidden_size": hidden,
                "num_attention_heads": heads, "ffn_dim": whole(row, "ffn_hidden", 4 * hidden),
                "vocab_size": vocab, "max_position_embeddings": max(seq, 2048),
                "tie_word_embeddings": not row["tied_embeddings"].startswith("no")}
    if re.search(r"\bbloom", arch) or re.search(r"(^|/)bloom", name):  # ALiBi, the MLP 4 x hidden
        return {"model_type": "bloom", "n_layer": layers, "hidden_size": hidden, "n_head": heads,
                "vocab_size": vocab,
                "tie_word_embeddings": not row["tied_embeddings"].startswith("no")}
    # the other families the C side reads by their own members (docs/models.md), by their names
    kv = whole(row, "n_kv_heads", heads)
    words = arch + " " + name
    if re.search(r"falcon", words) and not re.search(r"mamba|falcon[ -]?h1", words):
        return {"model_type": "falcon", "num_hidden_layers": layers, "hidden_size": hidden,
                "num_attention_heads": heads, "num_kv_heads": kv, "vocab_size": vocab,
                "parallel_attn": True, "multi_query": kv == 1,
                "new_decoder_architecture": 1 < kv < heads, "bias": False}
    if re.search(r"gpt-?j\b", words):
        return {"model_type": "gptj", "n_layer": layers, "n_embd": hidden, "n_head": heads,
                "rotary_dim": 64, "vocab_size": vocab, "n_positions": max(seq, 2048),
                "n_inner": whole(row, "ffn_hidden", 4 * hidden)}
    if re.search(r"starcoder(?!2)|bigcode|santacoder", words):
        return {"model_type": "gpt_bigcode", "n_layer": layers, "n_embd": hidden,
                "n_head": heads, "multi_query": kv == 1, "vocab_size": vocab,
                "n_positions": max(seq, 8192), "n_inner": whole(row, "ffn_hidden", 4 * hidden)}
    if re.search(r"\bmpt\b", words):
        return {"model_type": "mpt", "n_layers": layers, "d_model": hidden, "n_heads": heads,
                "vocab_size": vocab, "max_seq_len": max(seq, 2048),
                "expansion_ratio": whole(row, "ffn_hidden", 4 * hidden) / hidden}
    if re.search(r"neox|pythia", arch):
        return {"model_type": "gpt_neox", "num_hidden_layers": layers, "hidden_size": hidden,
                "num_attention_heads": heads,
                "intermediate_size": whole(row, "ffn_hidden", 4 * hidden), "vocab_size": vocab,
                "max_position_embeddings": max(seq, 2048),
                "tie_word_embeddings": row["tied_embeddings"].startswith("yes")}
    # a mixture of experts: Mixtral's and Qwen3-MoE's blocks, their experts counted in the
    # row's words ("8 experts, top-2"), ffn_hidden an expert's width; other kinds of experts
    # (shared ones, latent attention) need members the row's columns do not have
    moe = experts_of(row)
    if isinstance(moe, str):  # replay() says why
        return None
    if moe is not None:
        experts, active, _ = moe
        common = {"num_hidden_layers": layers, "hidden_size": hidden,
                  "num_attention_heads": heads,
                  "num_key_value_heads": whole(row, "n_kv_heads", heads), "vocab_size": vocab,
                  "max_position_embeddings": max(seq, 4096),
                  "tie_word_embeddings": row["tied_embeddings"].startswith("yes"),
                  "num_experts_per_tok": active}
        m = re.search(r"head_dim (\d+)", arch)
        if m:
            common["head_dim"] = int(m.group(1))
        if re.search(r"qwen[ -]?3", arch):
            return dict(common, model_type="qwen3_moe", num_experts=experts,
                        moe_intermediate_size=whole(row, "ffn_hidden"))
        return dict(common, model_type="mixtral", num_local_experts=experts,
                    intermediate_size=whole(row, "ffn_hidden"))
    # the llama-style families, by the words of the row's architecture (the first that
    # matches); the head's width where the row says it, else the family's
    # (by the names of the llama-style families without a config class of their own, or by
    # the blocks the row describes: SwiGLU, RMSNorm, rotary positions, grouped queries; not
    # latent attention, whose sizes the columns do not give)
    if re.search(r"latent|\bmla\b", arch):
        return None
    for pattern, model_type in ((r"qwen3", "qwen3"), (r"qwen2", "qwen2"),
                                (r"gemma[ -]?3", "gemma3_text"), (r"gemma[ -]?2", "gemma2"),
                                (r"gemma", "gemma"), (r"phi[ -]?3", "phi3"),
                                (r"llama|mistral|granite|smollm|\byi\b|internlm|baichuan|"
                                 r"deepseek|vicuna|alpaca|olmo|aquila|swiglu|rmsnorm|\brope\b|"
                                 r"rotary|\bgqa\b", "llama")):
        if not re.search(pattern, arch) and not (model_type == "llama" and
                                                 re.search(pattern, name)):
            continue
        cfg = {"model_type": model_type, "num_hidden_layers": layers, "hidden_size": hidden,
               "num_attention_heads": heads,
               "num_key_value_heads": whole(row, "n_kv_heads", heads),
               "intermediate_size": whole(row, "ffn_hidden"), "vocab_size": vocab,
               "max_position_embeddings": max(seq, 4096),
               "tie_word_embeddings": row["tied_embeddings"].startswith("yes")}
        m = re.search(r"head_dim (\d+)", arch)
        if m:
            cfg["head_dim"] = int(m.group(1))
        return cfg
    return None


def experts_of(row):
    """A mixture of experts' (experts, experts a token, what was assumed or None) from the row's
    architecture words, None for a dense model, or a string saying why the row's columns cannot
    build it."""
    arch = row["arch_type"].lower()
    if not re.search(r"mixtral|\bmoe\b|mixture[ -]of[ -]experts|\bexperts?\b", arch):
        return None
    if re.search(r"deepseek|latent|\bmla\b|shared expert", arch):
        return ("a mixture of experts with shared experts or latent attention, whose sizes the "
                "row's columns do not give")
    if not re.search(r"mixtral|mistral|llama|qwen[ -]?3", arch):
        return "a mixture of experts of a kind this bench does not build"
    n = re.search(r"(\d+)\s*(?:routed\s+)?experts", arch) or re.search(r"(\d+)x\d+b", arch)
    k = re.search(r"top[- ]?(\d+)", arch) or re.search(r"(\d+)\s*(?:experts\s+)?active", arch)
    if n is not None and k is None and "mixtral" in arch:  # every Mixtral routes to two
        return int(n.group(1)), 2, "2 experts a token (Mixtral's; not stated)"
    if n is None or k is None:
        return "a mixture of experts whose experts (N experts, top-K) the row does not count"
    return int(n.group(1)), int(k.group(1)), None


def megatron(row):
    """Whether the row's model is Megatron's GPT (GPT-2's blocks, its own fused kernels)."""
    return re.search(r"megatron.*gpt", row["arch_type"], re.IGNORECASE) is not None


def deepspeed(row):
    """Whether the row's system is DeepSpeed's (its ZeRO, ZeRO-Offload, ZeRO-Infinity)."""
    return "deepspeed" in row["system"].lower()


def offloads(cfg, what):
    """Where DeepSpeed's offload_WHAT sends its data in policy text CFG ("cpu", "nvme"), or
    None: `offload_optimizer cpu`, `offload_param.device=nvme` and the like."""
    m = re.search(r"offload_%s[ .:=]*(?:device[ =:]*)?\"?(cpu|nvme)" % what, cfg, re.IGNORECASE)
    return m.group(1).lower() if m else None


# the shipped storage presets (docs/hardware.md): a drive's capacity in bytes
DRIVES = {"nvme-gen3": 10 ** 12, "nvme-gen4": 2 * 10 ** 12, "nvme-gen5": 2 * 10 ** 12}


def storage_of(row):
    """The row's drives as plan options (--storage PRESET --nvme-devices N --nvme BYTES) from
    its `nvme` column ("2x Samsung 980 PRO 1TB", "4x PCIe Gen5 NVMe"), and what was assumed where
    it does not say (None: nothing)."""
    text = row.get("nvme", "").strip()
    low = text.lower()
    if not text or re.match(r"(not|none|n/a|no\b|-)", low):
        n, preset, per = 1, "nvme-gen4", None
        assumed = "its drives not stated: one PCIe 4.0 drive (nvme-gen4) assumed"
    else:
        m = re.search(r"(\d+)\s*(?:x|\u00d7)", low)
        n = int(m.group(1)) if m else 1
        if not 1 <= n <= 256:
            raise ValueError("nvme: %r drives is not from 1 to 256" % n)
        if re.search(r"gen\s*5|pcie\s*5|9100|t70[05]", low):
            preset = "nvme-gen5"
        elif re.search(r"gen\s*3|pcie\s*3|\b9[67]0\b|\b980\b(?!\s*pro)|dgx-2", low):
            preset = "nvme-gen3"
        else:
            preset = "nvme-gen4"
        m = re.search(r"(\d+(?:\.\d+)?)\s*(tb|gb)\b", low)
        per = int(float(m.group(1)) * (10 ** 12 if m.group(2) == "tb" else 10 ** 9)) if m else None
        assumed = None
    cap = n * min(per or DRIVES[preset], DRIVES[preset])
    return ["--nvme", "%gTB" % (cap / 1e12), "--storage", preset, "--nvme-devices", str(n)], assumed


def emulation(row):
    """(policy, extra plan options; "unlimited": the unlimited time), or None and why not."""
    cfg, sysname = row["policy_config"], row["system"]
    if "patrickstar" in (row["system_family"] + " " + sysname).lower():
        return ("patrickstar", []), None
    if "zenflow" in (cfg + " " + sysname).lower():
        return None, "ZenFlow changes the update rule (top-k on the GPU, the rest every 4 steps)"
    if whole(row, "tensor_parallel", 1) > 1:
        return None, "tensor parallelism (TP=%s): stowage plans data parallelism only" % (
            row["tensor_parallel"])
    if "nvme" in (offloads(cfg, "param"), offloads(cfg, "optimizer")):
        # ZeRO-Infinity: its optimizer state on the drives the row names, swapped serially
        options, assumed = storage_of(row)
        notes = [assumed] if assumed else []
        if offloads(cfg, "param") == "nvme":
            notes.append("its parameters on storage only where host memory cannot hold them")
        if notes:
            assume(row, "; ".join(notes))
        return ("zero-infinity", options), None
    if "placement_policy=cpu" in cfg:
        return ("gemini-static", ["--gemini-fraction", "0"]), None
    if "placement_policy=auto" in cfg:  # its optimizer's share of the margin: Gemini's default 0
        m = re.search(r"gpu_margin_mem_ratio\s*=\s*([0-9.]+)", cfg)
        share = float(m.group(1)) if m else 0.0
        if not 0 <= share <= 1:
            raise ValueError("policy_config: gpu_margin_mem_ratio=%s is not from 0 to 1"
                             % m.group(1))
        return ("patrickstar", ["--margin", "%g" % share]), None
    if "placement_policy=const" in cfg:
        return ("gemini-const", []), None
    if re.search(r"offload (unclear|status not stated)", row["system_family"] + " " + sysname):
        return None, "whether it offloaded is not stated"
    if "placement_policy=cuda" in cfg or (re.search(r"ZeRO-3|Gemini", sysname) and
                                          "no offload" in cfg + " " + sysname):
        return ("gemini-static", ["--gemini-fraction", "1"]), None
    if offloads(cfg, "param") == "cpu":  # ZeRO-3 with the parameters on the host too
        return ("zero-infinity", []), None
    if offloads(cfg, "optimizer") == "cpu":  # at stage 3 each GPU keeps its shard alone
        stage3 = re.search(r"ZeRO-3|stage[ _=]*3", cfg + " " + sysname, re.IGNORECASE)
        return ("zero-offload", ["--zero-stage", "3"] if stage3 else []), None
    if "resident in CPU RAM" in cfg:  # MegaTrain: every layer streamed from host memory
        return ("gemini-static", ["--gemini-fraction", "0"]), None
    if re.search(r"\bDDP\b|NO_SHARD", cfg):
        return ("ddp", []), None
    if "no offload" in cfg:
        return ("unlimited", []), None
    # the policy the row's emulation_target names, where its configuration is in other words
    target = row.get("emulation_target", "")
    for pattern, emu in ((r"ZeRO-Infinity", ("zero-infinity", [])),
                         (r"ZeRO-Offload", ("zero-offload", [])),
                         (r"Gemini cuda|ZeRO-3 \(no offload", ("gemini-static",
                                                              ["--gemini-fraction", "1"])),
                         (r"^baseline \(no offload\)", ("unlimited", []))):
        if re.search(pattern, target):
            return emu, None
    # else where the row's location columns put the data: the parameters on the host, streamed
    # to the GPU (ZeRO-3's offload_param, FSDP's CPUOffload); the optimizer alone there
    # (ZeRO-Offload); all of it on the GPUs, sharded (ZeRO-3, FSDP's FULL_SHARD) or replicated
    params = row.get("params_fp16_location", "").strip().lower()
    state = row.get("optimizer_state_and_master_location", "").strip().lower()
    if params.startswith(("cpu", "host")):
        return ("zero-infinity", []), None
    if state.startswith(("cpu", "host")):
        return ("zero-offload", ["--zero-stage", "3"] if "shard" in params else []), None
    if params.startswith("gpu") and state.startswith("gpu"):
        if "shard" in params + state and "no shard" not in params + state:
            return ("gemini-static", ["--gemini-fraction", "1"]), None
        return ("ddp", []), None
    return None, "no stowage policy is this system's (%s)" % cfg[:60]


def layout_of(row, policy, extra):
    """The plan's --layout for the row's system on several GPUs: each chunk split across them
    (shards) where the system partitions its parameters so, ZeRO-3 (each tensor, in buckets),
    Gemini and FSDP (each chunk or flat parameter); PatrickStar's groups of whole chunks where
    the row is PatrickStar's; none where every GPU holds the whole 16-bit model (ZeRO-2, DDP)."""
    if whole(row, "n_gpus") < 2 or policy in ("ddp", "unlimited") or \
            "patrickstar" in (row["system_family"] + " " + row["system"]).lower():
        return []
    if policy == "zero-offload" and "3" not in extra:
        return []
    return ["--layout", "shards"]


def emulated_options(row, policy, extra):
    """The plan's options beyond its policy, as the tables show them: " OPTIONS", or ""."""
    options = extra + layout_of(row, policy, extra)
    return " " + " ".join(options) if options else ""


def flops_per_gpu(row):
    """A GPU's FLOPs a step by the row's own TFLOPS formula (its metric_definition), or None:
    K * N * tokens (MegaTrain's 6 N, the ColossalAI example's `numel * batch * seq * 8`), or
    Megatron's 96 B s l h^2 (1 + s / 6h + V / 16 l h) over the global batch."""
    d = row["metric_definition"]
    batch, seq = whole(row, "micro_batch_per_gpu"), whole(row, "seq_len")
    if re.search(r"96\s*\*\s*B\s*\*\s*s\s*\*\s*l\s*\*\s*h\^2", d):
        b, s = whole(row, "global_batch", batch * whole(row, "n_gpus")), seq
        l, h, v = whole(row, "n_layers"), whole(row, "hidden_size"), whole(row, "vocab_size")
        gpus = whole(row, "n_gpus")
        return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / gpus
    m = (re.match(r"\D*?(\d+)\s*[*\u00d7]\s*N", d) or
         re.search(r"[*\u00d7]\s*(\d+)\s*/\s*step", d))
    if not m or not row["params_total_B_computed"]:
        return None
    return int(m.group(1)) * number(row, "params_total_B_computed") * 1e9 * batch * seq


TIME = r"(ns|us|\u00b5s|ms|s|secs?|seconds?|min|mins|minutes?|h|hours?)"
SECONDS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0,
           "h": 3600.0}
A_SECOND = r"\s*/\s*(s|secs?|seconds?)\b"


def unit_seconds(t):
    """Seconds in a unit of time in any of TIME's spellings ("ms", "sec", "minutes", "h")."""
    t = t.lower()
    return SECONDS.get(t, SECONDS.get(t[:3], SECONDS.get(t[:1], 1.0)))


def seconds(v, unit):
    return float(v) * unit_seconds(unit)


def unit_of(unit, metric=""):
    """What a published unit measures, as (kind, scale): ("flops", FLOP/s a unit: TFLOPS,
    TFLOP/s, PFLOPS), ("time", seconds a unit: ms/step, s/it, sec/iteration, or a bare time
    where the metric is a step time), ("steps", 1: it/s, steps/s), ("samples", 1: samples/s,
    samples/sec, sequences/s), ("tokens", 1: tokens/s, tok/s, tokens/sec), ("epoch", seconds a
    unit: s/epoch, min/epoch); None for another."""
    u = unit.strip()
    m = re.match(r"([TP])FLOP/?S?\b", u, re.IGNORECASE)
    if m:
        return "flops", 1e12 if m.group(1).upper() == "T" else 1e15
    m = re.match(TIME + r"\s*/\s*(step|steps|iter|iters|iteration|it|batch)\b", u, re.IGNORECASE)
    if m or (metric.startswith("Step time") and re.fullmatch(TIME, u, re.IGNORECASE)):
        return "time", unit_seconds(m.group(1) if m else u)
    m = re.match(TIME + r"\s*/\s*epoch\b", u, re.IGNORECASE)
    if m:
        return "epoch", unit_seconds(m.group(1))
    if re.match(r"(it|its|iters?|iterations?|steps?)" + A_SECOND, u, re.IGNORECASE):
        return "steps", 1.0
    if re.match(r"(samples?|seqs?|sequences?)" + A_SECOND, u, re.IGNORECASE):
        return "samples", 1.0
    if re.match(r"(tokens?|toks?)" + A_SECOND, u, re.IGNORECASE):
        return "tokens", 1.0
    return None


def published_step_s(row):
    """The published figure as seconds per step (per rank's micro-batch), or None."""
    v, unit, metric = row["value"], row["unit"], row["metric"]
    try:
        value = float(v)
    except ValueError:
        return None
    kind = unit_of(unit, metric)
    if kind is None or not value > 0:
        return None
    kind, scale = kind
    batch, seq = whole(row, "micro_batch_per_gpu"), whole(row, "seq_len")
    if kind == "flops":
        per_gpu = value / whole(row, "n_gpus") if "aggregate" in unit else value
        flops = flops_per_gpu(row)
        return flops / (per_gpu * scale) if flops else None
    # a rate is global unless the unit says it is a GPU's
    gpus = 1 if re.search(r"per GPU|/GPU|per rank|/rank|per device|/device", unit,
                          re.IGNORECASE) else whole(row, "n_gpus")
    if kind == "time":
        return value * scale
    if kind == "epoch":  # a step's share, where the row derives it (steps an epoch)
        m = re.search(r"([\d.]+) s/step", row["metric_definition"])
        if m:
            assume(row, "published: an epoch's time; a step as the row derives it")
        return float(m.group(1)) if m else None
    if kind == "steps":
        return 1.0 / value
    if kind == "samples":
        return batch * gpus / value
    return batch * seq * gpus / value  # tokens


def unit_kind(unit):
    """unit_of's kind alone ("flops", "time", ...), or None."""
    kind = unit_of(unit)
    return kind[0] if kind is not None else None


def is_rate(unit):
    """Whether a published unit is a rate (TFLOPS; steps, samples or tokens a second), which
    the prediction is set against in the row's own terms as well as a step time."""
    return unit_kind(unit) in ("flops", "steps", "samples", "tokens")


def summary(errors, what):
    """Prints the mean absolute error of WHAT per system, from ERRORS (system -> percents)."""
    print("| system | rows | mean absolute error%s | worst |" % what)
    print("|---|---:|---:|---:|")
    for system, errs in sorted(errors.items()):
        mae = sum(abs(e) for e in errs) / len(errs)
        worst = max(errs, key=abs)
        print("| %s | %d | %.1f%% | %+.1f%% |" % (system, len(errs), mae, worst))


def dtype_of(row):
    """The row's 16-bit compute dtype: as its precision says, else fp16 on GPUs before bf16
    (Volta, Turing), bf16 on the others."""
    p = row["precision"].lower()
    if "bf16" in p or "bfloat16" in p:
        return "bf16"
    if "fp16" in p or "float16" in p or "half" in p or "amp" in p.split():
        return "fp16"
    return "fp16" if re.search(r"V100|T4\b|P100|RTX 20|Titan RTX", row["gpu_model"]) else "bf16"


def autocast(row):
    """Whether the row trains in PyTorch's automatic mixed precision (fp32 weights, autocast's
    16-bit GEMMs): AMP named under plain data parallelism, where no strategy manages 16-bit
    weights of its own (DeepSpeed's and Colossal-AI's do under Lightning's precision=16)."""
    return re.search(r"\bamp\b", row["precision"], re.IGNORECASE) is not None and \
        "DDP" in row["policy_config"]


def optimizer_impl_of(row):
    """How the row's optimizer steps on the GPU: DeepSpeed's ZeRO keeping its optimizer state on
    the GPU steps its partition its own way (fp64 norms, the gradients cast to fp32 and the
    weights cast back around FusedAdam: `deepspeed`); PyTorch's own Adam or AdamW named without
    fused=True steps tensor by tensor before torch 2.0 (March 2023: its default then, the
    for-loop) and many tensors a launch from it (foreach); every other optimizer the rows name
    (FusedAdam, HybridAdam) is fused, and so are rows that do not say."""
    impl = row["optimizer_impl"]
    if deepspeed(row) and \
            row["optimizer_state_and_master_location"].strip().upper().startswith("GPU"):
        return "deepspeed"
    if not re.match(r"\s*torch\.optim\.Adam(W)?\b", impl) or "fused" in impl.lower():
        return "fused"
    date = re.match(r"\s*(\d{4})-(\d{2})", row["source_date"] or "")
    before_2 = date is not None and (int(date.group(1)), int(date.group(2))) < (2023, 3)
    return "for-loop" if before_2 else "foreach"


# PyTorch Lightning's DeepSpeedStrategy writes its own ZeRO configuration (its constructor's
# defaults), not DeepSpeed's: reduce_bucket_size 2e8 (DeepSpeed's 5e8), sub_group_size 1e12
# (DeepSpeed's 1e9: the step casts a rank's whole partition's gradients to fp32 at once)
LIGHTNING_ZERO = (("reduce_bucket_size", 200000000), ("sub_group_size", 1000000000000))


def lightning(row):
    """Whether the row's loop ran under PyTorch Lightning (its strategy configuring the system)."""
    return re.search(r"\bLightning\b", " ".join((row["precision"], row["source_doc"],
                                                row["system"]))) is not None


def zero_buffers_of(row):
    """`synth --reduce-bucket-size N --sub-group-size N` where the row's step is DeepSpeed's on
    the GPU (`optimizer_impl_of`), sizing the buffers it holds beside the model: the sizes its
    policy_config states, else Lightning's DeepSpeedStrategy's where it ran under Lightning,
    else none (DeepSpeed's defaults, 5e8 and 1e9)."""
    if optimizer_impl_of(row) != "deepspeed":
        return []
    sizes = dict(LIGHTNING_ZERO) if lightning(row) else {}
    stated = {}
    for key in ("reduce_bucket_size", "sub_group_size"):
        m = re.search(key + r"[\s=:]*(\d+(?:\.\d+)?(?:e\d+)?)\b", row["policy_config"])
        if m:
            stated[key] = sizes[key] = int(float(m.group(1)))
    e = lambda n: ("%.0e" % n).replace("e+0", "e").replace("e+", "e")  # 2e8, 1e12
    said = ", ".join("%s %s" % (key, e(sizes[key])) for key in sorted(sizes))
    if sizes:
        assume(row, ("DeepSpeed's %s (its configuration)" if len(stated) == len(sizes)
                     else "Lightning's DeepSpeedStrategy: %s") % said)
    return [x for key in ("reduce_bucket_size", "sub_group_size") if key in sizes
            for x in ("--" + key.replace("_", "-"), str(sizes[key]))]


def init_of(row):
    """`synth --init` for the row: how each rank built its model before training it. Lightning's
    ColossalAIStrategy builds it under ColossalAI's ColoInitContext, whose device is the CPU and
    dtype fp32 by default (ColossalAI 0.1.x): each rank holds the whole model in fp32 on the host
    before it is chunked (`host-fp32`, said in the row). Else `sharded`, the default: DeepSpeed's
    zero.Init and ColossalAI's own examples (ColoInitContext on the GPU in 16 bits, sharded as it
    goes) never hold it whole, and the other sources do not say."""
    if lightning(row) and "colossalai" in row["system"].lower():
        assume(row, "Lightning's ColossalAIStrategy: each rank builds the model in fp32 on the host")
        return "host-fp32"
    return "sharded"


def collectives_of(row):
    """Whether the row's collectives hold the compute stream, as `synth --collectives` takes
    it: DeepSpeed's ZeRO at stage 1 or 2 (ZeRO-Offload's is 2) reduces the gradients on the
    current stream unless `overlap_comm` is on, which is off by default there, and gathers the
    updated partitions inside step() (`blocking`); at stage 3 `overlap_comm` is on by default
    and the gathers are prefetched on a stream of their own, as every other system's
    (`overlapped`)."""
    if not deepspeed(row):
        return "overlapped"
    text = row["system"] + " " + row["policy_config"]
    m = re.search(r"ZeRO[- ]?([123])\b|stage[ _=:]*([123])\b", text, re.IGNORECASE)
    stage = int(m.group(1) or m.group(2)) if m else (2 if "ZeRO-Offload" in text else 3)
    on = re.search(r"overlap_comm\b(?!\s*[=:]?\s*(false|off|no)\b)", text, re.IGNORECASE)
    return "blocking" if stage <= 2 and not on else "overlapped"


def loss_of(row):
    """`synth --loss` for the row: chunked where its system computes the loss over pieces of
    tokens (MegaTrain); native where nn.CrossEntropyLoss runs on a 16-bit model's logits as they
    are, without autocast: Hugging Face's GPT2LMHeadModel before transformers 4.46 (October 2024,
    whose loss function casts the logits to fp32 first) and the ColossalAI example built on it;
    else full, the cross-entropy in fp32 (Llama's and the others' logits.float(), Megatron's
    output.float(), autocast's fp32 log_softmax)."""
    if chunked_loss(row):
        return "chunked"
    date = re.match(r"\s*(\d{4})-(\d{2})", row["source_date"] or "")
    before = date is not None and (int(date.group(1)), int(date.group(2))) < (2024, 10)
    sixteen = dtype_of(row) in ("fp16", "bf16") and not autocast(row)
    if "GPT2LMHeadModel" in row["arch_type"] and before and sixteen:
        return "native"
    return "full"


def chunked_loss(row):
    """Whether the row's system computes its loss over pieces of tokens, never all the logits at
    once (MegaTrain does)."""
    return "resident in CPU RAM" in row["policy_config"]


def gradients_on_host(row):
    """How the row's loop accumulates gradients on the host, as `synth --gradients` takes it,
    or None: where its gradients are on the CPU, not in chunks of their own (Gemini's), and it
    runs several micro-steps a step (with one, the gradients leave the device once, as the
    chunks' evictions take them). DeepSpeed brings the host's sum back and adds on the GPU
    (host-via-device); FSDP, and a system the row does not name, adds on the host (host)."""
    where = row.get("grads_location", "").strip().lower()
    if not where.startswith("cpu") or "chunk" in where or whole(row, "grad_accum_steps", 1) < 2:
        return None
    system = row.get("system", "")
    return "host-via-device" if "DeepSpeed" in system and "FSDP" not in system else "host"


def forward_backward_only(row):
    """Whether the row times forward and backward only, not the optimizer step."""
    return row["metric"].startswith("Step time (forward+backward only)")


def attention_of(row):
    """The row's attention kernel: fused ("flash") where its configuration says flash or SDPA,
    or in bf16 from 2024 on (Hugging Face's models run PyTorch's SDPA by default since
    transformers 4.36, December 2023); Hugging Face's eager attention ("naive", the scores
    materialized) before, and in fp16 rows that do not say."""
    if re.search(r"flash|sdpa|scaled_dot_product", row["policy_config"], re.IGNORECASE):
        return "flash"
    year = re.match(r"\s*(\d{4})", row["source_date"] or "")
    recent = year is not None and int(year.group(1)) >= 2024
    return "flash" if dtype_of(row) == "bf16" and recent else "naive"


def checkpointing_of(row):
    """Whether the row recomputes activations: True, False, or None where the source does not
    say."""
    ckpt = row["activation_checkpointing"].lower()
    if ckpt.startswith(("on", "block")):
        return True
    return None if ckpt.startswith("not stated") else False


def checkpoints_of(row):
    """Where the row keeps its checkpoints (`synth --checkpoints`): "host" where its source
    offloads them, "device" where it does not, None where its sources disagree (DeepSpeed's
    Azure rows: the blog's text has the activations in main memory, the recipe no
    cpu_checkpointing)."""
    off = row["activation_offload"].lower()
    if off.startswith(("yes", "on", "cpu", "host")):
        return "host"
    return None if re.search(r"main memory|host memory|\bcpu\b", off) else "device"


def predict(row, policy, extra, tmp, ckpt=None, where=None):
    """The row's predicted step time in seconds, "OOM" (the plan does not fit), or None; and a
    note. Where the source does not say whether it recomputed activations, without unless only
    recomputing fits (the run did run), said in NOTES; where its sources disagree on where its
    checkpoints waited, on the GPU unless only host memory fits them, said there too."""
    if ckpt is None:
        ckpt = checkpointing_of(row)
        if ckpt is None:
            got, note = predict(row, policy, extra, tmp, False)
            if got != "OOM":
                return got, note
            assume(row, "checkpointing (not stated; without it the plan does not fit)")
            return predict(row, policy, extra, tmp, True)
    if where is None:
        where = checkpoints_of(row) if ckpt else "device"
        if where is None:
            got, note = predict(row, policy, extra, tmp, ckpt, "device")
            if got != "OOM":
                return got, note
            assume(row, "its checkpoints in host memory, as its source's text says (its recipe "
                   "does not; on the GPU the plan does not fit)")
            return predict(row, policy, extra, tmp, ckpt, "host")
    hw = profile_of(row)
    cfg = config_of(row)
    path = os.path.join(tmp, row["row_id"] + ".config.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    trace = os.path.join(tmp, row["row_id"] + ".trace.json")
    dtype = dtype_of(row)
    ckpt = (["--checkpointing"] if ckpt else []) + (["--checkpoints", "host"] if where == "host"
                                                    else [])
    attention = ["--attention", attention_of(row)]
    loss = ["--loss", loss_of(row)] if loss_of(row) != "full" else []
    init = init_of(row)
    loss += ["--amp"] if autocast(row) else []
    accum = whole(row, "grad_accum_steps", 1)  # gradient accumulation: micro-steps a step
    on_host = gradients_on_host(row)
    grads = ["--gradients", on_host] if on_host else []
    if grads:
        assume(row, "each micro-step's gradients to the host" +
               (", added on the GPU" if on_host == "host-via-device" else ""))
    rc, out = run("synth", "--model-config", path, "--batch", row["micro_batch_per_gpu"],
                  "--micro-steps", str(accum), *grads,
                  "--seq", row["seq_len"], "--dtype", dtype, "--hw", hw, *ckpt, *attention,
                  *loss, "--kernels", "fused" if megatron(row) else "eager",
                  "--optimizer-impl", optimizer_impl_of(row), *zero_buffers_of(row),
                  *(["--init", init] if init != "sharded" else []),
                  "--collectives", collectives_of(row), "-o", trace)
    if rc != 0:
        return None, failed("synth", out)
    gpu_mem = gpu_budget(row, hw)
    # several nodes: --gpus a node's, --nodes theirs; the row's host memory is a node's
    nodes = whole(row, "n_nodes", 1)
    gpus = ["--gpus", str(whole(row, "n_gpus") // nodes)] + (["--nodes", str(nodes)] if nodes > 1
                                                            else [])
    host = gib(row["host_mem_GB"])
    cpu = ["--cpu", "%dGB" % (host * nodes)] if host else []
    if policy == "unlimited" and forward_backward_only(row):
        return None, "forward and backward only, with unlimited memory: not simulated apart"
    if policy == "ddp":  # compare's baseline: its time, and its GPU peak for the peak table
        rc, out = run("compare", trace, "--gpu", gpu_mem, *gpus, "--hw", hw, *cpu, "--json")
        try:
            ddp = json.loads(out)["ddp"]
        except (ValueError, KeyError):
            return None, failed("compare", out)
        if "peak_gpu_bytes" in ddp:
            PEAKS[row["row_id"]] = ddp["peak_gpu_bytes"]
        if not ddp["feasible"]:
            return "OOM", ddp["why"]
        # to backward's end, which waits for the last buckets' all-reduce
        key = "backward_end_ns" if forward_backward_only(row) else "iteration_ns"
        return ddp[key] / 1e9, None
    if policy == "unlimited":
        rc, out = run("compare", trace, "--gpu", gpu_mem, *gpus, "--hw", hw, *cpu)
        m = re.search(r"unlimited memory: ([\d.]+) (ns|us|ms|s) per iteration", out)
        if not m:
            return None, failed("compare", out)
        return seconds(m.group(1), m.group(2)), None
    if policy == "gemini-const":  # the const boundary's share of the model data
        m = re.search(r"const_memory_boundary=(\d+)\*1024 MB", row["policy_config"])
        n = number(row, "params_total_B_computed") * 1e9
        share = min(1.0, int(m.group(1)) * 2 ** 30 / (n * 16 / whole(row, "n_gpus"))) if m else 0.5
        policy, extra = "gemini-static", ["--gemini-fraction", "%.3f" % share]
    plan = os.path.join(tmp, row["row_id"] + ".plan.json")
    rc, out = run("plan", trace, "--gpu", gpu_mem, *gpus, "--hw", hw, "--policy",
                  policy, *extra, *layout_of(row, policy, extra), *cpu, "-o", plan)
    if rc != 0 and re.search(r"cannot fit|no plan fits|more than the CPU budget", out):
        return "OOM", out.strip().splitlines()[-1]
    if rc != 0:
        return None, failed("plan", out)
    m = re.search(r"iteration +([\d.]+) (ns|us|ms|s) simulated", out)
    peak = re.search(r"GPU peak +([\d.]+) (B|KiB|MiB|GiB|TiB) of", out)
    if peak:
        PEAKS[row["row_id"]] = float(peak.group(1)) * 1024 ** ["B", "KiB", "MiB", "GiB",
                                                               "TiB"].index(peak.group(2))
    if forward_backward_only(row):  # the end of the last backward op, the step not counted
        rc, out = run("simulate", plan, trace, "--json")
        if rc != 0:
            return None, failed("simulate", out)
        ops = json.loads(out)["ops"]
        return max(op["end_ns"] for op in ops if not op["name"].startswith("adam.")) / 1e9, None
    return seconds(m.group(1), m.group(2)), None


def fit_said(row, got, note):
    """What the run and the plan say about fitting, in words: the plan's GPU peak against its
    budget where it fits, the planner's reason where it does not (its first sentence)."""
    ran = "ran out of GPU memory" if row["metric"] == "OOM" else "ran"
    if row["peak_gpu_mem_measured"]:
        ran += " (its GPU memory as published: %s)" % row["peak_gpu_mem_measured"][:48]
    if got != "OOM":
        budget = int(gpu_budget(row, profile_of(row)))
        return "%s; the plan fits, its GPU peak %.2f GiB of %.2f GiB" % (
            ran, PEAKS.get(row["row_id"], 0) / 2 ** 30, budget / 2 ** 30)
    why = re.sub(r"^stowage: ", "", (note or "").strip()).split(". ")[0].rstrip(".")
    return "%s; %s" % (ran, why)


FITS = []  # rows of a run that did or did not fit: (row id, what the run and the plan say)
PEAKS = {}  # row -> the plan's predicted GPU peak, bytes
RATES = []  # rows that publish a rate: (row id, system, published, its unit, predicted)
NOTES = {}  # row -> what its replay assumed where the source is silent


def assume(row, text):
    """Says, in the row's line, TEXT beside what its replay already assumed (once)."""
    said = NOTES.get(row["row_id"])
    if said is None:
        NOTES[row["row_id"]] = text
    elif text not in said.split("; "):
        NOTES[row["row_id"]] = said + "; " + text
LARGEST = []  # capacity rows: (row, layers, parameters in billions, zoo sizes, verdict)


def gpt2_params(layers, h, vocab, positions):
    """GPT-2's parameters (tied head): L (12 h^2 + 13 h) + V h + P h + 2 h."""
    return layers * (12 * h * h + 13 * h) + vocab * h + positions * h + 2 * h


def row_gpt2_billions(row, layers):
    """A GPT-2 row's parameters in billions with LAYERS layers at its width."""
    return gpt2_params(layers, whole(row, "hidden_size"), whole(row, "vocab_size"),
                       max(whole(row, "seq_len"), 1024)) / 1e9


def most_layers(row, policy, extra, tmp):
    """The most layers at a GPT-2 row's width (its hidden size, heads, vocabulary, batch and
    sequence) whose plan fits, bisected, and their parameters in billions; or why there is no
    answer (a string)."""
    def fits(layers):
        r = dict(row, n_layers=str(layers), metric="Step time")
        return isinstance(predict(r, policy, extra, tmp)[0], float)

    lo, hi = 0, 1
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > 4096:
            return "more than 4096 layers fit: no capacity to compare"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, row_gpt2_billions(row, lo)


def largest(row, policy, extra, tmp):
    """A capacity row ("the largest model of the benchmark's zoo that ran"): the most layers at
    the row's width whose plan fits, bisected, set against the zoo's sizes in the row's own
    definition (LARGEST); or why it is not replayed."""
    zoo = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)B", row["metric_definition"])]
    got = number(row, "value")
    if config_of(row) is None or config_of(row)["model_type"] != "gpt2" or got not in zoo:
        return "a largest-model row of a zoo this bench cannot rebuild (%s)" % (
            row["metric_definition"][:50])
    most = most_layers(row, policy, extra, tmp)
    if isinstance(most, str):
        return most
    lo, billions = most
    i = zoo.index(got)
    nxt = zoo[i + 1] if i + 1 < len(zoo) else float("inf")
    if got <= billions < nxt:
        verdict = "agrees"
    elif zoo[max(i - 1, 0)] <= billions < (zoo[i + 2] if i + 2 < len(zoo) else float("inf")):
        verdict = "within one step"
    else:
        verdict = "disagrees"
    LARGEST.append((row, lo, billions, zoo, verdict))
    return None


def published_peak(row):
    """The row's published peak GPU memory in bytes where it is PyTorch's max_memory_allocated
    (what stowage's GPU peak counts: tensors, not the allocator's cache or the CUDA context)."""
    m = re.match(r"([\d.]+) MB \(MB = torch.cuda.max_memory_allocated",
                 row["peak_gpu_mem_measured"])
    return float(m.group(1)) * 2 ** 20 if m else None


def replay(row, tmp, errors, skipped):
    """Row ROW replayed: its line printed and its error added to ERRORS (by system), or the
    reason it is not replayed added to SKIPPED."""
    rid = row["row_id"]
    for field in ("n_gpus", "micro_batch_per_gpu", "seq_len"):
        whole(row, field)  # ValueError: said in the list of rows not replayed
    why, moe = None, experts_of(row)
    if whole(row, "n_gpus") % whole(row, "n_nodes", 1) != 0:
        why = "%s GPUs over %s nodes: not as many on each" % (row["n_gpus"], row["n_nodes"])
    elif profile_of(row) is None:
        why = "no profile of its GPU (%s)" % row["gpu_model"][:40]
    elif isinstance(moe, str):
        why = moe
    elif not row["n_layers"] or not row["n_heads"]:
        why = "the row does not give its blocks and heads (%s)" % row["arch_type"][:40]
    elif config_of(row) is None:
        why = "an architecture this bench does not build (%s)" % row["arch_type"][:40]
    emu, reason = (None, why) if why else emulation(row)
    if emu is None:
        skipped.append((rid, reason))
        return
    if moe is not None and moe[2]:
        assume(row, moe[2])
    policy, extra = emu
    oom = row["metric"] == "OOM"
    want = None if oom else published_step_s(row)
    if want is None and not oom and row["metric"].startswith("Max model size"):
        note = largest(row, policy, extra, tmp)
        if note is not None:
            skipped.append((rid, note))
        return
    if want is None and not oom and unit_kind(row["unit"]) == "flops":
        skipped.append((rid, "TFLOPS by a formula this bench does not read (%s)"
                        % row["metric_definition"][:60]))
        return
    if want is None and not oom and unit_kind(row["unit"]) is None and \
            re.match(r"(step time|throughput|time per)", row["metric"], re.IGNORECASE):
        skipped.append((rid, "a %s in a unit this bench does not read (%s)" % (
            row["metric"][:40], row["unit"][:40])))
        return
    if want is None and not oom:
        skipped.append((rid, "a %s figure (%s), not a step time" % (row["metric"],
                                                                  row["unit"])))
        return
    got, note = predict(row, policy, extra, tmp)
    label = "%s%s on %s%s%s%s%s%s" % (
        policy, emulated_options(row, policy, extra), profile_of(row),
        ", chunked loss" if chunked_loss(row) else "",
        ", its loss in %s" % dtype_of(row) if loss_of(row) == "native" else "",
        ", AMP" if autocast(row) else "",
        ", " + NOTES[rid] if rid in NOTES else "",
        ", to the end of backward" if forward_backward_only(row) else "")
    what = "%s x %s" % (row["n_gpus"], row["micro_batch_per_gpu"])
    system = row["system_family"]
    m = re.search(r"smallest budget any plan can use is ([\d.]+) (GiB|TiB)", note or "")
    if got == "OOM" and not oom and whole(row, "n_gpus") > 1 and m and \
            float(m.group(1)) * (1024 if m.group(2) == "TiB" else 1) > gib(row["gpu_mem_GB"]):
        # a run that ran, where no budget of its GPU's size plans: the gathers of its layout
        skipped.append((rid, ("each chunk, at least the largest tensor, split across %s GPUs"
                              if layout_of(row, policy, extra) else
                              "a chunk group of %s GPUs is gathered whole, each chunk at least "
                              "the largest tensor") % row["n_gpus"] +
                        ": no plan fits below %s %s a GPU" % (m.group(1), m.group(2))))
        return
    if got is None:  # the row's files by their names, not the temporary directory's
        skipped.append((rid, note.replace(tmp + os.sep, "")))
        return
    if oom or got == "OOM":
        verdict = ("agrees" if (got == "OOM") == oom else "disagrees")
        said = fit_said(row, got, note)
        if config_of(row) is not None and config_of(row)["model_type"] == "gpt2" and \
                whole(row, "n_nodes", 1) == 1:  # how far the plan's capacity is from the run
            most = most_layers(row, policy, extra, tmp)
            if not isinstance(most, str):
                said += "; at its width the most that fits is %.1fB (%d layers), the row's " \
                        "%.1fB (%s)" % (most[1], most[0],
                                        row_gpt2_billions(row, whole(row, "n_layers")),
                                        row["n_layers"])
        FITS.append((rid, said))
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            rid, system, row["model_name"][:24], what, label,
            "OOM" if oom else "%.3f s" % want,
            "does not fit" if got == "OOM" else "%.3f s" % got, verdict))
        return
    err = 100.0 * (got - want) / want
    errors.setdefault(system, []).append(err)
    if is_rate(row["unit"]):  # the row's own figure, a rate: inversely as the step's time
        RATES.append((rid, system, float(row["value"]), row["unit"],
                      float(row["value"]) * want / got))
    print("| %s | %s | %s | %s | %s | %.3f s | %.3f s | %+.1f%% |" % (
        rid, system, row["model_name"][:24], what, label, want, got, err))


def main():
    path = os.path.join(DATA, "measurements.csv")
    if not os.path.isfile(path):
        sys.exit("published.py: %s: no such file (the published set: ../shared/data/published)"
                 % path)
    if not os.access(STOWAGE, os.X_OK):
        sys.exit("published.py: %s: no stowage binary (build it, or name its build directory)"
                 % STOWAGE)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except UnicodeDecodeError as e:
        sys.exit("published.py: %s: not UTF-8 text (%s)" % (path, e))
    except (OSError, csv.Error) as e:
        sys.exit("published.py: %s: %s" % (path, e))
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        sys.exit("published.py: %s: no column %s (the published set's columns: its README)"
                 % (path, ", ".join(missing)))
    # a row of more or fewer fields than the header: listed, not read
    def fields(r):
        return sum(1 for k, v in r.items() if k is not None and v is not None) + \
            len(r.get(None) or [])
    ragged = [(r.get("row_id") or "line %d" % (i + 2), "%d fields where the header has %d" % (
        fields(r), len(header))) for i, r in enumerate(rows) if fields(r) != len(header)]
    if ROWS is not None:
        known = [r.get("row_id", "") for r in rows]
        unknown = [r for r in ROWS if r not in known]
        if not ROWS:
            sys.exit("published.py: --rows: no row_id given")
        if unknown:
            sys.exit("published.py: --rows: %s not a row_id of %s" % (", ".join(unknown), path))
        rows = [r for r in rows if r.get("row_id", "") in ROWS]
        ragged = [x for x in ragged if x[0] in ROWS]
    rows = [r for r in rows if fields(r) == len(header)]
    print("| row | system | model | GPUs x batch | emulated as | published | predicted | error |")
    print("|---|---|---|---|---|---:|---:|---:|")
    errors, skipped = {}, list(ragged)
    if KEEP is not None:
        try:
            os.makedirs(KEEP, exist_ok=True)
        except OSError as e:
            sys.exit("published.py: --keep %s: %s" % (KEEP, e.strerror))
    with (contextlib.nullcontext(os.path.abspath(KEEP)) if KEEP is not None
          else tempfile.TemporaryDirectory()) as tmp:
        for row in rows:
            try:
                replay(row, tmp, errors, skipped)
            except (ValueError, KeyError, ZeroDivisionError, OverflowError, TypeError,
                    IndexError, AttributeError) as e:  # a row's, said; the others go on
                skipped.append((row.get("row_id", "?"), "a field this bench cannot read (%s: %s)"
                                % (type(e).__name__, e)))
    print()
    summary(errors, "")
    if RATES:
        print()
        print("Throughput where the row publishes a rate, in its own unit (the prediction: the "
              "published rate times the published step time over the simulated one, by the "
              "row's own formula):")
        print()
        print("| row | system | published | predicted | error |")
        print("|---|---|---:|---:|---:|")
        rate_errors = {}
        for rid, system, want, unit, got in RATES:
            err = 100.0 * (got - want) / want
            rate_errors.setdefault(system, []).append(err)
            print("| %s | %s | %.2f %s | %.2f %s | %+.1f%% |" % (rid, system, want, unit, got,
                                                             unit, err))
        print()
        summary(rate_errors, " of the rate")
    print()
    print("Peak GPU memory where the row publishes PyTorch's `max_memory_allocated` (rank 0), "
          "against the plan's GPU peak (chunks and activations; DDP's: the whole model, "
          "activations and the gradients' copy in its buckets):")
    print()
    print("| row | system | published | predicted | error |")
    print("|---|---|---:|---:|---:|")
    peak_errors = {}
    for row in rows:
        want = published_peak(row)
        if want is None or row["metric"].startswith("Max model size"):
            continue  # a capacity row repeats its step-time row's run
        got = PEAKS.get(row["row_id"])
        if got is None:
            print("| %s | %s | %.2f GiB | - | not replayed |" % (
                row["row_id"], row["system_family"], want / 2 ** 30))
            continue
        err = 100.0 * (got - want) / want
        peak_errors.setdefault(row["system_family"], []).append(err)
        print("| %s | %s | %.2f GiB | %.2f GiB | %+.1f%% |" % (
            row["row_id"], row["system_family"], want / 2 ** 30, got / 2 ** 30, err))
    if peak_errors:
        print()
        summary(peak_errors, " of the peak")
    if LARGEST:
        print()
        print("The largest model that fits, where the row is the largest of a zoo that ran (the "
              "most layers at the row's width whose plan fits, against the zoo's sizes):")
        print()
        print("| row | system | emulated as | published (zoo) | predicted | verdict |")
        print("|---|---|---|---|---:|---|")
        for row, layers, billions, zoo, verdict in LARGEST:
            emu = emulation(row)[0]
            print("| %s | %s | %s on %s | %gB (of %s) | %.1fB (%d layers) | %s |" % (
                row["row_id"], row["system_family"],
                emu[0] + emulated_options(row, emu[0], emu[1]), profile_of(row),
                number(row, "value"), ", ".join("%g" % z for z in zoo), billions, layers,
                verdict))
    if FITS:
        print()
        print("Whether it fits, where the row ran out of memory or the plan does not fit:")
        print()
        for rid, said in FITS:
            print("- %s: %s" % (rid, said))
    print()
    print("Not replayed:")
    print()
    for rid, reason in skipped:
        print("- %s: %s" % (rid, reason))


if __name__ == "__main__":
    main()
