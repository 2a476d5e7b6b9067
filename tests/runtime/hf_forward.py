#!/usr/bin/env python3
# An independent float64 reference of the Hugging Face transformers forward pass for Llama,
# Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE, Phi-3, GLM, GLM-4-0414, GLM-4.5
# (Glm4MoeForCausalLM: GQA with DeepSeek-V3's gate and shared experts), dots.llm1
# (Dots1ForCausalLM: Qwen3's attention with the same MoE), OLMo 2 (no input norms, output
# norms, q/k norms over the whole projections), SmolLM3 (its NoPE
# layers), Llama 4 (its text model, in either checkpoint form: interleaved-pair RoPE and
# weightless q/k L2 norms on its RoPE layers, chunked attention, the NoPE layers' query
# temperature, its sigmoid router scaling the experts' inputs, a shared expert), Seed-OSS,
# gpt-oss (attention sinks, biases, its biased router over fused experts in bf16 or MXFP4
# and clamped SwiGLU), Granite MoE (Granite's multipliers, its fused
# output-major experts), Gemma 1, Gemma 2
# (its soft-capping), Gemma 3 (its text model, in either checkpoint form), the text models of
# the vision-language classes (Qwen3-VL-MoE's routed experts read from its fused 3-D
# tensors), InternLM2/3 and
# DeepSeek-V2/V3 (MLA, the modeling
# code's own layout) checkpoints (config.json + safetensors), with transformers' RoPE
# scalings (linear, llama3, yarn, longrope, dynamic; DeepSeek's own yarn), sliding windows,
# vLLM's dual chunk attention (Qwen2.5-1M) and DeepSeek-V3's block-scaled fp8 weights,
# standard library only and sharing nothing with helix; the decode tests compare
# `helix decode` against it.
"""usage: hf_forward.py DIR PROMPT_IDS_FILE STEPS [--json]

DIR holds config.json and either model.safetensors or model.safetensors.index.json plus its
shards. PROMPT_IDS_FILE holds the prompt's token ids, whitespace separated, on one line.
The prompt is fed token by token; T0 is the greedy (argmax, ties to the lowest id) token
after the last prompt token, then T1..T_STEPS follow by feeding T0..T_{STEPS-1}.
Prints one JSON object:
  {"prefill_token": T0, "tokens": [T1, ..., T_STEPS], "min_gap": G, "min_gap_rel": R}
G is the smallest top-1 minus top-2 logit over the STEPS+1 predictions, R that gap over the
largest |logit| of the same prediction. Errors: a one-line message on stderr, exit 2.
--json is accepted for symmetry with `helix decode --json`; the output is JSON either way."""

import argparse
import gc
import json
import math
import operator
import os
import struct
import sys
from array import array
from itertools import repeat

ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM",
                 "Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM",
                 "Qwen3MoeForCausalLM",
                 "Phi3ForCausalLM", "GlmForCausalLM", "Glm4ForCausalLM", "Glm4MoeForCausalLM",
                 "InternLM2ForCausalLM", "InternLM3ForCausalLM", "GraniteForCausalLM",
                 "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
                 "Mistral3ForConditionalGeneration", "LlavaForConditionalGeneration",
                 "LlavaNextForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
                 "InternVLForConditionalGeneration", "Idefics3ForConditionalGeneration",
                 "SmolVLMForConditionalGeneration", "Qwen3VLForConditionalGeneration",
                 "Qwen3VLMoeForConditionalGeneration",
                 "SmolLM3ForCausalLM", "SeedOssForCausalLM", "DeepseekForCausalLM",
                 "GemmaForCausalLM",
                 "Gemma2ForCausalLM",
                 "Gemma3ForCausalLM",
                 "Gemma3ForConditionalGeneration", "DeepseekV2ForCausalLM",
                 "DeepseekV3ForCausalLM", "GptOssForCausalLM", "Dots1ForCausalLM",
                 "GraniteMoeForCausalLM", "Olmo2ForCausalLM", "GraniteMoeSharedForCausalLM",
                 "Olmo3ForCausalLM", "Starcoder2ForCausalLM", "Llama4ForCausalLM",
                 "Llama4ForConditionalGeneration")
GPT_OSS = "GptOssForCausalLM"
GRANITE_MOE = "GraniteMoeForCausalLM"
# Granite MoE Shared (transformers' modeling_granitemoeshared.py): GraniteMoe's layer, plus
# GraniteMoeSharedMLP where shared_intermediate_size (0 when absent) is not 0: one fused
# nn.Linear shared_mlp.input_linear [2 x S, H] whose output's first half is the gate, the
# second the up, then output_linear [H, S]; its output added to the experts' unweighted,
# the sum times residual_multiplier
GRANITE_MOE_SHARED = "GraniteMoeSharedForCausalLM"
GRANITE_MOES = (GRANITE_MOE, GRANITE_MOE_SHARED)
# GptOssConfig's RoPE when config.json gives none
GPT_OSS_YARN = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                "truncate": False, "original_max_position_embeddings": 4096}
# GLM-4 (-hf) and GLM-4-0414: GlmConfig's and Glm4Config's defaults are the same; Glm4 adds
# a norm of the attention's and of the MLP's output before each residual add
GLM = ("GlmForCausalLM", "Glm4ForCausalLM")
DEEPSEEK = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
# dots.llm1 (transformers' modeling_dots1.py): Qwen3's attention (Dots1Attention is
# Qwen3Attention: q/k head norms, rotate_half over whole heads) and DeepSeek-V3's MoE
# (Dots1MoE, Dots1TopkRouter: DeepseekV3MoE's and DeepseekV3TopkRouter's), Dots1Config's
# defaults
DOTS1 = "Dots1ForCausalLM"
QK_NORM = ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma3ForCausalLM", DOTS1)
# OLMo 2 (transformers' modeling_olmo2.py): Olmo2DecoderLayer has no input norms; the
# attention's output goes through post_attention_layernorm and the MLP's through
# post_feedforward_layernorm before each residual add; Olmo2Attention's q_norm and k_norm
# are RMSNorms over the whole q and k projections (num_heads x head_dim, num_kv_heads x
# head_dim) before the heads are split and turned; Olmo2Config's rms_norm_eps 1e-5
OLMO2 = "Olmo2ForCausalLM"
# OLMo 3 (transformers' modeling_olmo3.py, modular_olmo3.py as released in 4.57): OLMo 2's
# layer; Olmo3Config's sliding_window (4096) on the layers layer_types calls
# sliding_attention (by default three in four: (i + 1) % 4 != 0); Olmo3Model's two rotary
# embeddings: the sliding_attention layers turn with the default RoPE at rope_theta, the
# full_attention ones with rope_scaling applied
OLMO3 = "Olmo3ForCausalLM"
OLMOS = (OLMO2, OLMO3)
# StarCoder2 (transformers' modeling_starcoder2.py, configuration_starcoder2.py): nn.LayerNorm
# (weight and bias, eps norm_epsilon 1e-5) for input_layernorm, post_attention_layernorm and
# model.norm; q, k, v, o_proj and the MLP's c_fc and c_proj biased by use_bias (true); the MLP
# c_proj(act(c_fc(x))) with hidden_act gelu_pytorch_tanh, no gate; rotate_half RoPE over whole
# heads; the sliding-window mask on every layer when sliding_window is set (None by default);
# Starcoder2Config ties the head by default (tie_word_embeddings true)
STARCODER2 = "Starcoder2ForCausalLM"
# GLM-4.5, 4.5-Air, 4.6 (transformers' modeling_glm4_moe.py): not GLM-4's layer; its
# rotate_half turns halves (gpt_neox's apply_rotary_pos_emb) over the first
# partial_rotary_factor of each head
GLM4_MOE = "Glm4MoeForCausalLM"
# Llama 4's text model (transformers' modeling_llama4.py, configuration_llama4.py): Llama's
# layer with interleaved-pair RoPE (view_as_complex) on the layers no_rope_layers marks 1,
# a weightless L2 norm of each q and k head after it there (use_qk_norm), chunked attention
# on the chunked_attention layers, a temperature on the NoPE layers' queries; MoE layers
# (Llama4TextMoe: the top num_experts_per_tok router logits, each sigmoid scaling its
# expert's input, fused input-major experts, plus a shared expert) and dense ones of
# intermediate_size_mlp. Llama4ForConditionalGeneration: the same under text_config, the
# tensors under language_model.
LLAMA4 = "Llama4ForCausalLM"
LLAMA4_VLM = "Llama4ForConditionalGeneration"
# Llama4TextConfig's defaults for the keys the shared reading takes (num_key_value_heads 8
# and head_dim 128 are read in Config: null there means the query heads and hidden_size /
# num_attention_heads); max_position_embeddings 4096 x 32 for a llama3 scaling without its
# original_max_position_embeddings
LLAMA4_TEXT = {"hidden_size": 5120, "intermediate_size": 8192, "num_hidden_layers": 48,
               "num_attention_heads": 40, "vocab_size": 202048, "rope_theta": 500000.0,
               "rms_norm_eps": 1e-5, "max_position_embeddings": 4096 * 32}


class Fail(Exception):
    """An error reported as one line on stderr with exit status 2."""


# ---------------------------------------------------------------------------------------------
# safetensors


def read_json(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise Fail(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise Fail(f"{path}: not valid JSON: {e}")


class SafetensorsFile:
    """The header of one .safetensors file; tensors are read from it on demand."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                head = f.read(8)
                if len(head) != 8:
                    raise Fail(f"{path}: shorter than the 8-byte header length")
                (n,) = struct.unpack("<Q", head)
                self.size = os.fstat(f.fileno()).st_size
                if n > self.size - 8:
                    raise Fail(f"{path}: header length {n} runs past the end of the file")
                raw = f.read(n)
        except OSError as e:
            raise Fail(f"{path}: cannot read: {e.strerror}")
        try:
            header = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            raise Fail(f"{path}: header is not valid JSON: {e}")
        if not isinstance(header, dict):
            raise Fail(f"{path}: header is not a JSON object")
        header.pop("__metadata__", None)
        self.tensors = header
        self.data_start = 8 + n

    def read(self, name):
        """(shape, flat array of the values as 'f' or 'd')."""
        t = self.tensors[name]
        try:
            dtype, shape = t["dtype"], list(t["shape"])
            begin, end = t["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise Fail(f"{self.path}: tensor {name}: malformed header entry")
        sizes = {"F32": 4, "F64": 8, "BF16": 2, "F16": 2, "F8_E4M3": 1, "U8": 1}
        if dtype not in sizes:
            raise Fail(f"{self.path}: tensor {name}: dtype {dtype} not supported "
                       f"(F32, BF16, F16, F64, F8_E4M3, U8)")
        count = 1
        for s in shape:
            count *= s
        if end - begin != count * sizes[dtype] or begin < 0 \
                or self.data_start + end > self.size:
            raise Fail(f"{self.path}: tensor {name}: data_offsets [{begin}, {end}] do not "
                       f"hold {dtype} {shape} inside the file")
        with open(self.path, "rb") as f:
            f.seek(self.data_start + begin)
            data = f.read(end - begin)
        big = sys.byteorder == "big"
        if dtype == "F32" or dtype == "F64":
            values = array("f" if dtype == "F32" else "d")
            values.frombytes(data)
            if big:
                values.byteswap()
        elif dtype == "BF16":
            # bf16 is the upper half of an f32: each value's two bytes become the high half
            # of a little-endian f32 whose low half is zero, by slice copies (a Python loop
            # per value took a third of a bf16 checkpoint's forward)
            if big:
                half = array("H")
                half.frombytes(data)
                half.byteswap()
                wide = array("I", [h << 16 for h in half]).tobytes()
            else:
                wide = bytearray(2 * len(data))
                wide[2::4] = data[0::2]
                wide[3::4] = data[1::2]
            values = array("f")
            values.frombytes(wide)
        elif dtype == "F8_E4M3":
            values = array("d", [E4M3[b] for b in data])
        elif dtype == "U8":  # bytes as they are (MXFP4 blocks and scales)
            values = array("B", data)
        else:  # F16
            values = array("d", struct.unpack(f"<{count}e", data))
        return shape, values


def e4m3(b):
    """float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities,
    exponent 15 with mantissa 7 is NaN, exponent 0 subnormal."""
    sign = -1.0 if b & 0x80 else 1.0
    e, m = b >> 3 & 15, b & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return sign * m / 8 * 2.0 ** -6
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


E4M3 = [e4m3(b) for b in range(256)]


def e2m1(c):
    """MXFP4's element (OCP Microscaling FP4 E2M1): sign bit 3, 2 exponent bits (bias 1), 1
    mantissa bit; exponent 0 subnormal."""
    sign = -1.0 if c & 8 else 1.0
    e, m = c >> 1 & 3, c & 1
    return sign * (m / 2 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1))


E2M1 = [e2m1(c) for c in range(16)]


def mxfp4_rows(blocks, scales, rows, n_in):
    """MXFP4 X_blocks [rows][n_in / 32][16] and X_scales [rows][n_in / 32] (flat bytes) as
    rows of n_in floats: byte k of a block holds elements 2k (low nibble) and 2k + 1, times
    the block's 2^(scale - 127)."""
    g = n_in // 32
    out = []
    for r in range(rows):
        row = []
        for b in range(g):
            f = 2.0 ** (scales[r * g + b] - 127)
            for k in range(16):
                byte = blocks[(r * g + b) * 16 + k]
                row += [E2M1[byte & 15] * f, E2M1[byte >> 4] * f]
        out.append(row)
    return out


class Checkpoint:
    """Tensors by name over model.safetensors or the shards of model.safetensors.index.json."""

    def __init__(self, directory):
        self.dir = directory
        self.block = None  # fp8 weights' (rows, cols) per scale (quantization_config)
        index = os.path.join(directory, "model.safetensors.index.json")
        single = os.path.join(directory, "model.safetensors")
        self.files = {}
        self.alias = {}  # a text model's name -> the checkpoint's (unnest)
        if os.path.exists(index):
            self.index = index
            top = read_json(index)
            weight_map = top.get("weight_map") if isinstance(top, dict) else None
            if not isinstance(weight_map, dict):
                raise Fail(f"{index}: no \"weight_map\" object")
            self.where = dict(weight_map)
        elif os.path.exists(single):
            self.index = None
            self.files[single] = SafetensorsFile(single)
            self.where = {name: "model.safetensors" for name in self.files[single].tensors}
        else:
            raise Fail(f"{directory}: neither model.safetensors nor "
                       f"model.safetensors.index.json")

    def unnest(self):
        """A multimodal checkpoint (Gemma3ForConditionalGeneration): its text model's tensors
        are read by their text model's names, whichever prefix transformers saved them
        under (language_model.model. and language_model.lm_head., or model.language_model.,
        Qwen3-VL's; Idefics3's and SmolVLM's model.text_model.); the vision tower's and the
        projector's are not read."""
        for real in list(self.where):
            for pfx, to in (("language_model.model.", "model."),
                            ("language_model.lm_head.", "lm_head."),
                            ("model.language_model.", "model."),
                            ("model.text_model.", "model.")):
                if real.startswith(pfx):
                    self.alias[to + real[len(pfx):]] = real

    def has(self, name):
        return self.alias.get(name, name) in self.where

    def _file(self, name):
        if name not in self.where:
            source = self.index or os.path.join(self.dir, "model.safetensors")
            raise Fail(f"{source}: missing tensor {name}")
        shard = self.where[name]
        if not isinstance(shard, str) or os.path.basename(shard) != shard:
            raise Fail(f"{self.index}: tensor {name}: bad shard name {shard!r}")
        path = os.path.join(self.dir, shard)
        if path not in self.files:
            if not os.path.exists(path):
                raise Fail(f"{path}: missing (named by {self.index} for {name})")
            self.files[path] = SafetensorsFile(path)
        f = self.files[path]
        if name not in f.tensors:
            raise Fail(f"{path}: missing tensor {name} (named by {self.index})")
        return f

    def dtype(self, name):
        """The safetensors dtype of tensor name."""
        name = self.alias.get(name, name)
        return self._file(name).tensors[name].get("dtype")

    def vector(self, name, n):
        """A 1-D tensor of n values as a list of floats."""
        name = self.alias.get(name, name)
        f = self._file(name)
        shape, values = f.read(name)
        if shape != [n]:
            raise Fail(f"{f.path}: tensor {name}: shape {shape}, expected [{n}]")
        return values.tolist()

    def stacked(self, name, shape):
        """A tensor of exactly shape (any rank; not fp8), its values flat in row-major order
        (an array: its slices are rows as matrix gives them)."""
        name = self.alias.get(name, name)
        f = self._file(name)
        got, values = f.read(name)
        if got != list(shape):
            raise Fail(f"{f.path}: tensor {name}: shape {got}, expected {list(shape)}")
        if f.tensors[name].get("dtype") == "F8_E4M3":
            raise Fail(f"{f.path}: tensor {name}: fused F8_E4M3 experts not read here")
        return values

    def matrix(self, name, rows, cols):
        """A [rows][cols] tensor as a list of rows, each an array of its stored values (read
        as floats where used: the same values as a list of floats, in a fraction of the
        memory and without converting the rows no token reads), or for an F8_E4M3 one a list
        of floats, dequantized as DeepSeek-V3's weight_dequant does: each block of block =
        (br, bc) elements times its entry of NAME_scale_inv ([ceil(rows / br)][ceil(cols /
        bc)])."""
        name = self.alias.get(name, name)
        f = self._file(name)
        shape, values = f.read(name)
        if shape != [rows, cols]:
            raise Fail(f"{f.path}: tensor {name}: shape {shape}, expected [{rows}, {cols}]")
        if f.tensors[name].get("dtype") != "F8_E4M3":
            return [values[i * cols:(i + 1) * cols] for i in range(rows)]
        flat = values.tolist()
        out = [flat[i * cols:(i + 1) * cols] for i in range(rows)]
        if self.block is None:
            raise Fail(f"{f.path}: tensor {name}: F8_E4M3 without a quantization_config")
        br, bc = self.block
        scale = self.matrix(name + "_scale_inv", -(-rows // br), -(-cols // bc))
        deq = []
        for i, row in enumerate(out):  # element j of row i times scale[i // br][j // bc]
            new = []
            for b, s in enumerate(scale[i // br]):
                new += map(operator.mul, row[b * bc:(b + 1) * bc], repeat(s))
            deq.append(new)
        return deq


# ---------------------------------------------------------------------------------------------
# config


def top_tie(text, top):
    """A multimodal config's text_config, with the top level's tie_word_embeddings where it
    has none of its own (transformers v5 keeps Qwen2-VL's at the top)."""
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in top:
        text["tie_word_embeddings"] = top["tie_word_embeddings"]
    return text


def v5_rope(c, path):
    """transformers v5 keeps rope_theta, partial_rotary_factor and the scaling kind with its
    parameters in one rope_parameters object; read it back into the older top-level keys
    this reference reads (rope_parameters wins, as in v5)."""
    rp = c.get("rope_parameters")
    if rp is None:
        return c
    if not isinstance(rp, dict):
        raise Fail(f"{path}: key rope_parameters: {rp!r} is not an object")
    c = dict(c)
    rp = dict(rp)
    for key in ("rope_theta", "partial_rotary_factor"):
        if key in rp:
            c[key] = rp.pop(key)
    kind = rp.get("rope_type", rp.get("type", "default"))
    c["rope_scaling"] = None if kind == "default" else rp
    return c


class Config:
    def __init__(self, directory):
        path = os.path.join(directory, "config.json")
        if not os.path.exists(path):
            raise Fail(f"{path}: missing")
        c = read_json(path)
        if not isinstance(c, dict):
            raise Fail(f"{path}: not a JSON object")
        self.path = path
        self.granite = None  # GraniteConfig's multipliers (below)
        c = v5_rope(c, path)
        archs = c.get("architectures")
        if not isinstance(archs, list) or not archs:
            raise Fail(f"{path}: key architectures: missing or empty")
        self.arch = archs[0]
        if self.arch not in ARCHITECTURES:
            raise Fail(f"{path}: key architectures: {self.arch!r} not supported by this "
                       f"reference ({', '.join(ARCHITECTURES)})")
        # Gemma 3 4B and up: a multimodal checkpoint whose text model is read (its own keys
        # under text_config; Gemma3TextConfig's defaults for the ones it leaves out)
        self.nested = self.arch == "Gemma3ForConditionalGeneration"
        if self.nested:
            if not isinstance(c.get("text_config"), dict):
                raise Fail(f"{path}: key text_config: missing or not an object")
            c = v5_rope(dict(c["text_config"]), path)
            self.arch = "Gemma3ForCausalLM"
        # Mistral Small 3.1 (Mistral3ForConditionalGeneration): Mistral's text model under
        # text_config, its tensors as Gemma 3's multimodal ones
        if self.arch == "Mistral3ForConditionalGeneration":
            self.nested = True
            t = c.get("text_config")
            if not isinstance(t, dict) or t.get("model_type", "mistral") != "mistral":
                raise Fail(f"{path}: key text_config: missing, or not Mistral's")
            c = v5_rope(top_tie(dict(t), c), path)
            self.arch = "MistralForCausalLM"
        # LLaVA 1.5, LLaVA-NeXT and LLaVA-OneVision: the text model text_config's model_type
        # names (llama when none, as LlavaConfig), that class's defaults for the keys it
        # leaves out, the tensors as Gemma 3's multimodal ones
        if self.arch in ("LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration",
                         "LlavaOnevisionForConditionalGeneration",
                         "InternVLForConditionalGeneration"):
            self.nested = True
            t = c.get("text_config")
            if not isinstance(t, dict):
                raise Fail(f"{path}: key text_config: missing or not an object")
            classes = {  # LlamaConfig's, MistralConfig's and Qwen2Config's defaults
                "llama": ("LlamaForCausalLM", 11008, 32000),
                "mistral": ("MistralForCausalLM", 14336, 32000),
                "qwen2": ("Qwen2ForCausalLM", 22016, 151936),
                "qwen3": ("Qwen3ForCausalLM", 22016, 151936)}
            mt = t.get("model_type", "llama")
            if mt not in classes:
                raise Fail(f"{path}: key text_config: model_type {mt!r} not read")
            arch, ffn, vocab = classes[mt]
            c = v5_rope(top_tie(dict({"num_hidden_layers": 32, "hidden_size": 4096,
                                      "num_attention_heads": 32, "intermediate_size": ffn,
                                      "vocab_size": vocab}, **t), c), path)
            self.arch = arch
        # Idefics3 and SmolVLM: Llama's text model under text_config (model_type llama when it
        # names none), LlamaConfig's defaults for the keys it leaves out; without any
        # text_config, Idefics3Config's own LlamaConfig (rms_norm_eps 1e-5). The head is tied
        # by text_config's tie_word_embeddings alone (false without it), as vLLM reads it.
        if self.arch in ("Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"):
            self.nested = True
            t = c.get("text_config")
            if t is None:
                t = {"rms_norm_eps": 1e-5}
            if not isinstance(t, dict) or t.get("model_type", "llama") != "llama":
                raise Fail(f"{path}: key text_config: not an object, or not Llama's")
            c = v5_rope(dict({"num_hidden_layers": 32, "hidden_size": 4096,
                              "num_attention_heads": 32, "intermediate_size": 11008,
                              "vocab_size": 32000}, **t), path)
            self.arch = "LlamaForCausalLM"
        # Qwen3-VL: Qwen3's text model under text_config (model_type qwen3_vl_text when it
        # names none), Qwen3VLTextConfig's defaults for the keys it leaves out (head_dim 128
        # and 32 KV heads, not Qwen3's rule; rope_theta 5e6), its tensors under
        # model.language_model.; the head tied by text_config's tie_word_embeddings alone (false
        # without it), as vLLM's Qwen3LLMForCausalLM reads it. Its multimodal RoPE (below,
        # mrope_axis) turns each rotated pair by the time, height or width position.
        # Qwen3-VL-MoE: the same with Qwen3-MoE's layer (Qwen3VLMoeTextDecoderLayer) and
        # Qwen3VLMoeTextConfig's defaults (24 layers of 2048, 16 query and 16 KV heads of
        # hidden_size / heads, FFN 5632, norm_topk_prob true); its routed experts fused in
        # 3-D tensors (Qwen3VLMoeTextExperts), read in Model below.
        self.mrope = None  # (mrope_section, mrope_interleaved)
        self.fused_experts = self.arch == "Qwen3VLMoeForConditionalGeneration"
        if self.arch in ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"):
            self.nested = True
            t = c.get("text_config")
            mt = "qwen3_vl_moe_text" if self.fused_experts else "qwen3_vl_text"
            if not isinstance(t, dict) or t.get("model_type", mt) != mt:
                raise Fail(f"{path}: key text_config: missing, not an object, or not "
                           f"{self.arch}'s ({mt})")
            rs = t.get("rope_parameters", t.get("rope_scaling"))
            if isinstance(rs, dict) and "mrope_section" in rs:
                if rs.get("rope_type", rs.get("type", "default")) not in ("mrope", "default") or \
                        set(rs) - {"type", "rope_type", "mrope_section", "mrope_interleaved",
                                   "rope_theta"}:
                    raise Fail(f"{path}: key text_config: RoPE parameters {rs!r} not supported "
                               f"by this reference (mrope sections alone)")
                self.mrope = (rs["mrope_section"], rs.get("mrope_interleaved") is True)
            if self.fused_experts:
                defaults = {"num_hidden_layers": 24, "hidden_size": 2048,
                            "num_attention_heads": 16, "num_key_value_heads": 16,
                            "intermediate_size": 5632, "vocab_size": 151936,
                            "rope_theta": 5e6, "norm_topk_prob": True}
                defaults["head_dim"] = t.get("hidden_size", 2048) // \
                    t.get("num_attention_heads", 16)
            else:
                defaults = {"num_hidden_layers": 32, "hidden_size": 4096,
                            "num_attention_heads": 32, "num_key_value_heads": 32,
                            "head_dim": 128, "intermediate_size": 22016,
                            "vocab_size": 151936, "rope_theta": 5e6}
            c = v5_rope(dict(defaults, **t), path)
            if self.mrope is not None:
                c["rope_scaling"] = None
            self.arch = "Qwen3MoeForCausalLM" if self.fused_experts else "Qwen3ForCausalLM"
        # Qwen2-VL and Qwen2.5-VL: the text model is Qwen2's (its keys at the top, or under
        # text_config in newer configs; its tensors under model. or model.language_model.).
        # Their multimodal RoPE turns each section of the rotated pairs by the token's time,
        # height or width position, all three a text token's position: plain RoPE.
        if self.arch in ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"):
            self.nested = True
            if isinstance(c.get("text_config"), dict):
                c = v5_rope(top_tie(dict(c["text_config"]), c), path)
            # Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's defaults, not Qwen2Config's
            c = dict({"rope_theta": 1e6, "rms_norm_eps": 1e-5, "max_window_layers": 80}, **c)
            rs = c.get("rope_scaling")
            if isinstance(rs, dict) and "mrope_section" in rs:
                if rs.get("rope_type", rs.get("type")) not in ("mrope", "default") or \
                        set(rs) - {"type", "rope_type", "mrope_section"}:
                    raise Fail(f"{path}: key rope_scaling: {rs!r} not supported by this "
                               f"reference (mrope sections alone)")
                c = dict(c)
                c["rope_scaling"] = None
            self.arch = "Qwen2ForCausalLM"
        # Llama 4: Llama4ForCausalLM's keys flat (model_type llama4_text), or
        # Llama4ForConditionalGeneration's under text_config (model_type llama4, its text
        # model's llama4_text), the tie by text_config's, else the top level's; the
        # defaults of Llama4TextConfig (LLAMA4_TEXT) where a key is absent
        self.llama4 = self.arch in (LLAMA4, LLAMA4_VLM)
        if self.arch == LLAMA4_VLM:
            self.nested = True
            t = c.get("text_config")
            if not isinstance(t, dict) or t.get("model_type", "llama4_text") != "llama4_text":
                raise Fail(f"{path}: key text_config: missing, not an object, or not "
                           f"Llama 4's text model (llama4_text)")
            c = v5_rope(top_tie(dict(t), c), path)
        elif self.llama4 and c.get("model_type", "llama4_text") != "llama4_text":
            raise Fail(f"{path}: key model_type: {c.get('model_type')!r} is not {LLAMA4}'s "
                       f"(llama4_text)")
        if self.llama4:
            c = dict(LLAMA4_TEXT, **c)
            self.arch = LLAMA4

        def integer(key, default=None):
            v = c.get(key)
            if v is None:
                if default is None:
                    raise Fail(f"{path}: key {key}: missing")
                return default
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise Fail(f"{path}: key {key}: {v!r} is not a positive integer")
            return v

        def number(key, default):
            v = c.get(key)
            if v is None:
                return float(default)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise Fail(f"{path}: key {key}: {v!r} is not a positive number")
            return float(v)

        mixtral = self.arch == "MixtralForCausalLM"
        glm = self.arch in GLM
        gemma = self.gemma = self.arch in ("GemmaForCausalLM", "Gemma2ForCausalLM",
                                           "Gemma3ForCausalLM")
        gemma2 = self.arch == "Gemma2ForCausalLM"
        gemma1 = self.gemma1 = self.arch == "GemmaForCausalLM"  # GemmaConfig: gemma-7b's
        oss = self.oss = self.arch == GPT_OSS  # GptOssConfig: gpt-oss-120b's shapes
        self.H = integer("hidden_size", 3072 if gemma1 else 2304 if gemma else
                         2880 if oss else None)
        self.F = integer("intermediate_size", 24576 if gemma1 else 9216 if gemma else
                         2880 if oss else None)
        self.layers = integer("num_hidden_layers", 28 if gemma1 else 26 if gemma else
                              36 if oss else None)
        self.Q = integer("num_attention_heads", 16 if gemma1 else 8 if gemma else
                         64 if oss else None)
        # the configs' defaults: MistralConfig and MixtralConfig 8 KV heads, GlmConfig 2 of
        # 128, Gemma3TextConfig 4 of 256, SmolLM3Config 4, GemmaConfig 16, Dots1Config 32
        # (null: the query heads), LlamaConfig all
        self.K = integer("num_key_value_heads",
                         8 if self.arch in ("MistralForCausalLM", "MixtralForCausalLM", GLM4_MOE,
                                            "SeedOssForCausalLM", GPT_OSS)
                         else 32 if self.arch == DOTS1 and "num_key_value_heads" not in c
                         else 8 if self.llama4 and "num_key_value_heads" not in c
                         else 2 if glm else 16 if gemma1
                         else 4 if gemma or self.arch == "SmolLM3ForCausalLM" else self.Q)
        self.V = integer("vocab_size", 256000 if gemma2 or gemma1 else 262208 if gemma else
                         201088 if oss else None)
        if self.Q % self.K:
            raise Fail(f"{path}: key num_key_value_heads: {self.K} does not divide "
                       f"num_attention_heads {self.Q}")
        if self.H % self.Q and c.get("head_dim") is None and not glm and \
                not (self.llama4 and "head_dim" not in c):
            raise Fail(f"{path}: key head_dim: missing and hidden_size {self.H} is not a "
                       f"multiple of num_attention_heads {self.Q}")
        if self.arch == "InternLM2ForCausalLM":
            # its attention: head_dim = hidden_size // num_attention_heads, whole; "bias"
            # (InternLM2Config's default true) would put biases on wqkv and wo
            if self.H % self.Q:
                raise Fail(f"{path}: hidden_size {self.H} is not a multiple of "
                           f"num_attention_heads {self.Q}")
            if c.get("bias", True) is not False:
                raise Fail(f"{path}: key bias: InternLM2's wqkv and wo biases are not "
                           f"implemented by this reference")
            self.d = self.H // self.Q
        elif self.arch in GRANITE_MOES:
            # GraniteMoeAttention: head_dim = hidden_size // num_attention_heads, whole (it
            # raises otherwise), whatever a head_dim key says
            if self.H % self.Q or c.get("head_dim", self.H // self.Q) != self.H // self.Q:
                raise Fail(f"{path}: GraniteMoe's head size is hidden_size {self.H} / "
                           f"num_attention_heads {self.Q}, whole, and no other head_dim")
            self.d = self.H // self.Q
        else:
            self.d = integer("head_dim", 128 if glm or self.arch == "SeedOssForCausalLM"
                             or (self.llama4 and "head_dim" not in c)
                             else 256 if gemma else 64 if oss else self.H // self.Q)
        if self.arch == "InternLM3ForCausalLM":
            # Llama's layout; qkv_bias (q, k, v) and bias (o_proj, the FFN) not implemented
            for key in ("qkv_bias", "bias"):
                if c.get(key, False) is not False:
                    raise Fail(f"{path}: key {key}: InternLM3's biases are not implemented by "
                               f"this reference")
        smollm3 = self.arch == "SmolLM3ForCausalLM"
        self.theta = number("rope_theta", 1e6 if mixtral or (gemma and not gemma2 and not gemma1)
                            else 2e6 if smollm3 else 150000.0 if oss
                            else 500000.0 if self.llama4 else 10000.0)
        if self.arch in OLMOS and c.get("attention_bias", False) is not False:
            raise Fail(f"{path}: key attention_bias: OLMo 2's q, k, v and o biases are not "
                       f"implemented by this reference")
        self.eps = number("rms_norm_eps", 1e-5 if self.arch in ("Phi3ForCausalLM", GLM4_MOE) + OLMOS
                          or mixtral or oss or self.llama4 else 1.5625e-7 if glm else 1e-6)
        tie = c.get("tie_word_embeddings", gemma or smollm3)
        if tie is None:
            tie = False
        if not isinstance(tie, bool):
            raise Fail(f"{path}: key tie_word_embeddings: {tie!r} is not a boolean")
        self.tied = tie
        rs = c.get("rope_scaling")
        if oss and rs is None:
            rs = GPT_OSS_YARN
        self.yarn = None
        self.scaling = None  # transformers' rope_scaling of the other families, read below
        kind = (rs.get("rope_type") or rs.get("type")) if isinstance(rs, dict) else None
        if rs is not None and self.arch in DEEPSEEK and kind == "yarn":
            self.yarn = rs  # DeepSeek's own yarn (DeepseekV3YarnRotaryEmbedding)
        elif rs is not None and self.arch not in DEEPSEEK and \
                kind in ("default", "linear", "llama3", "yarn", "longrope", "su", "dynamic"):
            self.scaling = rs
            self.scaling_kind = {"su": "longrope"}.get(kind, kind)
            self.max_pos = c.get("max_position_embeddings")
            self.orig_top = c.get("original_max_position_embeddings")  # Phi-3's longrope
        elif rs is not None:
            raise Fail(f"{path}: key rope_scaling: {rs!r} not supported by this reference "
                       f"(absent or null; linear, llama3, yarn, longrope, dynamic; DeepSeek's yarn)")
        # dual_chunk_attention_config (Qwen2.5-1M, Qwen3-2507's 1M form): transformers ignores
        # it; vLLM applies it to its Qwen2, Qwen2-MoE, Qwen3 and Qwen3-MoE models (its
        # DualChunkRotaryEmbedding and dual chunk attention), and so does this reference
        # (Model.forward); vLLM's defaults for absent keys. Not with a RoPE scaling or a
        # window here.
        self.dca = None
        dca = c.get("dual_chunk_attention_config")
        if dca is not None:
            if self.arch not in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM",
                                 "Qwen3MoeForCausalLM"):
                raise Fail(f"{path}: key dual_chunk_attention_config: not read for {self.arch} "
                           f"by this reference (vLLM applies it to Qwen2 and Qwen3 models only)")
            if not isinstance(dca, dict):
                raise Fail(f"{path}: key dual_chunk_attention_config: {dca!r} is not an object")
            vals = [dca.get("chunk_size", 8192), dca.get("local_size", 1024),
                    dca.get("original_max_position_embeddings", 0)]
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in vals) or vals[0] < 2 or vals[1] >= vals[0]:
                raise Fail(f"{path}: key dual_chunk_attention_config: {dca!r}: expected "
                           f"integers, chunk_size at least 2, local_size below it")
            if rs is not None and kind not in (None, "default"):
                raise Fail(f"{path}: key rope_scaling: not with dual_chunk_attention_config "
                           f"in this reference")
            self.dca = vals
        # Qwen3-MoE (transformers' Qwen3MoeSparseMoeBlock): layer i routes to experts unless
        # it is in mlp_only_layers or (i + 1) is not a multiple of decoder_sparse_step; softmax
        # over the experts' logits, the top num_experts_per_tok, renormalised to sum 1 when
        # norm_topk_prob (Qwen3MoeConfig's default: false)
        self.experts = 0
        self.sparse = [False] * self.layers
        self.Fs = 0  # Qwen2-MoE's shared expert
        if self.arch in ("Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM"):
            self.experts = integer("num_experts")
            self.top_k = integer("num_experts_per_tok")
            self.Fe = integer("moe_intermediate_size")
            step = integer("decoder_sparse_step", 1)
            only = c.get("mlp_only_layers") or []
            if not isinstance(only, list) or not all(isinstance(v, int) for v in only):
                raise Fail(f"{path}: key mlp_only_layers: {only!r} is not a list of layers")
            norm = c.get("norm_topk_prob", False)
            if not isinstance(norm, bool):
                raise Fail(f"{path}: key norm_topk_prob: {norm!r} is not a boolean")
            self.norm_topk = norm
            if self.top_k > self.experts:
                raise Fail(f"{path}: key num_experts_per_tok: {self.top_k} exceeds "
                           f"num_experts {self.experts}")
            self.sparse = [i not in only and (i + 1) % step == 0 for i in range(self.layers)]
            if self.arch == "Qwen2MoeForCausalLM":
                # Qwen2MoeSparseMoeBlock: the routed sum plus
                # sigmoid(shared_expert_gate(x)) x shared_expert(x)
                self.Fs = integer("shared_expert_intermediate_size")
        # GLM-4.5 (Glm4MoeConfig's defaults for absent keys): q, k, v biases by
        # attention_bias, q/k head norms by use_qk_norm; the first first_k_dense_replace
        # layers dense (intermediate_size), the others Glm4MoeMoE: n_routed_experts of
        # moe_intermediate_size and a shared MLP of moe_intermediate_size x n_shared_experts.
        # dots.llm1 (Dots1Config): Dots1DecoderLayer is DeepseekV3DecoderLayer's, the same
        # layers with Dots1Config's defaults: first_k_dense_replace 0, n_routed_experts,
        # num_experts_per_tok and n_shared_experts None (required here: the class fails on
        # them), moe_intermediate_size 1408, norm_topk_prob false; both routers are
        # DeepseekV3TopkRouter's (sigmoid, e_score_correction_bias in the choice, n_group /
        # topk_group 1 / 1, routed_scaling_factor 1.0). Dots1Config has no scoring_func,
        # topk_method nor moe_layer_freq (vLLM's keys): not read here.
        self.glm4_moe = self.arch == GLM4_MOE
        self.dots1 = self.arch == DOTS1
        self.v3_moe = self.glm4_moe or self.dots1
        if self.v3_moe:
            def flag(key, default):
                v = c.get(key, default)
                if not isinstance(v, bool):
                    raise Fail(f"{path}: key {key}: {v!r} is not a boolean")
                return v

            def count(key, default):
                v = c.get(key, default)
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise Fail(f"{path}: key {key}: {v!r} is not a count")
                return v
            glm4 = self.glm4_moe
            if glm4:
                self.attention_bias = flag("attention_bias", False)
                self.use_qk_norm = flag("use_qk_norm", False)
            self.norm_topk = flag("norm_topk_prob", glm4)
            self.experts = integer("n_routed_experts", 128 if glm4 else None)
            self.top_k = integer("num_experts_per_tok", 8 if glm4 else None)
            self.Fe = integer("moe_intermediate_size", 1408)
            self.n_shared = count("n_shared_experts", 1 if glm4 else None)
            first = count("first_k_dense_replace", 1 if glm4 else 0)
            self.n_group = integer("n_group", 1)
            self.topk_group = integer("topk_group", 1)
            self.routed_scaling = number("routed_scaling_factor", 1.0)
            if self.top_k > self.experts or self.experts % self.n_group or \
                    self.topk_group > self.n_group:
                raise Fail(f"{path}: keys n_routed_experts / num_experts_per_tok / n_group / "
                           f"topk_group: {self.experts} / {self.top_k} / {self.n_group} / "
                           f"{self.topk_group} not read by this reference")
            self.sparse = [i >= first for i in range(self.layers)]
        # DeepSeek-MoE (DeepseekConfig, vLLM's DeepseekForCausalLM): Llama's attention; layer i
        # routes when i >= first_k_dense_replace (and i % moe_layer_freq == 0): softmax over
        # n_routed_experts, the top num_experts_per_tok, renormalised when norm_topk_prob
        # (false by default), plus an ungated shared MLP of moe_intermediate_size x
        # n_shared_experts under mlp.shared_experts.
        self.deepseek_moe = self.arch == "DeepseekForCausalLM"
        if self.deepseek_moe:
            self.experts = integer("n_routed_experts")
            self.top_k = integer("num_experts_per_tok")
            self.Fe = integer("moe_intermediate_size")
            self.n_shared = c.get("n_shared_experts") or 0
            first = c.get("first_k_dense_replace", 0)
            freq = integer("moe_layer_freq", 1)
            self.norm_topk = bool(c.get("norm_topk_prob", False))
            if c.get("scoring_func", "softmax") != "softmax" or self.top_k > self.experts:
                raise Fail(f"{path}: keys scoring_func / num_experts_per_tok: not read by this "
                           f"reference")
            self.sparse = [i >= first and i % freq == 0 for i in range(self.layers)]
        # Mixtral (MixtralSparseMoeBlock): every layer num_local_experts experts of
        # intermediate_size, softmax, the top num_experts_per_tok renormalised to sum 1
        if self.arch == "MixtralForCausalLM":
            self.experts = integer("num_local_experts", 8)
            self.top_k = integer("num_experts_per_tok", 2)
            self.Fe = self.F
            self.norm_topk = True
            if self.top_k > self.experts:
                raise Fail(f"{path}: key num_experts_per_tok: {self.top_k} exceeds "
                           f"num_local_experts {self.experts}")
            self.sparse = [True] * self.layers
        # gpt-oss (GptOssConfig, modeling_gpt_oss.py): every layer num_local_experts experts of
        # intermediate_size; the router's logits (with its bias), their top
        # num_experts_per_tok (older configs: experts_per_token) softmaxed among themselves;
        # each expert's gate and up (interleaved columns of gate_up_proj, with their biases)
        # through the clamped SwiGLU, then down and its bias. Biases on q, k, v and o by
        # attention_bias (true); a sink logit per query head in every softmax; windows of
        # sliding_window on the layers layer_types calls sliding (by default 0, 2, 4, ...)
        if oss:
            self.experts = integer("num_local_experts", 128)
            self.top_k = integer("num_experts_per_tok", integer("experts_per_token", 4))
            self.Fe = self.F
            self.norm_topk = True
            self.sparse = [True] * self.layers
            self.swiglu_alpha = number("swiglu_alpha", 1.702)
            self.swiglu_limit = number("swiglu_limit", 7.0)
            self.oss_bias = c.get("attention_bias", True) is not False
            if self.top_k > self.experts:
                raise Fail(f"{path}: key num_experts_per_tok: {self.top_k} exceeds "
                           f"num_local_experts {self.experts}")
        # GraniteMoeConfig (modeling_granitemoe.py): every layer's MLP is GraniteMoeMoE,
        # num_local_experts (8) experts of intermediate_size in two fused tensors per layer,
        # output-major; GraniteMoeTopKGating takes the num_experts_per_tok (2) largest router
        # logits and softmaxes them among themselves; Granite's multipliers (below) as
        # GraniteConfig's, residual_multiplier on the MoE's output too
        self.granite_moe = self.arch in GRANITE_MOES
        self.granite_shared = 0
        if self.arch == GRANITE_MOE_SHARED:
            v = c.get("shared_intermediate_size", 0)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise Fail(f"{path}: key shared_intermediate_size: {v!r} is not a width "
                           f"(0: no shared MLP)")
            self.granite_shared = v
        if self.granite_moe:
            self.experts = integer("num_local_experts", 8)
            self.top_k = integer("num_experts_per_tok", 2)
            self.Fe = self.F
            self.sparse = [True] * self.layers
            if self.top_k > self.experts:
                raise Fail(f"{path}: key num_experts_per_tok: {self.top_k} exceeds "
                           f"num_local_experts {self.experts}")
            if c.get("attention_bias") or c.get("position_embedding_type", "rope") != "rope":
                raise Fail(f"{path}: keys attention_bias / position_embedding_type: not read "
                           f"by this reference")
        # Gemma3TextConfig: GeGLU (gelu_pytorch_tanh), the embedding times sqrt(hidden) in the
        # weights' dtype, every norm 1 + w, the softmax scale query_pre_attn_scalar^-0.5, a
        # window on every layer but each sliding_window_pattern-th (or as layer_types says),
        # those layers turning with rope_local_base_freq and no scaling. layer_windows: each
        # layer's window (None: the whole context), Gemma's or Mistral's below
        # Gemma2Config: the same layer without q/k norms and local base, its pattern
        # alternating (windowed first), the scores and the logits soft-capped (cap x
        # tanh(z / cap); 50 and 30 by default, null: none).
        # GraniteConfig: Llama's layer with its multipliers (each 1.0 when absent, as the
        # config class says): the embedding times embedding_multiplier, the softmax scale
        # attention_multiplier itself, each attention and MLP output times
        # residual_multiplier before the residual add, the logits over logits_scaling
        if self.arch in ("GraniteForCausalLM",) + GRANITE_MOES:
            self.granite = {k: number(k, 1.0) for k in (
                "embedding_multiplier", "attention_multiplier", "residual_multiplier",
                "logits_scaling")}
        self.layer_windows = [None] * self.layers
        # SmolLM3Config: no_rope_layers (1: the layer turns q and k, 0: it does not), derived
        # when absent as every no_rope_layer_interval-th layer (4) without; Llama4TextConfig
        # the same, also for an empty list; other classes turn every layer
        self.rope_layers = [1] * self.layers
        self.layer_chunks = [None] * self.layers  # Llama 4's attention chunks (None: none)
        if smollm3 or self.llama4:
            nl = c.get("no_rope_layers")
            if nl is None or (self.llama4 and nl == []):
                iv = integer("no_rope_layer_interval", 4)
                nl = [int((i + 1) % iv != 0) for i in range(self.layers)]
            if not isinstance(nl, list) or len(nl) < self.layers or \
                    any(v not in (0, 1) or isinstance(v, bool) for v in nl):
                raise Fail(f"{path}: key no_rope_layers: not a list of 0 and 1 per layer")
            self.rope_layers = nl[:self.layers]
            if smollm3 and c.get("use_sliding_window"):
                raise Fail(f"{path}: key use_sliding_window: not in this reference")
        if self.llama4:
            self.llama4_keys(c, path, integer, number)
        self.attn_cap = self.final_cap = None
        self.local_base = None
        # GemmaConfig: Llama's layer (post_attention_layernorm the MLP's input norm) with
        # Gemma's norms, GeGLU and embedding, no window, no capping, the softmax scale
        # head_dim^-0.5; hidden_activation gelu_pytorch_tanh or absent (vLLM's tanh form
        # whatever hidden_act names)
        if gemma1:
            act = c.get("hidden_activation")
            if act not in (None, "gelu_pytorch_tanh"):
                raise Fail(f"{path}: key hidden_activation: {act!r} is not implemented by this "
                           f"reference")
            for key in ("attn_logit_softcapping", "final_logit_softcapping"):
                if c.get(key) is not None:
                    raise Fail(f"{path}: key {key}: GemmaConfig has no softcapping")
            self.qpas = float(self.d)
        elif gemma:
            act = c.get("hidden_activation", "gelu_pytorch_tanh")
            if act != "gelu_pytorch_tanh":
                raise Fail(f"{path}: key hidden_activation: {act!r} is not implemented by this "
                           f"reference")
            for key, default in (("attn_logit_softcapping", 50.0),
                                 ("final_logit_softcapping", 30.0)):
                if gemma2:
                    cap = number(key, default) if c.get(key, default) is not None else None
                    setattr(self, "attn_cap" if key.startswith("attn") else "final_cap", cap)
                elif c.get(key) is not None:
                    raise Fail(f"{path}: key {key}: Gemma 3's softcapping is null")
            self.qpas = number("query_pre_attn_scalar", 256)
            if not gemma2:
                self.local_base = number("rope_local_base_freq", 10000.0)
            sw = c.get("sliding_window", 4096)
            types = c.get("layer_types")
            if types is None:
                pattern = 2 if gemma2 else integer("sliding_window_pattern", 6)
                types = ["sliding_attention" if pattern and (i + 1) % pattern
                         else "full_attention" for i in range(self.layers)]
            if not isinstance(types, list) or len(types) != self.layers:
                raise Fail(f"{path}: key layer_types: not a list of {self.layers} kinds")
            self.layer_windows = [sw if t == "sliding_attention" else None for t in types]
        if self.arch in ("LlamaForCausalLM",) + QK_NORM and c.get("attention_bias"):
            raise Fail(f"{path}: key attention_bias: true is not supported by this reference")
        # sliding_window: Mistral's, Mixtral's and Phi-3's attention keeps, on every layer,
        # the positions kv with q - window < kv <= q (transformers' masking_utils); absent,
        # MistralConfig's 4096. Qwen2Config and Qwen3Config switch it (use_sliding_window,
        # false by default; on, a window of 4096 when absent) and window the layers that
        # layer_types calls sliding_attention, by default those from max_window_layers (28)
        # on. Other Qwen2-style configs (the MoE ones) are not implemented when on.
        qwen = self.arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM")
        if oss:
            sw = c.get("sliding_window", 128)
            types = c.get("layer_types")
            if types is None:
                types = ["sliding_attention" if (i + 1) % 2 else "full_attention"
                         for i in range(self.layers)]
            if not isinstance(types, list) or len(types) != self.layers:
                raise Fail(f"{path}: key layer_types: not a list of {self.layers} kinds")
            self.layer_windows = [sw if t == "sliding_attention" else None for t in types]
        if self.arch == OLMO3:
            if c.get("rope_theta") is None:
                raise Fail(f"{path}: key rope_theta: missing (Olmo3Config's default differs "
                           f"between transformers versions)")
            sw = c.get("sliding_window", 4096)
            types = c.get("layer_types")
            if types is None:
                types = ["sliding_attention" if (i + 1) % 4 else "full_attention"
                         for i in range(self.layers)]
            if not isinstance(types, list) or len(types) != self.layers:
                raise Fail(f"{path}: key layer_types: not a list of {self.layers} kinds")
            if sw is None:
                if c.get("rope_scaling") is not None and "sliding_attention" in types:
                    raise Fail(f"{path}: sliding_window null with rope_scaling: not in this "
                               f"reference")
            else:
                if not isinstance(sw, int) or isinstance(sw, bool) or sw < 1:
                    raise Fail(f"{path}: key sliding_window: {sw!r} is not a positive integer")
                self.layer_windows = [sw if t == "sliding_attention" else None for t in types]
            self.local_base = self.theta  # the sliding layers: default RoPE, rope_theta
        def windows_from(sw, first):
            """Qwen2Config's and Dots1Config's windows: sw on the layers layer_types calls
            sliding_attention, by default those from max_window_layers (first) on."""
            types = c.get("layer_types")
            if types is None:
                first = c.get("max_window_layers", first)
                if not isinstance(first, int) or isinstance(first, bool) or first < 0:
                    raise Fail(f"{path}: key max_window_layers: {first!r} is not an integer "
                               f">= 0")
                types = ["sliding_attention" if i >= first else "full_attention"
                         for i in range(self.layers)]
            if not isinstance(types, list) or len(types) != self.layers:
                raise Fail(f"{path}: key layer_types: not a list of {self.layers} kinds")
            return [sw if t == "sliding_attention" else None for t in types]
        # Dots1Config: sliding_window (4096; null: none) on those layers, max_window_layers 62
        sw = c.get("sliding_window", 4096) if self.dots1 else None
        if sw is not None:
            if not isinstance(sw, int) or isinstance(sw, bool) or sw < 1:
                raise Fail(f"{path}: key sliding_window: {sw!r} is not a positive integer")
            self.layer_windows = windows_from(sw, 62)
        sw = None if oss or self.dots1 or self.arch == OLMO3 else \
            c.get("sliding_window", 4096 if self.arch == "MistralForCausalLM" or
                   (qwen and c.get("use_sliding_window") is True) else None)
        if sw is not None and not self.gemma:  # Gemma's: per layer, above
            if not isinstance(sw, int) or isinstance(sw, bool) or sw < 1:
                raise Fail(f"{path}: key sliding_window: {sw!r} is not a positive integer")
            if self.arch in ("MistralForCausalLM", "MixtralForCausalLM", "Phi3ForCausalLM",
                             STARCODER2):
                self.layer_windows = [sw] * self.layers
            elif qwen and c.get("use_sliding_window") is True:
                self.layer_windows = windows_from(sw, 28)
            elif qwen and c.get("use_sliding_window", False) is False:
                pass
            elif c.get("use_sliding_window", False) is not False:
                raise Fail(f"{path}: key use_sliding_window: Qwen2-style windows are not "
                           f"implemented by this reference")
            elif "use_sliding_window" not in c:
                raise Fail(f"{path}: key sliding_window: not implemented for {self.arch} by "
                           f"this reference")
        if self.arch == STARCODER2:
            self.starcoder2(c, path, number)
        self.rotary = self.d
        self.mla = self.arch in DEEPSEEK
        self.fp8_block = None
        if self.mla:
            self.deepseek(c, path, integer, number)
        elif self.arch == GLM4_MOE:
            self.fp8_blocks(c, path)
        # GlmForCausalLM: q, k and v biases by attention_bias (GlmConfig: true), RoPE over
        # the first half of each head (0.5) in pairs (2i, 2i+1), gate_up_proj fused
        self.glm_bias = glm and c.get("attention_bias", True) is not False
        # SeedOssConfig: q, k and v biases by attention_bias (true when absent), o_proj's by
        # attention_out_bias (not in this reference)
        if self.arch == "SeedOssForCausalLM":
            self.glm_bias = c.get("attention_bias", True) is not False
            if c.get("attention_out_bias", False) is not False:
                raise Fail(f"{path}: key attention_out_bias: not in this reference")
        if self.arch in ("Phi3ForCausalLM", GLM4_MOE) + GLM:
            factor = number("partial_rotary_factor", 0.5 if glm or self.glm4_moe else 1.0)
            self.rotary = int(self.d * factor)
            if not 0 < self.rotary <= self.d:
                raise Fail(f"{path}: key partial_rotary_factor: {factor} gives rotary dim "
                           f"{self.rotary} outside (0, head_dim {self.d}]")
        if self.rotary % 2:
            raise Fail(f"{path}: rotary dim {self.rotary} is odd (head_dim, "
                       f"partial_rotary_factor)")
        self.mrope_axis = self.mrope and self.mrope_axes(path)

    def llama4_keys(self, c, path, integer, number):
        """Llama4TextConfig's keys beyond Llama's, its defaults where absent: the MoE layers
        (moe_layers, else every interleave_moe_layer_step-th from step - 1), their experts
        of intermediate_size and the dense layers' intermediate_size_mlp; use_qk_norm; the
        chunk of the layers layer_types calls chunked_attention (by default those turning
        with RoPE; attention_chunk_size null: the whole causal context); the NoPE layers'
        query temperature (attn_temperature_tuning, floor_scale, attn_scale)."""
        L = self.layers

        def flag(key, default):
            v = c.get(key, default)
            if v is None:  # the class stores the None, which the attention tests as false
                return False
            if not isinstance(v, bool):
                raise Fail(f"{path}: key {key}: {v!r} is not a boolean")
            return v
        if c.get("attention_bias", False) is not False:
            raise Fail(f"{path}: key attention_bias: Llama 4's q, k, v and o biases are not "
                       f"implemented by this reference")
        if c.get("hidden_act", "silu") != "silu":
            raise Fail(f"{path}: key hidden_act: {c.get('hidden_act')!r} is not implemented "
                       f"by this reference (silu)")
        if c.get("quantization_config") is not None:
            raise Fail(f"{path}: key quantization_config: Llama 4's quantized weights are not "
                       f"read by this reference")
        self.Fmlp = integer("intermediate_size_mlp", 16384)
        self.experts = integer("num_local_experts", 16)
        self.top_k = integer("num_experts_per_tok", 1)
        self.Fe = self.F
        if self.top_k > self.experts:
            raise Fail(f"{path}: key num_experts_per_tok: {self.top_k} exceeds "
                       f"num_local_experts {self.experts}")
        moe = c.get("moe_layers")
        if moe is None:
            step = integer("interleave_moe_layer_step", 1)
            moe = list(range(step - 1, L, step))
        if not isinstance(moe, list) or \
                not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < L
                        for v in moe):
            raise Fail(f"{path}: key moe_layers: {moe!r} is not a list of layer indices "
                       f"below num_hidden_layers {L}")
        self.sparse = [i in moe for i in range(L)]
        self.use_qk_norm = flag("use_qk_norm", True)
        # attn_temperature_tuning: a boolean in Llama4TextConfig, 4 in the released
        # configs; the attention tests its truth
        tune = c.get("attn_temperature_tuning", True)
        if not isinstance(tune, (bool, int)):
            raise Fail(f"{path}: key attn_temperature_tuning: {tune!r} is not a boolean or "
                       f"an integer")
        self.temp_tuning = bool(tune)
        self.floor_scale = number("floor_scale", 8192)
        scale = c.get("attn_scale", 0.1)
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or \
                not math.isfinite(scale):
            raise Fail(f"{path}: key attn_scale: {scale!r} is not a number")
        self.attn_scale = float(scale)
        chunk = c.get("attention_chunk_size", 8192)
        if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool) or
                                  chunk < 1):
            raise Fail(f"{path}: key attention_chunk_size: {chunk!r} is not a positive integer "
                       f"or null")
        types = c.get("layer_types")
        if types is None:
            types = ["chunked_attention" if r else "full_attention" for r in self.rope_layers]
        if not isinstance(types, list) or len(types) != L or \
                any(t not in ("chunked_attention", "full_attention") for t in types):
            raise Fail(f"{path}: key layer_types: not a list of {L} kinds, each "
                       f"chunked_attention or full_attention")
        self.layer_chunks = [chunk if t == "chunked_attention" else None for t in types]

    def starcoder2(self, c, path, number):
        """Starcoder2Config's keys beyond Llama's: norm_epsilon, use_bias, hidden_act, and its
        default tie_word_embeddings true."""
        if self.H % self.Q or self.d != self.H // self.Q:
            raise Fail(f"{path}: StarCoder2's head size here is hidden_size / "
                       f"num_attention_heads, whole")
        self.eps = number("norm_epsilon", 1e-5)
        bias = c.get("use_bias", True)
        if not isinstance(bias, bool):
            raise Fail(f"{path}: key use_bias: {bias!r} is not a boolean")
        self.use_bias = bias
        act = c.get("hidden_act", "gelu_pytorch_tanh")
        acts = {"gelu_pytorch_tanh": gelu_tanh, "gelu_new": gelu_tanh, "silu": silu}
        if act not in acts:
            raise Fail(f"{path}: key hidden_act: {act!r} not in this reference ({', '.join(acts)})")
        self.act = acts[act]
        tie = c.get("tie_word_embeddings", True)
        if not isinstance(tie, bool):
            raise Fail(f"{path}: key tie_word_embeddings: {tie!r} is not a boolean")
        self.tied = tie

    def mrope_axes(self, path):
        """Qwen3-VL's multimodal RoPE: which of a token's (time, height, width) positions
        each rotated pair turns by. Interleaved (transformers' apply_interleaved_mrope): pair i
        by height when i % 3 == 1 and i < 3 h, by width when i % 3 == 2 and i < 3 w, else by
        time; otherwise in sections of t, h and w pairs (Qwen2-VL's)."""
        sec, interleaved = self.mrope
        half = self.rotary // 2
        if not isinstance(sec, list) or len(sec) != 3 or sum(sec) != half or \
                not all(isinstance(n, int) and n >= 0 for n in sec):
            raise Fail(f"{path}: key mrope_section: {sec!r} is not three counts adding up to "
                       f"the {half} rotated pairs")
        if not interleaved:
            return [0] * sec[0] + [1] * sec[1] + [2] * sec[2]
        axis = [0] * half
        for dim in (1, 2):
            for i in range(dim, min(3 * sec[dim], half), 3):
                axis[i] = dim
        return axis


    def fp8_blocks(self, c, path):
        """DeepSeek-V3's and GLM-4.5's fp8 releases: e4m3 weights, one scale per block
        (self.fp8_block: rows, cols); None without a quantization_config. Without
        weight_block_size quant_method fp8 means one scale per tensor (vLLM's Fp8Config),
        which their releases do not use."""
        q = c.get("quantization_config")
        self.fp8_block = None
        if q is not None:
            block = q.get("weight_block_size") if isinstance(q, dict) else None
            if not isinstance(q, dict) or q.get("quant_method") != "fp8" or \
                    q.get("fmt", "e4m3") != "e4m3" or not isinstance(block, list) or \
                    len(block) != 2 or not all(isinstance(v, int) and v > 0 for v in block):
                raise Fail(f"{path}: key quantization_config: {q!r} not read by this "
                           f"reference (fp8, e4m3, weight_block_size [rows, cols])")
            self.fp8_block = tuple(block)

    def deepseek(self, c, path, integer, number):
        """DeepSeek-V2/V3 (modeling_deepseek.py): MLA sizes and the MoE gate. No default is
        taken for the MoE keys: the checkpoints this reference reads give them all."""
        self.fp8_blocks(c, path)
        q_lora = c.get("q_lora_rank")
        self.q_lora = 0 if q_lora is None else integer("q_lora_rank")
        self.kv_lora = integer("kv_lora_rank")
        self.rope_d = integer("qk_rope_head_dim")
        self.nope = integer("qk_nope_head_dim")
        self.vd = integer("v_head_dim")
        self.experts = integer("n_routed_experts")
        self.top_k = integer("num_experts_per_tok")
        self.Fe = integer("moe_intermediate_size")
        self.shared = c.get("n_shared_experts") or 0
        first = c.get("first_k_dense_replace")
        freq = integer("moe_layer_freq", 1)
        if not isinstance(first, int) or first < 0:
            raise Fail(f"{path}: key first_k_dense_replace: {first!r} is not a layer count")
        self.sparse = [i >= first and i % freq == 0 for i in range(self.layers)]
        self.scoring = c.get("scoring_func")
        # DeepseekV3Config's topk_method when absent (the one V3 gate: noaux_tc)
        self.method = c.get("topk_method",
                            "noaux_tc" if self.arch == "DeepseekV3ForCausalLM" else None)
        if self.scoring not in ("sigmoid", "softmax") or \
                self.method not in ("noaux_tc", "greedy", "group_limited_greedy"):
            raise Fail(f"{path}: keys scoring_func / topk_method: {self.scoring!r} / "
                       f"{self.method!r} not read by this reference")
        self.n_group = integer("n_group", 1)
        self.topk_group = integer("topk_group", 1)
        self.norm_topk = bool(c.get("norm_topk_prob"))
        self.scaling = number("routed_scaling_factor", 1.0)
        self.v2 = self.arch == "DeepseekV2ForCausalLM"
        self.rotary = self.rope_d


# ---------------------------------------------------------------------------------------------
# model


def matvec(w, x):
    mul = operator.mul
    return [sum(map(mul, row, x)) for row in w]


def add(x, y):
    return [a + b for a, b in zip(x, y)]


def rmsnorm(x, w, eps):
    scale = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [v * scale * g for v, g in zip(x, w)]


def bf16_round(v):
    """v rounded to bfloat16 (to nearest, ties to even), as a float."""
    u = struct.unpack("<I", struct.pack("<f", v))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", u))[0]


def gelu_tanh(z):
    """PyTorch's gelu(approximate="tanh")."""
    return 0.5 * z * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))


def silu(z):
    # z / (1 + exp(-z)), written to avoid overflow of exp for very negative z.
    if z >= 0:
        return z / (1.0 + math.exp(-z))
    e = math.exp(z)
    return z * e / (1.0 + e)


class Layer:
    pass


def mix(scores, values):
    """Softmax over the scores, then the weighted sum of the values (one per position)."""
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    o = [0.0] * len(values[0])
    for w, v in zip(weights, values):
        o = [a + w / total * b for a, b in zip(o, v)]
    return o


def attend(q, keys, values, scale, cap=None, sink=None):
    """Softmax over the positions of q . key x scale (soft-capped: cap x tanh(that / cap)),
    then the weighted sum of the values (keys and values of one KV head, one per position).
    sink (gpt-oss): one more logit in the softmax, whose probability is dropped (no value)."""
    scores = [sum(map(operator.mul, q, k)) * scale for k in keys]
    if cap is not None:
        scores = [cap * math.tanh(s / cap) for s in scores]
    if sink is None:
        return mix(scores, values)
    top = max(max(scores), sink)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights) + math.exp(sink - top)
    o = [0.0] * len(values[0])
    for w, v in zip(weights, values):
        o = [a + w / total * b for a, b in zip(o, v)]
    return o


def attend_dca(queries, bounds, keys, values, scale):
    """One softmax over every position: a key before bounds[0] scored with queries[0], one
    before bounds[1] with queries[1], the rest with queries[2] (dual chunk attention)."""
    return mix([sum(map(operator.mul, queries[0 if p < bounds[0] else 1 if p < bounds[1] else 2],
                        k)) * scale for p, k in enumerate(keys)], values)


class Decoder:
    """What every family shares: the embedding, the final norm and the output head.
    forward(token, False) (a prompt token before the last) ends once the last layer's key
    and value are cached (kv_only_end): nothing after them reaches the cache or the logits,
    so the last layer's query, attention and MLP are not computed there."""

    def load_globals(self, ck, cfg):
        self.cfg = cfg
        internlm2 = cfg.arch == "InternLM2ForCausalLM"
        self.embed = ck.matrix("model.tok_embeddings.weight" if internlm2
                               else "model.embed_tokens.weight", cfg.V, cfg.H)
        self.norm = ck.vector("model.norm.weight", cfg.H)
        self.embed_scale = 1.0
        if cfg.gemma:  # 1 + w; sqrt(hidden) cast to the embedding's dtype (its buffer's .to)
            self.norm = [1.0 + w for w in self.norm]
            self.embed_scale = math.sqrt(cfg.H)
            if ck.dtype("model.embed_tokens.weight") == "BF16":
                self.embed_scale = bf16_round(self.embed_scale)
        self.lm_head = self.embed if cfg.tied else \
            ck.matrix("output.weight" if internlm2 else "lm_head.weight", cfg.V, cfg.H)
        self.layers = []
        self.position = 0
        self.seq_floor = 0  # the prompt's length: the prefill forward's largest position + 1

    def head(self, x, want_logits):
        if not want_logits:
            return None
        logits = matvec(self.lm_head, rmsnorm(x, self.norm, self.cfg.eps))
        if self.cfg.granite is not None:
            logits = [z / self.cfg.granite["logits_scaling"] for z in logits]
        if self.cfg.final_cap is not None:
            logits = [self.cfg.final_cap * math.tanh(z / self.cfg.final_cap) for z in logits]
        return logits


def rope_interleaved(vec, cos, sin):
    """DeepSeek's apply_rotary_pos_emb: the stored pairs (2i, 2i+1) are first gathered into
    halves (view(d/2, 2).transpose), then rotate_half as Llama's."""
    half = len(cos)
    a, b = vec[0::2], vec[1::2]
    return ([a[i] * cos[i] - b[i] * sin[i] for i in range(half)] +
            [b[i] * cos[i] + a[i] * sin[i] for i in range(half)])


class DeepSeek(Decoder):
    """DeepSeek-V2/V3: MLA attention (non-absorbed, as the modeling code computes it), the
    first first_k_dense_replace layers dense, the others routed experts plus shared ones."""

    def __init__(self, directory, cfg):
        ck = Checkpoint(directory)
        ck.block = cfg.fp8_block
        self.load_globals(ck, cfg)
        H, Q = cfg.H, cfg.Q
        qd = cfg.nope + cfg.rope_d
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            a = p + "self_attn."
            L = Layer()
            L.input_norm = ck.vector(p + "input_layernorm.weight", H)
            L.post_norm = ck.vector(p + "post_attention_layernorm.weight", H)
            if cfg.q_lora:
                L.q_a = ck.matrix(a + "q_a_proj.weight", cfg.q_lora, H)
                L.q_a_norm = ck.vector(a + "q_a_layernorm.weight", cfg.q_lora)
                L.q_b = ck.matrix(a + "q_b_proj.weight", Q * qd, cfg.q_lora)
            else:
                L.q = ck.matrix(a + "q_proj.weight", Q * qd, H)
            L.kv_a = ck.matrix(a + "kv_a_proj_with_mqa.weight", cfg.kv_lora + cfg.rope_d, H)
            L.kv_a_norm = ck.vector(a + "kv_a_layernorm.weight", cfg.kv_lora)
            L.kv_b = ck.matrix(a + "kv_b_proj.weight", Q * (cfg.nope + cfg.vd), cfg.kv_lora)
            L.wo = ck.matrix(a + "o_proj.weight", H, Q * cfg.vd)
            m = p + "mlp."
            if not cfg.sparse[i]:
                L.dense = (ck.matrix(m + "gate_proj.weight", cfg.F, H),
                           ck.matrix(m + "up_proj.weight", cfg.F, H),
                           ck.matrix(m + "down_proj.weight", H, cfg.F))
            else:
                E, Fe, Fs = cfg.experts, cfg.Fe, cfg.Fe * cfg.shared
                L.router = ck.matrix(m + "gate.weight", E, H)
                bias = m + "gate.e_score_correction_bias"
                L.bias = ck.vector(bias, E) if ck.has(bias) else [0.0] * E
                L.experts = [(ck.matrix(m + f"experts.{j}.gate_proj.weight", Fe, H),
                              ck.matrix(m + f"experts.{j}.up_proj.weight", Fe, H),
                              ck.matrix(m + f"experts.{j}.down_proj.weight", H, Fe))
                             for j in range(E)]
                L.shared = None
                if Fs:
                    L.shared = (ck.matrix(m + "shared_experts.gate_proj.weight", Fs, H),
                                ck.matrix(m + "shared_experts.up_proj.weight", Fs, H),
                                ck.matrix(m + "shared_experts.down_proj.weight", H, Fs))
            L.keys, L.values = [], []  # per position: Q heads of [k_nope | k_pe], of v
            self.layers.append(L)
        r = cfg.rope_d
        self.inv_freq = [1.0 / cfg.theta ** (2 * i / r) for i in range(r // 2)]
        self.mscale = 1.0  # on cos and sin
        self.scale = 1.0 / math.sqrt(cfg.nope + cfg.rope_d)
        if cfg.yarn is not None:
            self.use_yarn(cfg.yarn)

    def use_yarn(self, rs):
        """DeepseekV3YarnRotaryEmbedding and DeepseekV3Attention's softmax scale."""
        r, base = self.cfg.rope_d, self.cfg.theta
        factor = float(rs["factor"])
        orig = float(rs["original_max_position_embeddings"])
        fast, slow = float(rs.get("beta_fast", 32)), float(rs.get("beta_slow", 1))
        ms, ms_all = float(rs.get("mscale", 1)), float(rs.get("mscale_all_dim", 0))

        def corr_dim(rot):
            return r * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))

        def get_mscale(scale, m):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        low = max(math.floor(corr_dim(fast)), 0)
        high = min(math.ceil(corr_dim(slow)), r - 1)
        if low == high:
            high += 0.001
        freqs = []
        for i in range(r // 2):
            extra = 1.0 / base ** (2 * i / r)
            inter = 1.0 / (factor * base ** (2 * i / r))
            ramp = min(max((i - low) / (high - low), 0.0), 1.0)
            mask = 1.0 - ramp
            freqs.append(inter * (1 - mask) + extra * mask)
        self.inv_freq = freqs
        self.mscale = get_mscale(factor, ms) / get_mscale(factor, ms_all)
        if ms_all:
            self.scale *= get_mscale(factor, ms_all) ** 2

    def gate(self, L, h):
        """MoEGate: (experts, weights) as modeling_deepseek.py chooses them."""
        cfg = self.cfg
        logits = matvec(L.router, h)
        if cfg.scoring == "sigmoid":
            scores = [1.0 / (1.0 + math.exp(-v)) for v in logits]
        else:
            top = max(logits)
            e = [math.exp(v - top) for v in logits]
            scores = [v / sum(e) for v in e]
        E, G = cfg.experts, cfg.n_group
        if cfg.method == "greedy":
            choice = list(scores)
        else:
            # noaux_tc (V3): the bias steers, groups by their two best; group_limited_greedy
            # (V2): groups by their best; the experts of the other groups masked with 0.0
            base = [s + b for s, b in zip(scores, L.bias)] if cfg.method == "noaux_tc" \
                else list(scores)
            per = E // G
            gscore = []
            for g in range(G):
                grp = sorted(base[g * per:(g + 1) * per], reverse=True)
                gscore.append(grp[0] + grp[1] if cfg.method == "noaux_tc" and per > 1
                              else grp[0])
            kept = sorted(range(G), key=lambda g: (-gscore[g], g))[:cfg.topk_group]
            # the other groups' experts out of the choice, as vLLM's and SGLang's grouped
            # top-k mask them (-inf); transformers' masked_fill(0.0) differs only where a
            # kept expert's score plus bias is below 0
            choice = [base[e] if e // per in kept else -math.inf for e in range(E)]
        chosen = sorted(range(E), key=lambda e: (-choice[e], e))[:cfg.top_k]
        w = [scores[e] for e in chosen]
        if cfg.v2:  # one or the other
            if cfg.top_k > 1 and cfg.norm_topk:
                w = [v / (sum(w) + 1e-20) for v in w]
            else:
                w = [v * cfg.scaling for v in w]
        else:
            if cfg.top_k > 1 and cfg.norm_topk:
                w = [v / (sum(w) + 1e-20) for v in w]
            w = [v * cfg.scaling for v in w]
        return chosen, w

    def forward(self, token, want_logits):
        cfg = self.cfg
        Q, eps, nope, rd, vd = cfg.Q, cfg.eps, cfg.nope, cfg.rope_d, cfg.vd
        qd = nope + rd
        t = self.position
        self.position += 1
        cos = [math.cos(t * f) * self.mscale for f in self.inv_freq]
        sin = [math.sin(t * f) * self.mscale for f in self.inv_freq]
        scale = self.scale
        x = list(self.embed[token])
        last = len(self.layers) - 1
        for i, L in enumerate(self.layers):
            h = rmsnorm(x, L.input_norm, eps)
            kv_only = i == last and not want_logits  # (kv_only_end)
            if kv_only:
                q = [0.0] * (Q * qd)
            elif cfg.q_lora:
                q = matvec(L.q_b, rmsnorm(matvec(L.q_a, h), L.q_a_norm, eps))
            else:
                q = matvec(L.q, h)
            ckv = matvec(L.kv_a, h)
            kv = matvec(L.kv_b, rmsnorm(ckv[:cfg.kv_lora], L.kv_a_norm, eps))
            k_pe = rope_interleaved(ckv[cfg.kv_lora:], cos, sin)
            keys, values, queries = [], [], []
            for j in range(Q):
                qj = q[j * qd:(j + 1) * qd]
                queries.append(qj[:nope] + rope_interleaved(qj[nope:], cos, sin))
                kvj = kv[j * (nope + vd):(j + 1) * (nope + vd)]
                keys.append(kvj[:nope] + k_pe)
                values.append(kvj[nope:])
            L.keys.append(keys)
            L.values.append(values)
            if kv_only:
                return None
            attn = []
            for j in range(Q):
                attn.extend(attend(queries[j], [ks[j] for ks in L.keys],
                                   [vs[j] for vs in L.values], scale))
            x = add(x, matvec(L.wo, attn))
            h = rmsnorm(x, L.post_norm, eps)
            if hasattr(L, "dense"):
                x = add(x, Model.mlp(*L.dense, h))
            else:
                chosen, w = self.gate(L, h)
                y = Model.mlp(*L.shared, h) if L.shared else [0.0] * len(h)
                for e, we in zip(chosen, w):
                    y = [a + we * b for a, b in zip(y, Model.mlp(*L.experts[e], h))]
                x = add(x, y)
        return self.head(x, want_logits)


class Model(Decoder):
    """The GQA families: Llama, Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE, Phi-3,
    gpt-oss (and the others the Config reads)."""

    @staticmethod
    def gpt_oss_experts(ck, prefix, E, H, Fe):
        """GptOssExperts' tensors: PREFIX.gate_up_proj [E, H, 2 Fe] input-major with gate the
        even columns ([..., ::2]) and up the odd ones ([..., 1::2]), PREFIX.gate_up_proj_bias
        [E, 2 Fe] interleaved alike, PREFIX.down_proj [E, Fe, H], PREFIX.down_proj_bias
        [E, H]; as (gate, up, down, gate bias, up bias, down bias) per expert, the matrices
        in nn.Linear's [out][in]."""
        gub = ck.stacked(prefix + "gate_up_proj_bias", [E, 2 * Fe])
        dnb = ck.stacked(prefix + "down_proj_bias", [E, H])
        out = []
        if ck.has(prefix + "gate_up_proj_blocks"):
            # the released MXFP4 form: [E, out, in / 32, 16] blocks, [E, out, in / 32]
            # scales, output-major (transformers' convert_moe_packed_tensors, then the
            # transpose to the input-major layout above): gate the even out rows
            gu = mxfp4_rows(ck.stacked(prefix + "gate_up_proj_blocks", [E, 2 * Fe, H // 32, 16]),
                            ck.stacked(prefix + "gate_up_proj_scales", [E, 2 * Fe, H // 32]),
                            E * 2 * Fe, H)
            dn = mxfp4_rows(ck.stacked(prefix + "down_proj_blocks", [E, H, Fe // 32, 16]),
                            ck.stacked(prefix + "down_proj_scales", [E, H, Fe // 32]),
                            E * H, Fe)
            for j in range(E):
                out.append(([gu[j * 2 * Fe + 2 * k] for k in range(Fe)],
                            [gu[j * 2 * Fe + 2 * k + 1] for k in range(Fe)],
                            dn[j * H:(j + 1) * H], gub[j * 2 * Fe:(j + 1) * 2 * Fe:2],
                            gub[j * 2 * Fe + 1:(j + 1) * 2 * Fe:2], dnb[j * H:(j + 1) * H]))
            return out
        gu = ck.stacked(prefix + "gate_up_proj", [E, H, 2 * Fe])
        dn = ck.stacked(prefix + "down_proj", [E, Fe, H])
        for j in range(E):  # the transposes by strided slices: column k of [H][2 Fe]
            g0, d0, g1, d1 = j * H * 2 * Fe, j * Fe * H, (j + 1) * H * 2 * Fe, (j + 1) * Fe * H
            gate = [gu[g0 + 2 * k:g1:2 * Fe] for k in range(Fe)]
            up = [gu[g0 + 2 * k + 1:g1:2 * Fe] for k in range(Fe)]
            down = [dn[d0 + h:d1:H] for h in range(H)]
            out.append((gate, up, down, gub[j * 2 * Fe:(j + 1) * 2 * Fe:2],
                        gub[j * 2 * Fe + 1:(j + 1) * 2 * Fe:2], dnb[j * H:(j + 1) * H]))
        return out

    @staticmethod
    def granite_experts(ck, prefix, E, H, Fe):
        """GraniteMoeParallelExperts' weights: PREFIX.input_linear.weight [E, 2 Fe, H] and
        PREFIX.output_linear.weight [E, H, Fe], each expert's slab [out][in] (F.linear with
        weight[i]); the first Fe outputs of input_linear are the gate (chunk(2, dim=-1)[0],
        the activation's input), the next Fe the up; as (gate, up, down) per expert."""
        gu = ck.stacked(prefix + "input_linear.weight", [E, 2 * Fe, H])
        dn = ck.stacked(prefix + "output_linear.weight", [E, H, Fe])
        out = []
        for j in range(E):
            rows = [gu[(j * 2 * Fe + r) * H:(j * 2 * Fe + r + 1) * H] for r in range(2 * Fe)]
            down = [dn[(j * H + o) * Fe:(j * H + o + 1) * Fe] for o in range(H)]
            out.append((rows[:Fe], rows[Fe:], down))
        return out

    @staticmethod
    def fused_experts(ck, prefix, E, H, Fe):
        """Qwen3VLMoeTextExperts' tensors: PREFIX.gate_up_proj [E, H, 2 Fe] and
        PREFIX.down_proj [E, Fe, H], each expert's slab input-major (x @ W), gate the first
        half of gate_up's last dimension and up the second (gate_up.chunk(2, dim=-1)); as
        (gate, up, down) per expert in nn.Linear's [out][in]."""
        gu = ck.stacked(prefix + "gate_up_proj", [E, H, 2 * Fe])
        dn = ck.stacked(prefix + "down_proj", [E, Fe, H])
        out = []
        for j in range(E):  # the transposes by strided slices: column k of [H][2 Fe]
            g0, d0, g1, d1 = j * H * 2 * Fe, j * Fe * H, (j + 1) * H * 2 * Fe, (j + 1) * Fe * H
            gate = [gu[g0 + k:g1:2 * Fe] for k in range(Fe)]
            up = [gu[g0 + Fe + k:g1:2 * Fe] for k in range(Fe)]
            down = [dn[d0 + h:d1:H] for h in range(H)]
            out.append((gate, up, down))
        return out

    def __init__(self, directory, cfg):
        ck = Checkpoint(directory)
        ck.block = cfg.fp8_block
        if cfg.nested:
            ck.unnest()
        self.load_globals(ck, cfg)
        H, F, Q, K, d = cfg.H, cfg.F, cfg.Q, cfg.K, cfg.d
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            L = Layer()
            if cfg.arch == "InternLM2ForCausalLM":
                self.internlm2_layer(ck, cfg, p, L)
                self.layers.append(L)
                continue
            if cfg.llama4:
                self.llama4_layer(ck, cfg, i, p, L)
                self.layers.append(L)
                continue
            if cfg.arch in OLMOS:  # no input norms; the outputs' norms below
                L.input_norm = L.post_norm = None
            else:
                L.input_norm = ck.vector(p + "input_layernorm.weight", H)
                L.post_norm = ck.vector(p + "post_attention_layernorm.weight", H)
            if cfg.arch in GLM:
                L.wq = ck.matrix(p + "self_attn.q_proj.weight", Q * d, H)
                L.wk = ck.matrix(p + "self_attn.k_proj.weight", K * d, H)
                L.wv = ck.matrix(p + "self_attn.v_proj.weight", K * d, H)
                gate_up = ck.matrix(p + "mlp.gate_up_proj.weight", 2 * F, H)
                L.wgate, L.wup = gate_up[:F], gate_up[F:]
            elif cfg.arch == "Phi3ForCausalLM":
                qkv = ck.matrix(p + "self_attn.qkv_proj.weight", Q * d + 2 * K * d, H)
                L.wq, L.wk, L.wv = qkv[:Q * d], qkv[Q * d:Q * d + K * d], qkv[Q * d + K * d:]
                gate_up = ck.matrix(p + "mlp.gate_up_proj.weight", 2 * F, H)
                L.wgate, L.wup = gate_up[:F], gate_up[F:]
            else:
                L.wq = ck.matrix(p + "self_attn.q_proj.weight", Q * d, H)
                L.wk = ck.matrix(p + "self_attn.k_proj.weight", K * d, H)
                L.wv = ck.matrix(p + "self_attn.v_proj.weight", K * d, H)
                if not cfg.sparse[i]:
                    L.wgate = ck.matrix(p + "mlp.gate_proj.weight", F, H)
                    L.wup = ck.matrix(p + "mlp.up_proj.weight", F, H)
            L.wo = ck.matrix(p + "self_attn.o_proj.weight", H, Q * d)
            L.router = None
            if cfg.sparse[i]:
                E, Fe = cfg.experts, cfg.Fe
                if cfg.arch == "MixtralForCausalLM":  # w1 gate, w3 up, w2 down
                    b, names = "block_sparse_moe.", ("w1", "w3", "w2")
                else:
                    b, names = "mlp.", ("gate_proj", "up_proj", "down_proj")
                if cfg.granite_moe:  # GraniteMoeTopKGating's layer, the fused experts
                    L.router = ck.matrix(p + "block_sparse_moe.router.layer.weight", E, H)
                    L.experts = Model.granite_experts(ck, p + "block_sparse_moe.", E, H, Fe)
                    S = cfg.granite_shared
                    if S:  # GraniteMoeSharedMLP: chunk(2) of input_linear's output
                        gu = ck.matrix(p + "shared_mlp.input_linear.weight", 2 * S, H)
                        L.granite_shared = (gu[:S], gu[S:],
                                            ck.matrix(p + "shared_mlp.output_linear.weight",
                                                      H, S))
                elif cfg.oss:  # its router, with a bias; its experts fused, with biases
                    L.router = ck.matrix(p + "mlp.router.weight", E, H)
                    L.router_bias = ck.vector(p + "mlp.router.bias", E)
                    L.experts = Model.gpt_oss_experts(ck, p + "mlp.experts.", E, H, Fe)
                else:
                    L.router = ck.matrix(p + b + "gate.weight", E, H)
                if cfg.oss or cfg.granite_moe:
                    pass
                elif cfg.fused_experts:
                    L.experts = Model.fused_experts(ck, p + "mlp.experts.", E, H, Fe)
                else:
                    L.experts = [(ck.matrix(p + f"{b}experts.{j}.{names[0]}.weight", Fe, H),
                                  ck.matrix(p + f"{b}experts.{j}.{names[1]}.weight", Fe, H),
                                  ck.matrix(p + f"{b}experts.{j}.{names[2]}.weight", H, Fe))
                                 for j in range(E)]
            else:
                L.wdown = ck.matrix(p + "mlp.down_proj.weight", H, F)
            L.shared = None
            if cfg.sparse[i] and cfg.deepseek_moe and cfg.n_shared:  # ungated shared experts
                s, Fs = p + "mlp.shared_experts.", cfg.Fe * cfg.n_shared
                L.shared = (ck.matrix(s + "gate_proj.weight", Fs, H),
                            ck.matrix(s + "up_proj.weight", Fs, H),
                            ck.matrix(s + "down_proj.weight", H, Fs))
                L.shared_gate = None
            if cfg.sparse[i] and cfg.v3_moe:  # the TopkRouter's buffer, shared_experts
                E, Fs = cfg.experts, cfg.Fe * cfg.n_shared
                L.bias = ck.vector(p + "mlp.gate.e_score_correction_bias", E)
                s = p + "mlp.shared_experts."
                if Fs:
                    L.shared = (ck.matrix(s + "gate_proj.weight", Fs, H),
                                ck.matrix(s + "up_proj.weight", Fs, H),
                                ck.matrix(s + "down_proj.weight", H, Fs))
            if cfg.sparse[i] and cfg.Fs:
                s = p + "mlp.shared_expert."
                L.shared = (ck.matrix(s + "gate_proj.weight", cfg.Fs, H),
                            ck.matrix(s + "up_proj.weight", cfg.Fs, H),
                            ck.matrix(s + "down_proj.weight", H, cfg.Fs))
                L.shared_gate = ck.matrix(p + "mlp.shared_expert_gate.weight", 1, H)[0]
            L.bq = L.bk = L.bv = L.bo = L.sinks = None
            if cfg.oss:  # a sink per query head; o_proj's bias with the others
                L.sinks = ck.vector(p + "self_attn.sinks", Q)
                if cfg.oss_bias:
                    L.bo = ck.vector(p + "self_attn.o_proj.bias", H)
            if cfg.arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM") or cfg.glm_bias or \
                    (cfg.glm4_moe and cfg.attention_bias) or (cfg.oss and cfg.oss_bias):
                L.bq = ck.vector(p + "self_attn.q_proj.bias", Q * d)
                L.bk = ck.vector(p + "self_attn.k_proj.bias", K * d)
                L.bv = ck.vector(p + "self_attn.v_proj.bias", K * d)
            L.out_norm = L.mlp_out_norm = None
            if cfg.arch == "Glm4ForCausalLM":
                L.out_norm = ck.vector(p + "post_self_attn_layernorm.weight", H)
                L.mlp_out_norm = ck.vector(p + "post_mlp_layernorm.weight", H)
            if cfg.arch in OLMOS:
                L.out_norm = ck.vector(p + "post_attention_layernorm.weight", H)
                L.mlp_out_norm = ck.vector(p + "post_feedforward_layernorm.weight", H)
            L.q_norm = L.k_norm = L.q_norm_all = L.k_norm_all = None
            if cfg.arch in OLMOS:  # over the whole projections
                L.q_norm_all = ck.vector(p + "self_attn.q_norm.weight", Q * d)
                L.k_norm_all = ck.vector(p + "self_attn.k_norm.weight", K * d)
            if cfg.arch in QK_NORM or (cfg.glm4_moe and cfg.use_qk_norm):
                L.q_norm = ck.vector(p + "self_attn.q_norm.weight", d)
                L.k_norm = ck.vector(p + "self_attn.k_norm.weight", d)
            if cfg.gemma and not cfg.gemma1:
                # Gemma 2's and 3's names: post_attention_layernorm is the attention's output
                # norm, pre_feedforward_layernorm the MLP's input one (Gemma 1's: Llama's)
                L.out_norm = L.post_norm
                L.post_norm = ck.vector(p + "pre_feedforward_layernorm.weight", H)
                L.mlp_out_norm = ck.vector(p + "post_feedforward_layernorm.weight", H)
            if cfg.gemma:  # every norm scales by 1 + w
                for key in ("input_norm", "post_norm", "out_norm", "mlp_out_norm", "q_norm",
                            "k_norm"):
                    if getattr(L, key) is not None:  # Gemma 2 has no q/k norms
                        setattr(L, key, [1.0 + w for w in getattr(L, key)])
            L.keys, L.values = [], []  # per position: K heads of d
            self.layers.append(L)
        self.rope_params(cfg)

    @staticmethod
    def internlm2_layer(ck, cfg, p, L):
        """InternLM2's names; its wqkv viewed as [K][G + 2][d] rows (modeling_internlm2's
        rearrange "(h gs d)"): per KV head g its G query heads g*G .. g*G + G-1, then g's key,
        then g's value."""
        H, F, Q, K, d = cfg.H, cfg.F, cfg.Q, cfg.K, cfg.d
        G = Q // K
        L.input_norm = ck.vector(p + "attention_norm.weight", H)
        L.post_norm = ck.vector(p + "ffn_norm.weight", H)
        wqkv = ck.matrix(p + "attention.wqkv.weight", (Q + 2 * K) * d, H)
        L.wq, L.wk, L.wv = [], [], []
        for g in range(K):
            block = wqkv[g * (G + 2) * d:(g + 1) * (G + 2) * d]
            L.wq.extend(block[:G * d])
            L.wk.extend(block[G * d:(G + 1) * d])
            L.wv.extend(block[(G + 1) * d:])
        L.wo = ck.matrix(p + "attention.wo.weight", H, Q * d)
        L.wgate = ck.matrix(p + "feed_forward.w1.weight", F, H)
        L.wup = ck.matrix(p + "feed_forward.w3.weight", F, H)
        L.wdown = ck.matrix(p + "feed_forward.w2.weight", H, F)
        L.router = L.shared = L.bq = L.bk = L.bv = L.bo = L.sinks = L.q_norm = L.k_norm = None
        L.out_norm = L.mlp_out_norm = L.q_norm_all = L.k_norm_all = None
        L.keys, L.values = [], []

    @staticmethod
    def llama4_layer(ck, cfg, i, p, L):
        """Llama4TextDecoderLayer's tensors: Llama's attention and norms; feed_forward. as
        Llama4TextMoe (router.weight [E, H]; experts.gate_up_proj [E, H, 2 F] and
        experts.down_proj [E, F, H], input-major, gate the first F columns: Qwen3-VL-MoE's
        layout; shared_expert.{gate,up,down}_proj of intermediate_size) on the moe_layers,
        else Llama4TextMLP's {gate,up,down}_proj of intermediate_size_mlp."""
        H, Q, K, d = cfg.H, cfg.Q, cfg.K, cfg.d
        L.input_norm = ck.vector(p + "input_layernorm.weight", H)
        L.post_norm = ck.vector(p + "post_attention_layernorm.weight", H)
        L.wq = ck.matrix(p + "self_attn.q_proj.weight", Q * d, H)
        L.wk = ck.matrix(p + "self_attn.k_proj.weight", K * d, H)
        L.wv = ck.matrix(p + "self_attn.v_proj.weight", K * d, H)
        L.wo = ck.matrix(p + "self_attn.o_proj.weight", H, Q * d)
        f = p + "feed_forward."
        L.router = None
        if cfg.sparse[i]:
            E, Fe = cfg.experts, cfg.Fe
            L.router = ck.matrix(f + "router.weight", E, H)
            L.experts = Model.fused_experts(ck, f + "experts.", E, H, Fe)
            L.shared = (ck.matrix(f + "shared_expert.gate_proj.weight", Fe, H),
                        ck.matrix(f + "shared_expert.up_proj.weight", Fe, H),
                        ck.matrix(f + "shared_expert.down_proj.weight", H, Fe))
        else:
            F = cfg.Fmlp
            L.wgate = ck.matrix(f + "gate_proj.weight", F, H)
            L.wup = ck.matrix(f + "up_proj.weight", F, H)
            L.wdown = ck.matrix(f + "down_proj.weight", H, F)
            L.shared = None
        L.bq = L.bk = L.bv = L.bo = L.sinks = L.q_norm = L.k_norm = None
        L.out_norm = L.mlp_out_norm = L.q_norm_all = L.k_norm_all = None
        L.keys, L.values = [], []

    def rope_params(self, cfg):
        """transformers' modeling_rope_utils for the rotated dims r: the frequencies of
        each kind, and attention_scaling, which multiplies cos and sin (never the softmax
        scale in these families' attention). longrope keeps both sets: the long one is
        taken once a forward's largest position + 1 exceeds the original context (as
        _longrope_frequency_update does; cached keys keep the rotation they had). dynamic
        starts from the plain frequencies with a cache as long as max_position_embeddings and
        recomputes them whenever a forward is longer than the cache (dynamic_rope_update,
        InternLM2's rotary embedding), in frequencies()."""
        r, base, rs = cfg.rotary, cfg.theta, cfg.scaling
        plain = [1.0 / base ** (2 * i / r) for i in range(r // 2)]
        self.inv_freq, self.attn_scaling, self.long_freq = plain, 1.0, None
        self.dynamic = None
        if rs is None or cfg.scaling_kind == "default":
            return
        kind, factor = cfg.scaling_kind, rs.get("factor")
        if kind in ("llama3", "yarn") and cfg.orig_top is not None:
            # vLLM (patch_rope_parameters) and transformers v5 (standardize_rope_params)
            # write the top-level original_max_position_embeddings over rope_scaling's
            inner = rs.get("original_max_position_embeddings")
            if inner is not None and inner != cfg.orig_top:
                raise Fail(f"{cfg.path}: original_max_position_embeddings {cfg.orig_top} and "
                           f"rope_scaling's {inner} differ: the versions disagree on which wins")
            rs = dict(rs, original_max_position_embeddings=cfg.orig_top)
        if kind == "dynamic":
            self.dynamic, self.cached_len = factor, cfg.max_pos
        elif kind == "linear":  # _compute_linear_scaling_rope_parameters
            self.inv_freq = [f / factor for f in plain]
        elif kind == "llama3":  # _compute_llama3_parameters
            old = rs.get("original_max_position_embeddings") or cfg.max_pos
            low, high = rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
            out = []
            for f in plain:
                wavelen = 2 * math.pi / f
                if wavelen < old / high:
                    out.append(f)
                elif wavelen > old / low:
                    out.append(f / factor)
                else:
                    smooth = (old / wavelen - low) / (high - low)
                    out.append((1 - smooth) * f / factor + smooth * f)
            self.inv_freq = out
        elif kind == "yarn":  # _compute_yarn_parameters; the config's factor is the factor
            orig = rs.get("original_max_position_embeddings") or cfg.max_pos
            ms, ms_all = rs.get("mscale"), rs.get("mscale_all_dim")

            def get_mscale(scale, m=1.0):
                return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
            attn = rs.get("attention_factor")
            if attn is None:
                attn = get_mscale(factor, ms) / get_mscale(factor, ms_all) if ms and ms_all \
                    else get_mscale(factor)
            fast, slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

            def corr_dim(rot):
                return r * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
            low, high = corr_dim(fast), corr_dim(slow)
            if rs.get("truncate", True):  # false (gpt-oss): the ramp's ends unrounded
                low, high = math.floor(low), math.ceil(high)
            low, high = max(low, 0), min(high, r - 1)
            if low == high:
                high += 0.001
            out = []
            for i, f in enumerate(plain):
                extra = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
                out.append(f / factor * (1 - extra) + f * extra)
            self.inv_freq, self.attn_scaling = out, attn
        else:  # longrope: _compute_longrope_parameters
            if cfg.orig_top is not None:
                orig, factor = cfg.orig_top, cfg.max_pos / cfg.orig_top
            else:
                orig = rs.get("original_max_position_embeddings") or cfg.max_pos
            attn = rs.get("attention_factor")
            if attn is None:
                attn = 1.0 if factor <= 1 else \
                    math.sqrt(1 + math.log(factor) / math.log(orig))
            self.inv_freq = [1.0 / (e * base ** (2 * i / r))
                             for i, e in enumerate(rs["short_factor"])]
            self.long_freq = [1.0 / (e * base ** (2 * i / r))
                              for i, e in enumerate(rs["long_factor"])]
            self.long_after, self.attn_scaling = orig, attn

    def frequencies(self, t):
        """The frequencies a forward whose largest position is t rotates with."""
        seq = max(t + 1, self.seq_floor)
        if self.dynamic is not None and seq > self.cached_len:
            # _compute_dynamic_ntk_parameters at the new length; the cache only grows
            r, f, mp = self.cfg.rotary, self.dynamic, self.cfg.max_pos
            base = self.cfg.theta * (f * seq / mp - (f - 1)) ** (r / (r - 2))
            self.inv_freq = [1.0 / base ** (2 * i / r) for i in range(r // 2)]
            self.cached_len = seq
        if self.long_freq is not None and max(t + 1, self.seq_floor) > self.long_after:
            return self.long_freq
        return self.inv_freq

    def rope(self, head, cos, sin):
        """HF rotate_half over the first r elements; the rest pass through. GLM rotates
        pairs (2i, 2i+1) instead (its rotate_half interleaves, cos and sin repeated), and
        so does Llama 4 (apply_rotary_emb: view_as_complex of the pairs times e^(i t f))."""
        half = len(cos)
        out = list(head)
        if self.cfg.arch in GLM or self.cfg.llama4:
            for i in range(half):
                a, b = head[2 * i], head[2 * i + 1]
                out[2 * i] = a * cos[i] - b * sin[i]
                out[2 * i + 1] = b * cos[i] + a * sin[i]
            return out
        for i in range(half):
            a, b = head[i], head[i + half]
            out[i] = a * cos[i] - b * sin[i]
            out[i + half] = b * cos[i] + a * sin[i]
        return out

    @staticmethod
    def mlp(wgate, wup, wdown, h, act=silu):
        gate, up = matvec(wgate, h), matvec(wup, h)
        return matvec(wdown, [act(a) * b for a, b in zip(gate, up)])

    def moe(self, L, h):
        """Softmax over the router's logits, the top-k (ties to the lowest expert), their
        weights renormalised when norm_topk_prob, the weighted sum of those experts."""
        logits = matvec(L.router, h)
        top = max(logits)
        p = [math.exp(v - top) for v in logits]
        total = sum(p)
        p = [v / total for v in p]
        chosen = sorted(range(len(p)), key=lambda e: (-p[e], e))[:self.cfg.top_k]
        norm = sum(p[e] for e in chosen) if self.cfg.norm_topk else 1.0
        out = [0.0] * len(h)
        for e in chosen:
            y = self.mlp(*L.experts[e], h)
            out = [a + p[e] / norm * b for a, b in zip(out, y)]
        if L.shared is not None:  # Qwen2-MoE's gated by a sigmoid, DeepSeek-MoE's not
            g = 1.0
            if L.shared_gate is not None:
                z = sum(a * b for a, b in zip(L.shared_gate, h))
                g = 1.0 / (1.0 + math.exp(-z))
            out = [a + g * b for a, b in zip(out, self.mlp(*L.shared, h))]
        return out

    def llama4_moe(self, L, h):
        """Llama4TextMoe: the router's logits, their top k (ties to the lowest expert), each
        chosen expert run on the input times sigmoid(its logit) (Llama4Router's scores: the
        others' sigmoid(-inf) = 0, which their experts turn to 0), summed, plus the shared
        expert on the unscaled input."""
        logits = matvec(L.router, h)
        chosen = sorted(range(len(logits)), key=lambda e: (-logits[e], e))[:self.cfg.top_k]
        out = self.mlp(*L.shared, h)
        for e in chosen:
            z = logits[e]  # sigmoid, written to avoid overflow of exp
            score = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
            out = add(out, self.mlp(*L.experts[e], [score * v for v in h]))
        return out

    def granite_moe(self, L, h):
        """GraniteMoeMoE: the router's logits, their top k (ties to the lowest expert)
        softmaxed among themselves as the weights; each chosen expert's silu(gate) x up,
        then its output_linear, weighted and summed."""
        logits = matvec(L.router, h)
        chosen = sorted(range(len(logits)), key=lambda e: (-logits[e], e))[:self.cfg.top_k]
        top = max(logits[e] for e in chosen)
        w = [math.exp(logits[e] - top) for e in chosen]
        total = sum(w)
        out = [0.0] * len(h)
        for e, we in zip(chosen, w):
            y = self.mlp(*L.experts[e], h)
            out = [a + we / total * b for a, b in zip(out, y)]
        if getattr(L, "granite_shared", None) is not None:  # moe + shared_mlp(h)
            out = [a + b for a, b in zip(out, self.mlp(*L.granite_shared, h))]
        return out

    def gpt_oss_moe(self, L, h):
        """GptOssMLP: the router's logits plus its bias, the top-k of those (ties to the
        lowest expert), a softmax over the k chosen logits as their weights; each chosen
        expert's gate and up with their biases, g = min(gate, limit), u = clamp(up, -limit,
        limit), (u + 1) x g sigmoid(alpha g), then down and its bias, weighted and summed."""
        cfg = self.cfg
        alpha, limit = cfg.swiglu_alpha, cfg.swiglu_limit
        logits = add(matvec(L.router, h), L.router_bias)
        chosen = sorted(range(len(logits)), key=lambda e: (-logits[e], e))[:cfg.top_k]
        top = max(logits[e] for e in chosen)
        p = [math.exp(logits[e] - top) for e in chosen]
        total = sum(p)
        out = [0.0] * len(h)
        for e, pe in zip(chosen, p):
            wg, wu, wd, bg, bu, bd = L.experts[e]
            gate, up = add(matvec(wg, h), bg), add(matvec(wu, h), bu)
            act = []
            for a, b in zip(gate, up):
                g = min(a, limit)
                u = min(max(b, -limit), limit)
                z = alpha * g  # g sigmoid(alpha g), written to avoid overflow of exp
                sig = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
                act.append((u + 1.0) * g * sig)
            y = add(matvec(wd, act), bd)
            out = [a + pe / total * b for a, b in zip(out, y)]
        return out

    def v3_moe(self, L, h):
        """Glm4MoeMoE and Dots1MoE (DeepseekV3MoE's): route_tokens_to_experts (sigmoid
        scores; the choice from them plus e_score_correction_bias, in the topk_group groups
        best by the sum of their two best, the others' experts out of the choice as vLLM's
        grouped top-k leaves them (-inf; transformers masks them with 0.0, which differs
        where a kept expert's choice is below 0); ties to the lowest expert), the chosen
        experts weighted by their scores, renormalised (+ 1e-20) when norm_topk_prob, times
        routed_scaling_factor; plus the shared experts' MLP, unscaled."""
        cfg = self.cfg
        E, G = cfg.experts, cfg.n_group
        scores = [1.0 / (1.0 + math.exp(-v)) for v in matvec(L.router, h)]
        choice = [s + b for s, b in zip(scores, L.bias)]
        per = E // G
        gscore = [sum(sorted(choice[g * per:(g + 1) * per], reverse=True)[:2])
                  for g in range(G)]
        kept = sorted(range(G), key=lambda g: (-gscore[g], g))[:cfg.topk_group]
        choice = [v if e // per in kept else -math.inf for e, v in enumerate(choice)]
        chosen = sorted(range(E), key=lambda e: (-choice[e], e))[:cfg.top_k]
        w = [scores[e] for e in chosen]
        if cfg.norm_topk:
            total = sum(w) + 1e-20
            w = [v / total for v in w]
        out = [0.0] * len(h)
        for e, we in zip(chosen, w):
            out = [a + we * cfg.routed_scaling * b
                   for a, b in zip(out, self.mlp(*L.experts[e], h))]
        if L.shared is not None:
            out = add(out, self.mlp(*L.shared, h))
        return out

    def forward(self, token, want_logits):
        """Feeds token at the next position; returns the logits when asked."""
        cfg = self.cfg
        d, Q, K, eps = cfg.d, cfg.Q, cfg.K, cfg.eps
        group = Q // K
        t = self.position
        self.position += 1
        freq, ms = self.frequencies(t), self.attn_scaling
        pos = [t] * len(freq)
        if cfg.mrope_axis:  # a text token's time, height and width positions: all t
            thw = (t, t, t)
            pos = [thw[a] for a in cfg.mrope_axis]
        cos = [math.cos(p * f) * ms for p, f in zip(pos, freq)]
        sin = [math.sin(p * f) * ms for p, f in zip(pos, freq)]
        scale = 1.0 / math.sqrt(cfg.qpas if cfg.gemma else d)
        act = gelu_tanh if cfg.gemma else silu
        x = [v * self.embed_scale for v in self.embed[token]]
        res = 1.0
        if cfg.granite is not None:
            scale = cfg.granite["attention_multiplier"]
            res = cfg.granite["residual_multiplier"]
            x = [v * cfg.granite["embedding_multiplier"] for v in x]
        if cfg.local_base is not None:  # Gemma 3's windowed layers: a plain RoPE, own base
            local = [1.0 / cfg.local_base ** (2 * i / cfg.rotary) for i in range(cfg.rotary // 2)]
            cos_l = [math.cos(t * f) for f in local]
            sin_l = [math.sin(t * f) for f in local]
        qturns, dca_f = None, 1.0
        if cfg.dca is not None:
            # vLLM's dual chunk attention, written from its definition: chunks of
            # n = chunk_size - local_size positions; keys and the query of the own chunk
            # ("intra") turn at t mod n, the query facing the chunk before ("succ") at
            # t mod n + n, the one facing every older chunk ("inter") at 2n - 1, both clamped
            # to chunk_size; one softmax over all keys, each key scored by its part's query.
            # Past original_max_position_embeddings vLLM multiplies each key as it caches it,
            # and each query, by 0.1 ln(len / orig) + 1, len the length of the forward that
            # computes the token: the prompt's for a prompt token (its prefill), t + 1 for a
            # generated one
            chunk, local, orig = cfg.dca
            n = chunk - local
            if any(w is not None for w in cfg.layer_windows):
                raise Fail("dual_chunk_attention_config with a sliding window: not in this "
                           "reference")

            def turn(pos):
                return ([math.cos(pos * f) for f in freq], [math.sin(pos * f) for f in freq])
            cos, sin = turn(t % n)
            qturns = (turn(min(2 * n - 1, chunk)), turn(min(t % n + n, chunk)))
            bounds = (max(t // n - 1, 0) * n, t // n * n)  # inter keys end, succ keys end
            if orig > 0:
                dca_f = max(1.0, 0.1 * math.log(max(t + 1, self.seq_floor) / orig) + 1.0)
                scale *= dca_f
        last = len(self.layers) - 1
        for i, L in enumerate(self.layers):
            window = cfg.layer_windows[i]
            c, s = (cos_l, sin_l) if window is not None and cfg.local_base is not None \
                else (cos, sin)
            h = x if L.input_norm is None else rmsnorm(x, L.input_norm, eps)
            kv_only = i == last and not want_logits  # (kv_only_end)
            q = [0.0] * (Q * d) if kv_only else matvec(L.wq, h)
            k, v = matvec(L.wk, h), matvec(L.wv, h)
            if L.bq is not None:
                q, k, v = add(q, L.bq), add(k, L.bk), add(v, L.bv)
            if L.q_norm_all is not None:
                q, k = rmsnorm(q, L.q_norm_all, eps), rmsnorm(k, L.k_norm_all, eps)
            qh = [q[j * d:(j + 1) * d] for j in range(Q)]
            kh = [k[g * d:(g + 1) * d] for g in range(K)]
            vh = [v[g * d:(g + 1) * d] for g in range(K)]
            if L.q_norm is not None:
                qh = [rmsnorm(e, L.q_norm, eps) for e in qh]
                kh = [rmsnorm(e, L.k_norm, eps) for e in kh]
            parts = None
            if qturns is not None:  # the inter and succ queries, turned from the same q
                parts = [[self.rope(e, *qt) for e in qh] for qt in qturns]
            if cfg.rope_layers[i]:  # (SmolLM3's NoPE layers leave q and k as projected)
                qh = [self.rope(e, c, s) for e in qh]
                kh = [self.rope(e, c, s) for e in kh]
            if cfg.llama4 and cfg.rope_layers[i] and cfg.use_qk_norm:
                # Llama4TextL2Norm after RoPE: x rsqrt(mean(x^2) + rms_norm_eps), no weight
                ones = [1.0] * d
                qh = [rmsnorm(e, ones, eps) for e in qh]
                kh = [rmsnorm(e, ones, eps) for e in kh]
            if cfg.llama4 and not cfg.rope_layers[i] and cfg.temp_tuning:
                # the NoPE layers' query temperature: log1p(floor((t + 1) / floor_scale)) x
                # attn_scale + 1, on q alone (the cached keys are not scaled)
                tq = math.log1p(math.floor((t + 1) / cfg.floor_scale)) * cfg.attn_scale + 1.0
                qh = [[v * tq for v in e] for e in qh]
            if dca_f != 1.0:  # dual chunk attention's factor, cached with the key
                kh = [[v * dca_f for v in e] for e in kh]
            L.keys.append(kh)
            L.values.append(vh)
            if kv_only:
                return None
            attn = []
            first = 0 if window is None else max(0, len(L.keys) - window)
            if cfg.layer_chunks[i] is not None:  # Llama 4: the keys of t's own chunk
                first = t // cfg.layer_chunks[i] * cfg.layer_chunks[i]
            for j in range(Q):
                g = j // group
                if parts is not None:
                    attn.extend(attend_dca([parts[0][j], parts[1][j], qh[j]], bounds,
                                           [ks[g] for ks in L.keys], [vs[g] for vs in L.values],
                                           scale))
                    continue
                attn.extend(attend(qh[j], [ks[g] for ks in L.keys[first:]],
                                   [vs[g] for vs in L.values[first:]], scale, cfg.attn_cap,
                                   None if L.sinks is None else L.sinks[j]))
            o = matvec(L.wo, attn)
            if L.bo is not None:
                o = add(o, L.bo)
            if L.out_norm is not None:
                o = rmsnorm(o, L.out_norm, eps)
            x = add(x, [res * e for e in o])
            h = x if L.post_norm is None else rmsnorm(x, L.post_norm, eps)
            y = (self.mlp(L.wgate, L.wup, L.wdown, h, act) if L.router is None
                 else self.v3_moe(L, h) if cfg.v3_moe
                 else self.llama4_moe(L, h) if cfg.llama4
                 else self.gpt_oss_moe(L, h) if cfg.oss
                 else self.granite_moe(L, h) if cfg.granite_moe else self.moe(L, h))
            if L.mlp_out_norm is not None:
                y = rmsnorm(y, L.mlp_out_norm, eps)
            x = add(x, [res * e for e in y])
        return self.head(x, want_logits)


def layernorm(x, w, b, eps):
    """torch.nn.LayerNorm over the last dimension: the biased variance."""
    n = len(x)
    mean = sum(x) / n
    var = sum((v - mean) ** 2 for v in x) / n
    scale = 1.0 / math.sqrt(var + eps)
    return [(v - mean) * scale * g + c for v, g, c in zip(x, w, b)]


class StarCoder2(Model):
    """Starcoder2ForCausalLM: LayerNorms with biases, biased projections, the plain MLP
    c_proj(act(c_fc(x))), rotate_half RoPE (Model's), windows as Mistral's."""

    def __init__(self, directory, cfg):
        ck = Checkpoint(directory)
        self.load_globals(ck, cfg)
        H, F, Q, K, d = cfg.H, cfg.F, cfg.Q, cfg.K, cfg.d
        self.norm_b = ck.vector("model.norm.bias", H)

        def bias(name, n):
            return ck.vector(name, n) if cfg.use_bias else [0.0] * n
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            L = Layer()
            L.ln1 = (ck.vector(p + "input_layernorm.weight", H),
                     ck.vector(p + "input_layernorm.bias", H))
            L.ln2 = (ck.vector(p + "post_attention_layernorm.weight", H),
                     ck.vector(p + "post_attention_layernorm.bias", H))
            L.wq = ck.matrix(p + "self_attn.q_proj.weight", Q * d, H)
            L.wk = ck.matrix(p + "self_attn.k_proj.weight", K * d, H)
            L.wv = ck.matrix(p + "self_attn.v_proj.weight", K * d, H)
            L.wo = ck.matrix(p + "self_attn.o_proj.weight", H, Q * d)
            L.bq, L.bk = bias(p + "self_attn.q_proj.bias", Q * d), bias(p + "self_attn.k_proj.bias", K * d)
            L.bv, L.bo = bias(p + "self_attn.v_proj.bias", K * d), bias(p + "self_attn.o_proj.bias", H)
            L.c_fc = ck.matrix(p + "mlp.c_fc.weight", F, H)
            L.c_fc_b = bias(p + "mlp.c_fc.bias", F)
            L.c_proj = ck.matrix(p + "mlp.c_proj.weight", H, F)
            L.c_proj_b = bias(p + "mlp.c_proj.bias", H)
            L.keys, L.values = [], []
            self.layers.append(L)
        self.rope_params(cfg)

    def head(self, x, want_logits):
        if not want_logits:
            return None
        return matvec(self.lm_head, layernorm(x, self.norm, self.norm_b, self.cfg.eps))

    def forward(self, token, want_logits):
        cfg = self.cfg
        d, Q, K, eps = cfg.d, cfg.Q, cfg.K, cfg.eps
        t = self.position
        self.position += 1
        freq, ms = self.frequencies(t), self.attn_scaling
        cos = [math.cos(t * f) * ms for f in freq]
        sin = [math.sin(t * f) * ms for f in freq]
        scale = 1.0 / math.sqrt(d)
        x = list(self.embed[token])
        last = len(self.layers) - 1
        for i, L in enumerate(self.layers):
            h = layernorm(x, *L.ln1, eps)
            k = add(matvec(L.wk, h), L.bk)
            v = add(matvec(L.wv, h), L.bv)
            L.keys.append([self.rope(k[g * d:(g + 1) * d], cos, sin) for g in range(K)])
            L.values.append([v[g * d:(g + 1) * d] for g in range(K)])
            if i == last and not want_logits:  # (kv_only_end)
                return None
            q = add(matvec(L.wq, h), L.bq)
            window = cfg.layer_windows[i]
            first = 0 if window is None else max(0, len(L.keys) - window)
            attn = []
            for j in range(Q):
                g = j // (Q // K)
                attn.extend(attend(self.rope(q[j * d:(j + 1) * d], cos, sin),
                                   [ks[g] for ks in L.keys[first:]],
                                   [vs[g] for vs in L.values[first:]], scale))
            x = add(x, add(matvec(L.wo, attn), L.bo))
            h = layernorm(x, *L.ln2, eps)
            u = [cfg.act(a + b) for a, b in zip(matvec(L.c_fc, h), L.c_fc_b)]
            x = add(x, add(matvec(L.c_proj, u), L.c_proj_b))
        return self.head(x, want_logits)


def pick(logits):
    """(argmax with ties to the lowest index, top1 - top2, that gap / max |logit|)."""
    best = 0
    for i in range(1, len(logits)):
        if logits[i] > logits[best]:
            best = i
    second = max((v for i, v in enumerate(logits) if i != best), default=logits[best])
    gap = logits[best] - second
    peak = max(abs(v) for v in logits)
    return best, gap, (gap / peak if peak > 0 else 0.0)


def read_prompt(path, vocab):
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Fail(f"{path}: cannot read the prompt ids: {e}")
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise Fail(f"{path}: expected the token ids of one prompt on one line, "
                   f"found {len(lines)} non-empty lines")
    ids = []
    for word in lines[0].split():
        try:
            ids.append(int(word))
        except ValueError:
            raise Fail(f"{path}: {word!r} is not a token id")
        if not 0 <= ids[-1] < vocab:
            raise Fail(f"{path}: token id {ids[-1]} outside [0, vocab_size {vocab})")
    return ids


def main(argv):
    ap = argparse.ArgumentParser(
        prog="hf_forward.py",
        description="Float64 reference of the transformers forward pass: greedy decode.")
    ap.add_argument("dir", help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("prompt_ids", help="file with the prompt's token ids on one line")
    ap.add_argument("steps", help="tokens to decode after the prefill token")
    ap.add_argument("--json", action="store_true", help="accepted; the output is JSON")

    def usage_error(message):
        raise Fail(f"{message} (usage: hf_forward.py DIR PROMPT_IDS_FILE STEPS [--json])")
    ap.error = usage_error
    args = ap.parse_args(argv)
    # no reference cycles to collect: the collector's passes over the weights' row lists
    # only cost time
    gc.disable()
    try:
        steps = int(args.steps)
    except ValueError:
        steps = -1
    if steps < 0:
        raise Fail(f"STEPS: {args.steps!r} is not a non-negative integer")
    if not os.path.isdir(args.dir):
        raise Fail(f"{args.dir}: not a directory")
    cfg = Config(args.dir)  # the config's errors come before the prompt's
    prompt = read_prompt(args.prompt_ids, cfg.V)
    model = DeepSeek(args.dir, cfg) if cfg.mla else \
        StarCoder2(args.dir, cfg) if cfg.arch == STARCODER2 else Model(args.dir, cfg)
    model.seq_floor = len(prompt)  # transformers runs the prompt as one forward

    for tok in prompt[:-1]:
        model.forward(tok, False)
    token, min_gap, min_rel = pick(model.forward(prompt[-1], True))
    prefill = token
    tokens = []
    for _ in range(steps):
        token, gap, rel = pick(model.forward(token, True))
        tokens.append(token)
        if gap < min_gap:
            min_gap, min_rel = gap, rel
    print(json.dumps({"prefill_token": prefill, "tokens": tokens,
                      "min_gap": min_gap, "min_gap_rel": min_rel}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fail as e:
        print(f"hf_forward.py: {e}", file=sys.stderr)
        sys.exit(2)
