"""Images through a vision-language model's tower (`stowage synth --images`) against transformers'
own modules: the same small config.json of every family stowage runs images through, built by
transformers with random weights, its images' features computed (`get_image_features`) under
torch's FlopCounterMode, and synthesized by stowage: the FLOPs of the tower's and the
projector's matmuls and attention must be equal (norms, which torch does not count, left out).
Skips without transformers."""
import json
import os
import subprocess
import tempfile
import unittest

import test_hf_configs as hf

STOWAGE = os.environ.get("STOWAGE")

try:
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode
except ImportError as e:
    torch = transformers = None
    WHY = str(e)

# families whose towers take images of any size (their side a whole number of merged patches)
ANY_SIZE = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "glm4v", "glm4v_moe",
            "mistral3")
# the kinds of test_hf_configs whose variants hold the multimodal files
KINDS = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma3_text", "glm4",
         "glm4_moe", "cohere2")
# files whose images go elsewhere than stowage models them: LLaVA-NeXT's and OneVision's
# processors cut an image into tiles by grid pinpoints (each tile is an image to stowage),
# Llama 3.2 Vision's reach its language model by cross-attention (refused)
TILED_OR_REFUSED = ("llava_next", "llava_onevision", "mllama")
IMAGES = 2


def cases():
    """(what, config) of the multimodal files of test_hf_configs that transformers builds."""
    out = []
    for kind in KINDS:
        for what, c in hf.variants(kind):
            c = json.loads(c) if isinstance(c, str) else c
            t = c.get("model_type")
            if t not in hf.IMAGE_TEXT + ("gemma3",) or t in TILED_OR_REFUSED:
                continue
            if "defaults" in what or "null" in what:  # full-size towers: slow on a CPU
                continue
            vision = c.get("vision_config") or {}
            if t == "llava" and vision.get("model_type") in ("pixtral", "siglip_vision_model"):
                # LLaVA's "default" strategy drops the first token, a class token where CLIP
                # has one; Pixtral's and SigLIP's checkpoints say "full" (stowage's model)
                c = dict(c, vision_feature_select_strategy="full")
            out.append(("%s: %s" % (kind, what), c))
    out.append(("qwen2_5_vl windows of 16 pixels, blocks 1 and 7 whole",
                dict(next(c for w, c in out if w == "qwen2: a qwen2_5_vl file"),
                     vision_config={"depth": 3, "hidden_size": 32, "intermediate_size": 40,
                                    "out_hidden_size": 64, "num_heads": 2, "patch_size": 4,
                                    "window_size": 16, "fullatt_block_indexes": [1, 7]})))
    return out


def side(c, cfg):
    """The image side a test gives: a fixed tower's own, else 3 merged patches."""
    vc = cfg.vision_config
    if c["model_type"] in ANY_SIZE or getattr(vc, "model_type", "") == "pixtral":
        merge = 1 if c["model_type"] == "llava" else (
            getattr(vc, "spatial_merge_size", None) or getattr(cfg, "spatial_merge_size", 2))
        return vc.patch_size * merge * 3, True
    size = vc.image_size
    return (size if isinstance(size, int) else size[0]), False


def torch_flops(path, images):
    """FLOPs of transformers' get_image_features over IMAGES images, and the side given."""
    cfg = transformers.AutoConfig.from_pretrained(os.path.dirname(path))
    for sub in (cfg, cfg.vision_config, getattr(cfg, "text_config", None)):
        if sub is not None:
            sub._attn_implementation = "eager"
    with open(path) as f:
        px, any_size = side(json.load(f), cfg)
    model = transformers.AutoModelForImageTextToText.from_config(cfg).eval().model
    vc, t = cfg.vision_config, cfg.model_type
    channels = getattr(vc, "num_channels", None) or getattr(vc, "in_channels", 3)
    kw = {}
    if t in ANY_SIZE and t != "mistral3":  # flattened patches and their grids
        p, frames, n = vc.patch_size, vc.temporal_patch_size, px // vc.patch_size
        pixels = torch.randn(images * n * n, channels * frames * p * p)
        kw["image_grid_thw"] = torch.tensor([[1, n, n]] * images)
    else:
        pixels = torch.randn(images, channels, px, px)
        if any_size:  # Pixtral's
            kw["image_sizes"] = torch.tensor([[px, px]] * images)
        if t in ("idefics3", "smolvlm"):  # a batch of images per sequence
            pixels = pixels.unsqueeze(0)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.get_image_features(pixel_values=pixels, **kw)
    return counter.get_total_flops(), (px if any_size else None)


def stowage_flops(path, images, px):
    """FLOPs of the image ops of `stowage synth --images`, but their norms'."""
    out = path + ".trace.json"
    cmd = [STOWAGE, "synth", "--model-config", path, "--images", str(images), "--kernels",
           "fused", "-o", out]
    if px:
        cmd += ["--image-size", str(px)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    with open(out) as f:
        trace = json.load(f)
    flops = 0
    for op in trace["ops"]:
        if op["stage"] != "fwd":
            continue
        name = op["name"]
        if name.split(".")[0] not in ("vision_tower", "visual", "vision_model",
                                      "multi_modal_projector", "connector"):
            continue
        last = name.split(".")[-1]
        if "norm" not in last and not last.startswith("ln"):
            flops += op.get("flops", 0)
    return flops, None


def check(item):
    what, c = item
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.json")
        with open(path, "w") as f:
            json.dump(c, f)
        try:
            want, px = torch_flops(path, IMAGES)
        except Exception as e:  # noqa: BLE001 (a config transformers cannot run either)
            return what, None, "transformers: %s" % e
        got, why = stowage_flops(path, IMAGES, px)
        return what, (want, got), why


@unittest.skipIf(transformers is None, "transformers is not installed: %s"
                 % (None if transformers else WHY))
@unittest.skipIf(not STOWAGE, "STOWAGE (the built stowage) is not set")
class TestImages(unittest.TestCase):
    def test_image_flops_as_transformers_computes_them(self):
        # one process: a fork after torch has computed (another test's) can hang its workers
        items = cases()
        found = [check(item) for item in items]
        same = [w for w, f, _ in found if f is not None and f[0] == f[1]]
        wrong = ["%s: transformers %s, stowage %s %s" % (w, f[0], f[1], why or "")
                 for w, f, why in found if f is not None and f[0] != f[1]]
        self.assertEqual(wrong, [], "\n".join(wrong))
        # what transformers itself cannot run: feature layers or heads its small towers lack,
        # shuffles of sides the factor does not divide, sizes its own checks refuse
        failed = sorted(w for w, f, _ in found if f is None)
        self.assertEqual(failed, [
            "cohere2: an aya_vision file, alignment 96, downsample 3",
            "cohere2: an aya_vision file, alignment odd",
            'gemma3_text: in a gemma3 file, vision {"model_type": "clip_vision_model"}',
            'gemma3_text: in a gemma3 file, vision {"num_attention_heads": 5}',
            'gemma3_text: in a gemma3 file, vision {"patch_size": 29}',
            "llama: a idefics3 file, scale_factor 3",
            "llama: a llava file, an empty feature list",
            "llama: a llava file, three feature layers",
            "llama: a llava file, vision heads 5",
            "llama: a smolvlm file, scale_factor 3",
            "mistral: a mistral3 file, two feature layers",
            "qwen2: an internvl file, downsample_ratio 0.3"])
        self.assertEqual(len(same), 93)
        self.assertEqual(len(items), 105)
        families = sorted({c["model_type"] for w, c in items if w in same})
        self.assertEqual(families, ["aya_vision", "gemma3", "glm4v", "glm4v_moe", "idefics3",
                                    "internvl", "llava", "mistral3", "paligemma", "qwen2_5_vl",
                                    "qwen2_vl", "qwen3_vl", "qwen3_vl_moe", "smolvlm"])

    def test_a_video_is_its_temporal_patches_as_images(self):
        # a video of F frames through a Qwen-VL tower is F / temporal_patch_size images: each
        # temporal patch of frames attends on its own (transformers' cu_seqlens a grid_t slice),
        # so `synth --images F/2` is its cost
        frames = 6
        checked = 0
        for what, c in cases():
            if c["model_type"] not in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl") or "file," in what:
                continue
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "config.json")
                with open(path, "w") as f:
                    json.dump(c, f)
                cfg = transformers.AutoConfig.from_pretrained(d)
                for sub in (cfg, cfg.vision_config, getattr(cfg, "text_config", None)):
                    if sub is not None:
                        sub._attn_implementation = "eager"
                model = transformers.AutoModelForImageTextToText.from_config(cfg).eval().model
                vc = cfg.vision_config
                p, t, n = vc.patch_size, vc.temporal_patch_size, vc.spatial_merge_size * 3
                pixels = torch.randn((frames // t) * n * n, 3 * t * p * p)
                with torch.no_grad(), FlopCounterMode(display=False) as counter:
                    model.get_video_features(pixel_values_videos=pixels,
                                             video_grid_thw=torch.tensor([[frames // t, n, n]]))
                got, why = stowage_flops(path, frames // t, n * p)
                self.assertEqual(got, counter.get_total_flops(), (what, why))
                checked += 1
        self.assertEqual(checked, 4)

    def test_python_synth_gives_the_cli_trace(self):
        import stowage
        c = next(c for w, c in cases() if w == "qwen2: a qwen2_5_vl file")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "config.json")
            with open(path, "w") as f:
                json.dump(c, f)
            t = stowage.synth(model_config=path, images=1, image_size=24, seq=32,
                              vision_trained="projector")
            cli = os.path.join(d, "cli.json")
            subprocess.run([STOWAGE, "synth", "--model-config", path, "--images", "1",
                            "--image-size", "24", "--seq", "32", "--vision-trained",
                            "projector", "-o", cli], check=True, capture_output=True)
            with open(cli) as f:
                want = json.load(f)
            got = t.json()
            for j in (want, got):
                j["source"].pop("created", None)
            self.assertEqual(got["model"]["images"], 1)
            self.assertEqual(got["model"]["image_size"], 24)
            self.assertEqual(got, want)
            # the merger trained (its norm, two projections and biases), the tower frozen
            trained = [x["name"] for x in got["tensors"]
                       if x["name"].startswith("visual.") and not x.get("frozen")]
            self.assertEqual(trained, ["visual.merger.ln_q.weight", "visual.merger.mlp.0.weight",
                                       "visual.merger.mlp.0.bias", "visual.merger.mlp.2.weight",
                                       "visual.merger.mlp.2.bias"])
            with self.assertRaisesRegex(stowage.StowageError, "image_size|--image-size"):
                stowage.synth(model_config=path, images=1, seq=32)


if __name__ == "__main__":
    unittest.main()
