"""GGUF files (llama.cpp's model format): the header read memory-mapped, the metadata turned into
an HF-style config dict, and every tensor's stored type and exact bytes.

    g = read("model.gguf")            # GGUFFile: metadata, tensors (name -> GGUFTensor); no tensor data read
    hf = hf_config(g)                 # an HF config.json-like dict (configs.from_hf reads it)
    fw = file_weights(g, shapes, L)   # FileWeights: each HF-named tensor's stored type and bytes

The type table (ggml type -> block size, block bytes), the value types and the key names come
from the `gguf` package (gguf.GGML_QUANT_SIZES, gguf.GGUFValueType, gguf.Keys) and the tensor names
from its TensorNameMap (HF name -> `blk.N.attn_q.weight`...). The header itself is parsed here:
gguf.GGUFReader builds a NumPy view per element of every metadata array, which takes seconds on a
150k-token vocabulary (bench/bench_gguf.py measures both), while metadata reading must stay well
under a second whatever the file's size.

Conventions of llama.cpp's converter (convert_hf_to_gguf.py) that are undone when reading:
  * dims are stored fastest-first: a NumPy/HF shape is the reversed ggml `ne`;
  * `llama` q_proj/k_proj rows are permuted (LlamaModel.permute) so that ggml's interleaved rope
    (LLAMA_ROPE_TYPE_NORM) equals HF's rotate_half: un_permute() restores HF's order;
  * `deepseek2` files written after llama.cpp's MLA change store kv_b_proj split as attn_k_b
    [H, R, Dn] (transposed) and attn_v_b [H, Dv, R]; key_length/value_length then describe the
    latent (kv_lora_rank + rope dims, kv_lora_rank) and key_length_mla/value_length_mla the heads;
  * block_count includes the multi-token-prediction layers (nextn_predict_layers), which decoding
    never runs: they are not part of the config, and their bytes are reported apart;
  * the hybrid Gated DeltaNet families (`qwen3next`, `qwen35`, `qwen35moe`; conversion/qwen.py
    Qwen3NextModel and its Qwen3.5 subclasses) store the linear layers' sizes as SSM keys
    (ssm.group_count = key heads, ssm.time_step_rank = value heads, ssm.state_size = key head dim,
    ssm.inner_size = value heads x value head dim, ssm.conv_kernel) and which layers are linear as
    attention.recurrent_layers (else full_attention_interval); A_log as ssm_a = -exp(A_log) (a name
    without `.weight`), dt_bias as ssm_dt.bias, the depthwise conv1d [C, 1, K] squeezed to [C, K],
    the norms (but the gated one) as 1 + w, Qwen3.5's value heads regrouped, and Qwen3-Next's
    in_proj_qkvz split into attn_qkv (q, k, v rows) + attn_gate (z rows) (a Joined; llama.cpp's
    first qwen3next files keep it whole as ssm_in). Their shapes and bytes are read here; the
    values' conventions are undone where the file runs (models/checkpoint.py);
  * the Cohere families (`command-r`, `cohere2`; conversion/command_r.py) store their LayerNorm eps as
    attention.layer_norm_epsilon, tie the head to token_embd, keep Command-R+'s per-head q/k norms as HF's
    [heads, head_dim] (glmbench's config names them flat: the same bytes) and write no window pattern
    for cohere2 (llama.cpp's 4: three of every four layers windowed);
  * the Mamba-2 hybrids (`nemotron_h`, `nemotron_h_moe`, `granitehybrid`; conversion/nemotron.py NemotronHModel,
    conversion/granite.py GraniteHybridModel on conversion/mamba.py Mamba2Model) tell each layer's kind by the
    per-layer arrays attention.head_count_kv and (Nemotron-H) feed_forward_length, read back as HF's
    hybrid_override_pattern / layer_types (_mamba), the SSM's sizes as ssm.* keys; A_log as ssm_a =
    -exp(A_log) [H, 1] and D as ssm_d [H, 1] (names without `.weight`), dt_bias as ssm_dt.bias, the conv1d
    squeezed to [C, K], the gated norm reshaped [groups, d_inner / groups]; Granite's fused shared MLP
    (shared_mlp.input_linear) split into ffn_gate_shexp / ffn_up_shexp (ffn_gate / ffn_up without experts),
    Nemotron-H's experts stacked up / down only. Their shapes and bytes are read here; the values'
    conventions are undone where the file runs (models/checkpoint.py);
  * Falcon-H1 (`falcon-h1`; conversion/falcon_h1.py FalconH1Model on Mamba2Model, src/models/falcon-h1.cpp): every
    layer attention and Mamba-2 side by side (llama.cpp's hybrid memory: a KV cache and a recurrent state in every
    layer), read back as HF's falcon_h1 fields (_falcon_h1): the SSM's sizes as the other Mamba-2 hybrids' ssm.*
    keys (inner_size = mamba_d_ssm), the attention's as a GQA file's (head_count_kv, key_length); the conv's bias,
    the gated norm (mamba_rms_norm) and the biases by the tensors the file holds. The muP multipliers are folded
    into the weights by the converter (no key); the MLP's norm is stored as `blk.N.ffn_norm` without `.weight`
    (llama.cpp's loader names it so); the Mamba tensors as the other hybrids' (ssm_a, ssm_d, the conv [C, K], the
    norm [groups, d_inner / groups]);
  * LFM2 (`lfm2`, `lfm2moe`; conversion/lfm2.py LFM2Model, LFM2MoeModel, src/models/lfm2.cpp, lfm2moe.cpp) tells each
    layer's kind by the per-layer array attention.head_count_kv (0: a gated short convolution, llama.cpp's recurrent
    layer; else attention), read back as HF's layer_types (_lfm2); the conv's taps as shortconv.l_cache, the MLP's
    width as feed_forward_length already adjusted (block_auto_adjust_ff_dim read back off), LFM2-MoE's dense layers
    as leading_dense_block_count; the conv squeezed to [D, K] as blk.N.shortconv.conv, in_proj / out_proj as
    blk.N.shortconv.in_proj / out_proj, the final norm (HF's embedding_norm) as token_embd_norm, expert_bias as
    exp_probs_b.bias (_LFM2_LAYER_NAMES);
  * the DeepSeek Sparse Attention architectures (`glm-dsa`, `deepseek32`) write DeepseekV2Model's MLA and MoE keys
    plus attention.indexer.head_count / key_length / top_k and (GLM, where the config lists them) the bool array
    attention.indexer.types (true: a full indexer; false: a "shared" layer reusing the previous full layer's top-k,
    without indexer tensors); the indexer's tensors as blk.N.indexer.attn_q_b / attn_k / k_norm (weight and bias)
    / proj; kv_b_proj split as deepseek2's (_dsa);
  * Gemma 4 (`gemma4`; conversion/gemma.py Gemma4Model, src/models/gemma4.cpp) states each layer's kind as
    the bool array attention.sliding_window_pattern, the global layers' head dim as key_length and the
    sliding ones' as key_length_swa, KV heads per layer (head_count_kv, an array where they differ), the
    kv-shared layers as shared_kv_layers, the double-wide MLP as a per-layer feed_forward_length doubled on
    those layers, PLE as embedding_length_per_layer_input (0: none; the table per_layer_token_embd);
    k = v where the global layers hold no attn_v; the proportional rope of the global layers as the
    rope_freqs tensor (1 for each rotated pair, 1e30 for the rest). Its norms are stored as they are (no
    1 + w), the experts' gate and up fused in one ffn_gate_up_exps [E, 2F, D] (ExpertRows), the router's
    input scale as ffn_gate_inp.scale and its per-expert scale as ffn_down_exps.scale; the k / v tensors a
    released checkpoint holds for the kv-shared layers (which never use them) are extra bytes (_gemma4).
  * Gemma 3n (`gemma3n`; conversion/gemma.py Gemma3NModel, src/models/gemma3n.cpp): Gemma 4's PLE and kv-shared
    keys, altup.num_inputs / altup.active_idx, activation_sparsity_scale (the normal quantile of each layer's
    sparsity target), LAuReL's rank by its tensors; the AltUp projections stacked (altup_proj, altup_unembd_proj
    [n - 1, D, D]); per_layer_token_embd padded to the whole vocabulary (_gemma3n).

Every error is a GGUFError (a ValueError) naming the file and the field or tensor.
"""
from __future__ import annotations

import functools
import glob
import json
import math
import mmap
import os
import re
import struct
import warnings
from dataclasses import dataclass, field

import numpy as np


def _gg():
    """The gguf package, imported on first use (0.2 s; `import glmbench` stays light)."""
    import gguf
    return gguf

__all__ = ["GGUFError", "GGUFNotice", "GGUFFile", "GGUFTensor", "FileWeights", "read", "is_gguf", "hf_config", "file_weights",
           "folder_weights", "text_model_name", "Joined", "ExpertRows",
           "gguf_name", "un_permute", "ARCHITECTURES", "MAGIC"]

MAGIC = b"GGUF"
ARCHITECTURES = ("deepseek2", "qwen3", "qwen3moe", "qwen2", "llama", "glm4moe", "gemma2", "gemma3", "seed_oss",
                 "gpt-oss", "phi3", "glm4", "llama4", "minimax-m2", "ernie4_5-moe", "qwen2moe", "qwen3next", "qwen35",
                 "qwen35moe", "command-r", "cohere2", "nemotron_h", "nemotron_h_moe", "granitehybrid", "gemma4", "mistral3",
                 "falcon-h1", "glm-dsa", "deepseek32", "lfm2", "lfm2moe", "olmoe", "granite", "granitemoe",
                 "olmo2", "smollm3", "exaone4", "arcee", "apertus", "gemma3n", "hunyuan-dense", "hunyuan-moe", "phimoe", "deci", "exaone",
                 "ernie4_5", "dots1", "gemma", "chatglm", "afmoe", "nemotron")
# llama.cpp's DeepSeek Sparse Attention architectures (GLM-5: glm-dsa, conversion/glm.py GlmMoeDsaModel; DeepSeek-V3.2:
# deepseek32, conversion/deepseek.py DeepseekV32Model; both on DeepseekV2Model's MLA keys) -> HF model_type
DSA_ARCHITECTURES = {"glm-dsa": "glm_moe_dsa", "deepseek32": "deepseek_v32"}
# llama.cpp's glm-dsa loader (src/models/glm-dsa.cpp): a file without attention.indexer.types gets every layer a full
# indexer below a 1M-token native context (GLM-5, 5.1), else GLM_5_2_DEFAULT_INDEXER_TYPES: layers 0 and 1 full,
# then every 4th from layer 2 (the rest "shared")
GLM_5_2_CONTEXT = 1048576
# llama.cpp's hybrid architectures (Gated DeltaNet linear attention + gated GQA) -> HF model_type
HYBRID_ARCHITECTURES = {"qwen3next": "qwen3_next", "qwen35": "qwen3_5_text", "qwen35moe": "qwen3_5_moe_text"}
# llama.cpp's Mamba-2 hybrid architectures -> HF model_type (Nemotron-H 8B / Nano-9B-v2: nemotron_h; Nemotron 3
# Nano: nemotron_h_moe; Granite 4.0-H Micro / Tiny / Small: granitehybrid)
MAMBA_ARCHITECTURES = {"nemotron_h": "nemotron_h", "nemotron_h_moe": "nemotron_h", "granitehybrid": "granitemoehybrid"}
# llama.cpp's parallel hybrid (attention and Mamba-2 side by side in every layer) -> HF model_type (Falcon-H1)
PARALLEL_ARCHITECTURES = {"falcon-h1": "falcon_h1"}
# llama.cpp's LFM2 architectures (gated short convolution + GQA hybrids) -> HF model_type
SHORTCONV_ARCHITECTURES = {"lfm2": "lfm2", "lfm2moe": "lfm2_moe"}
# llama.cpp's Cohere architectures -> HF model_type (Command-R v01 / 08-2024 / R+; Command-R7B, Command-A)
COHERE_ARCHITECTURES = {"command-r": "cohere", "cohere2": "cohere2"}
# llama.cpp's cohere2 (src/models/cohere2.cpp, load_swa_pattern(ml, 4)): three of every four layers windowed
# when the file states no sliding_window_pattern (the converter writes none)
COHERE2_PATTERN = 4
# llama.cpp's exaone4 loader (src/models/exaone4.cpp): the 64-layer model (EXAONE 4.0 32B) windows 4096 tokens on all
# but every 4th layer where the file states no window or pattern
EXAONE4_WINDOW, EXAONE4_PATTERN = 4096, 4
# llama.cpp's Llama 4 (src/llama-model.cpp, LLM_ARCH_LLAMA4): chunked attention of 8192 tokens on three
# of every four layers, a constant of the loader, not a metadata key ("currently it's the same for
# Scout and Maverick"); a file with llama4.attention.sliding_window = 0 (all layers global) turns it off
LLAMA4_CHUNK, LLAMA4_PATTERN = 8192, 4
# GGUF value types by id (the values of gguf.GGUFValueType; tests/test_gguf.py checks they agree)
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NP = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}


class GGUFError(ValueError):
    """A GGUF file that cannot be read: the message names the file and the field or tensor."""


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    ggml_type: int
    type_name: str           # gguf.GGMLQuantizationType name: "Q4_K", "F16", "BF16"...
    shape: tuple             # NumPy order (the reversed ggml ne)
    offset: int              # absolute byte offset of the data in the file
    n_bytes: int             # exact stored bytes (GGML_QUANT_SIZES)
    file: str = ""           # the file holding the data (a split model's part; "" = GGUFFile.path)


class GGUFFile:
    """The parsed header of a GGUF file. `metadata`: key -> value (strings decoded, numeric arrays
    as NumPy arrays; string arrays as tuples, decoded on first access of `array(key)`)."""

    def __init__(self, path, version, metadata, arrays, tensors, data_offset, size, parts=()):
        self.path, self.version, self.metadata = path, version, metadata
        self._arrays = arrays                     # key -> (offset, count) of string arrays not yet decoded
        self.tensors: dict[str, GGUFTensor] = tensors
        self.data_offset, self.file_size = data_offset, size
        self.parts: tuple = tuple(parts) or (path,)   # a split model's files, first to last
        # a vision-language model's text GGUF (read: VL_TEXT_ARCHITECTURES): the file's own architecture, read as
        # its text one; "" for any other
        self.vision_architecture = ""

    @property
    def architecture(self) -> str:
        return self.metadata.get("general.architecture", "")

    def get(self, key: str, default=None):
        return self.metadata.get(key, default)

    def array(self, key: str):
        """A metadata array (string arrays decoded now; e.g. tokenizer.ggml.tokens)."""
        if key in self._arrays:
            off, count = self._arrays.pop(key)
            with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                out = []
                for _ in range(count):
                    n = struct.unpack_from("<Q", mm, off)[0]
                    out.append(bytes(mm[off + 8: off + 8 + n]).decode("utf-8", "replace"))
                    off += 8 + n
            self.metadata[key] = tuple(out)
        return self.metadata[key]

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors.values())

    def tensor_data(self, name: str) -> np.ndarray:
        """The stored data of tensor `name`, memory-mapped (read-only, nothing copied): float32 /
        float16 arrays of its shape for F32/F16, uint16 bfloat16 bits for BF16, else uint8 ggml
        blocks [..., row bytes]."""
        t = self.tensors.get(name)
        if t is None:
            raise GGUFError(f"{self.path}: no tensor {name!r}")
        mm = np.memmap(t.file or self.path, dtype=np.uint8, mode="r", offset=t.offset, shape=(t.n_bytes,))
        gg = _gg()
        T = gg.GGMLQuantizationType
        if t.ggml_type in (T.F32, T.F16, T.BF16):
            dt = {T.F32: np.float32, T.F16: np.float16, T.BF16: np.uint16}[T(t.ggml_type)]
            return mm.view(dt).reshape(t.shape)
        block, bb = gg.GGML_QUANT_SIZES[T(t.ggml_type)]
        return mm.reshape(t.shape[:-1] + (t.shape[-1] // block * bb,))


def is_gguf(path) -> bool:
    """True when `path` is a file starting with the GGUF magic (or named *.gguf)."""
    p = os.fspath(path)
    if not os.path.isfile(p):
        return False
    if p.lower().endswith(".gguf"):
        return True
    try:
        with open(p, "rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False


class _Cursor:
    def __init__(self, mm, path, size):
        self.mm, self.path, self.size, self.pos = mm, path, size, 0

    def need(self, n, what):
        if self.pos + n > self.size:
            raise GGUFError(f"{self.path}: truncated: {what} needs bytes {self.pos}..{self.pos + n} "
                            f"but the file has {self.size}")

    def scalar(self, fmt, what):
        n = struct.calcsize(fmt)
        self.need(n, what)
        v = struct.unpack_from(fmt, self.mm, self.pos)[0]
        self.pos += n
        return v

    def string(self, what):
        n = self.scalar("<Q", what + " (length)")
        if n > self.size:
            raise GGUFError(f"{self.path}: corrupt: {what} claims a string of {n} bytes (file is {self.size})")
        self.need(n, what)
        b = bytes(self.mm[self.pos:self.pos + n])
        self.pos += n
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFError(f"{self.path}: {what} is not valid UTF-8") from None

    def value(self, vtype, key):
        what = f"metadata {key!r}"
        vt = vtype
        if vt not in _SCALAR and vt not in (_STRING, _ARRAY):
            raise GGUFError(f"{self.path}: metadata {key!r} has unknown value type {vtype}")
        if vt == _STRING:
            return self.string(what)
        if vt == _ARRAY:
            et = self.scalar("<I", what + " (array type)")
            count = self.scalar("<Q", what + " (array length)")
            if et not in _NP and et not in (_STRING, _ARRAY):
                raise GGUFError(f"{self.path}: metadata {key!r} is an array of unknown value type {et}")
            if count > self.size:
                raise GGUFError(f"{self.path}: corrupt: metadata {key!r} claims {count} items (file is {self.size} bytes)")
            if et in _NP:
                dt = np.dtype(_NP[et])
                self.need(count * dt.itemsize, what)
                a = np.frombuffer(self.mm, dtype=dt, count=count, offset=self.pos).copy()
                self.pos += count * dt.itemsize
                return a
            if et == _STRING:  # skip over now (lengths only); decoded by GGUFFile.array
                start = pos = self.pos
                u, mm = _U64.unpack_from, self.mm
                try:
                    for _ in range(count):   # the hot loop of a 150k-token vocabulary: nothing else in it
                        pos += 8 + u(mm, pos)[0]
                except (struct.error, OverflowError):   # (a corrupt length past 2^63: OverflowError)
                    pos = self.size + 1
                if pos > self.size:
                    raise GGUFError(f"{self.path}: truncated: {what} ({count} strings from byte {start}) runs past "
                                    f"the end of the file ({self.size} bytes)")
                self.pos = pos
                return ("__strings__", start, count)
            raise GGUFError(f"{self.path}: metadata {key!r}: nested arrays are not supported")
        v = self.scalar(_SCALAR[vt], what)
        if vt == 6:  # float32: the shortest decimal that rounds to it (1e-05, not 9.99999974e-06)
            v = float(str(np.float32(v)))
        return v


SPLIT_NAME = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def split_part_path(prefix: str, no: int, count: int) -> str:
    """llama.cpp's name of part `no` (0-based) of a `count`-part model (llama_split_path):
    PREFIX-00001-of-00003.gguf."""
    return f"{prefix}-{no + 1:05d}-of-{count:05d}.gguf"


# llama.cpp's vision-language architectures whose GGUF holds the text model only (the vision tower and projector are
# the separate mmproj file): conversion/qwen.py Qwen2VLModel (qwen2vl: Qwen2-VL, Qwen2.5-VL), conversion/qwen3vl.py
# Qwen3VLTextModel / Qwen3VLMoeTextModel (qwen3vl, qwen3vlmoe) write the text model's tensors under their text
# architecture's names, with the rope's mrope dimension_sections (on text tokens plain rope) and Qwen3-VL's
# n_deepstack_layers (the vision features added to the first layers' inputs, no text weights): read as the text
# architecture, each `{vl}.` metadata key also as `{text}.`. (GLM-4.1V / GLM-4.5V convert to glm4 / glm4moe: as those.)
VL_TEXT_ARCHITECTURES = {"qwen2vl": "qwen2", "qwen3vl": "qwen3", "qwen3vlmoe": "qwen3moe"}


def read(path) -> GGUFFile:
    """GGUFFile of `path` (_read: a split model's parts together); a vision-language architecture's text GGUF
    (VL_TEXT_ARCHITECTURES) as its text architecture's, `vision_architecture` naming the file's own."""
    g = _read(path)
    vl = g.architecture
    if vl in VL_TEXT_ARCHITECTURES:
        text = VL_TEXT_ARCHITECTURES[vl]
        for k in [k for k in g.metadata if k.startswith(vl + ".")]:
            g.metadata.setdefault(text + k[len(vl):], g.metadata[k])
        g.metadata["general.architecture"] = text
        g.vision_architecture = vl
    return g


def _read(path) -> GGUFFile:
    """Parse the header of GGUF file `path` (memory-mapped; no tensor data is read). Checks the
    magic, the version, every metadata value, every tensor's type and that its data lies inside
    the file; a GGUFError names the file and the field or tensor otherwise.

    A split model (gguf-split / the converter's --split-max-tensors: metadata `split.count` > 1,
    parts named PREFIX-0000N-of-0000M.gguf) is read from its first part as llama.cpp loads it:
    the metadata is the first part's, the tensors every part's (each GGUFTensor names its file);
    a missing part, or one whose `split.no`/`split.count` disagree, is a GGUFError naming it."""
    g = _read_one(path)
    count = g.get("split.count")
    if count is None or count == 1:
        return g
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise GGUFError(f"{g.path}: metadata 'split.count' must be a positive integer, got {count!r}")
    no = g.get("split.no", 0)
    m = SPLIT_NAME.match(os.path.basename(g.path))
    if no != 0:
        first = split_part_path(os.path.join(os.path.dirname(g.path), m.group("prefix")), 0, count) if m else None
        raise GGUFError(f"{g.path}: part {no + 1} of a {count}-part model (metadata 'split.no' = {no}); give the "
                        f"first part{f' ({first})' if first else ''}, which loads them all")
    if not m:
        raise GGUFError(f"{g.path}: metadata 'split.count' = {count} but the file is not named like llama.cpp's "
                        f"parts (PREFIX-00001-of-{count:05d}.gguf), so its other parts cannot be found")
    prefix = os.path.join(os.path.dirname(g.path), m.group("prefix"))
    tensors, parts, size = dict(g.tensors), [g.path], g.file_size
    for i in range(1, count):
        q = split_part_path(prefix, i, count)
        if not os.path.isfile(q):
            raise GGUFError(f"{q}: part {i + 1} of {count} of the split model {g.path} is missing")
        part = _read_one(q)
        if part.get("split.count") != count or part.get("split.no") != i:
            raise GGUFError(f"{q}: metadata 'split.no' = {part.get('split.no')!r}, 'split.count' = "
                            f"{part.get('split.count')!r}; part {i + 1} of {count} of {g.path} needs "
                            f"{i} and {count}")
        for name, t in part.tensors.items():
            if name in tensors:
                raise GGUFError(f"{q}: tensor {name!r} is also in {tensors[name].file or g.path}")
            tensors[name] = t
        parts.append(q)
        size += part.file_size
    want = g.get("split.tensors.count")
    if isinstance(want, int) and not isinstance(want, bool) and want != len(tensors):
        raise GGUFError(f"{g.path}: metadata 'split.tensors.count' = {want} but the {count} parts hold "
                        f"{len(tensors)} tensors")
    return GGUFFile(g.path, g.version, g.metadata, g._arrays, tensors, g.data_offset, size, parts)


def _read_one(path) -> GGUFFile:
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        f = open(p, "rb")
    except OSError as e:
        raise GGUFError(f"{p}: cannot open: {e.strerror}") from None
    with f:
        if size < 24:
            head = f.read(4)
            if head != MAGIC:
                raise GGUFError(f"{p}: not a GGUF file (magic {head!r}, expected {MAGIC!r})")
            raise GGUFError(f"{p}: truncated: the GGUF header needs 24 bytes, the file has {size}")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse(mm, p, size)


def _parse(mm, p, size) -> GGUFFile:
    c = _Cursor(mm, p, size)
    if mm[:4] != MAGIC:
        raise GGUFError(f"{p}: not a GGUF file (magic {bytes(mm[:4])!r}, expected {MAGIC!r})")
    c.pos = 4
    version = c.scalar("<I", "version")
    if version & 0xFFFF == 0:
        raise GGUFError(f"{p}: big-endian GGUF files are not supported")
    if version not in (2, 3):
        raise GGUFError(f"{p}: GGUF version {version} is not supported (2 or 3)")
    n_tensors = c.scalar("<Q", "tensor_count")
    n_kv = c.scalar("<Q", "metadata_kv_count")
    if n_tensors > size or n_kv > size:
        raise GGUFError(f"{p}: corrupt header: tensor_count={n_tensors}, metadata_kv_count={n_kv}")
    meta, arrays = {}, {}
    for i in range(n_kv):
        key = c.string(f"metadata key #{i}")
        vtype = c.scalar("<I", f"metadata {key!r} (type)")
        v = c.value(vtype, key)
        if isinstance(v, tuple) and v and v[0] == "__strings__":
            arrays[key] = (v[1], v[2])
            v = None
        meta[key] = v
    align = meta.get("general.alignment", 32)
    if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1):
        raise GGUFError(f"{p}: metadata 'general.alignment' must be a power of two, got {align!r}")
    infos = []
    gg = _gg()
    T = gg.GGMLQuantizationType
    for i in range(n_tensors):
        name = c.string(f"tensor #{i} name")
        nd = c.scalar("<I", f"tensor {name!r} n_dims")
        if not 1 <= nd <= 4:
            raise GGUFError(f"{p}: tensor {name!r} has {nd} dimensions (1 to 4 allowed)")
        ne = [c.scalar("<Q", f"tensor {name!r} dims") for _ in range(nd)]
        tid = c.scalar("<I", f"tensor {name!r} type")
        off = c.scalar("<Q", f"tensor {name!r} offset")
        try:
            tt = T(tid)
        except ValueError:
            raise GGUFError(f"{p}: tensor {name!r} has unknown ggml type {tid}") from None
        block, bb = gg.GGML_QUANT_SIZES[tt]
        if ne[0] % block:
            raise GGUFError(f"{p}: tensor {name!r} rows of {ne[0]} are not whole {tt.name} blocks of {block}")
        n = 1
        for d in ne:
            n *= d
        infos.append((name, int(tid), tt.name, tuple(reversed(ne)), off, n // block * bb))
    data_offset = (c.pos + align - 1) // align * align
    tensors = {}
    expect = 0   # ggml's gguf reader: each tensor's data right after the one before, padded to the alignment
    for name, tid, tname, shape, off, nb in infos:
        if name in tensors:
            raise GGUFError(f"{p}: tensor {name!r} appears twice")
        if off != expect:   # (else tensors may overlap: another tensor's bytes read as this one's)
            raise GGUFError(f"{p}: corrupt: tensor {name!r} has data offset {off}, expected {expect} (llama.cpp "
                            f"requires each tensor's data to follow the one before it)")
        expect += (nb + align - 1) // align * align
        start = data_offset + off
        if start + nb > size:
            raise GGUFError(f"{p}: truncated: tensor {name!r} ({tname}, {nb} bytes at {start}) runs past the "
                            f"end of the file ({size} bytes)")
        tensors[name] = GGUFTensor(name, tid, tname, shape, start, nb, p)
    return GGUFFile(p, version, meta, arrays, tensors, data_offset, size)


# ---- metadata -> HF config ----------------------------------------------------------------------
class _Meta:
    def __init__(self, g: GGUFFile):
        self.g, self.arch = g, g.architecture

    def __call__(self, key, default=None, *, required=False, kind=int, minimum=None):
        k = key.format(arch=self.arch) if "{arch}" in key else f"{self.arch}.{key}"
        v = self.g.metadata.get(k)
        if v is None:
            if required:
                raise GGUFError(f"{self.g.path}: metadata {k!r} is missing ({self.arch} needs it)")
            return default
        if kind is int:
            if isinstance(v, np.ndarray):   # per-layer arrays (e.g. head_count_kv): all equal here
                if v.size == 0 or (v != v.flat[0]).any():
                    raise GGUFError(f"{self.g.path}: metadata {k!r} varies per layer ({v.tolist()}); not supported")
                v = v.flat[0]
            if isinstance(v, (bool, str)) or not float(v).is_integer():
                raise GGUFError(f"{self.g.path}: metadata {k!r} must be an integer, got {v!r}")
            if minimum is not None and v < minimum:
                raise GGUFError(f"{self.g.path}: metadata {k!r} = {int(v)} must be >= {minimum}")
            return int(v)
        if kind is float:
            if isinstance(v, (bool, str, np.ndarray)):
                raise GGUFError(f"{self.g.path}: metadata {k!r} must be a number, got {v!r}")
            return float(v)
        if kind is bool:
            if not isinstance(v, (bool, np.bool_)):
                raise GGUFError(f"{self.g.path}: metadata {k!r} must be a bool, got {v!r}")
            return bool(v)
        return v


def _vl_keys(fn):
    """A vision-language text GGUF's errors name the keys the file holds (`'qwen3vl.block_count'`), not the
    text architecture's it is read under (read: VL_TEXT_ARCHITECTURES)."""
    @functools.wraps(fn)
    def wrapped(g: GGUFFile):
        try:
            return fn(g)
        except GGUFError as e:
            vl = g.vision_architecture
            if not vl:
                raise
            text = VL_TEXT_ARCHITECTURES[vl]
            msg = re.sub(r"'" + re.escape(text) + r"\.", "'" + vl + ".", str(e))
            raise GGUFError(f"{msg} (the file's architecture {vl!r}, read as {text!r})") from None
    return wrapped


@_vl_keys
def hf_config(g: GGUFFile) -> dict:
    """The GGUF metadata as an HF config.json-like dict (`model_type` and the fields
    glmbench.models.configs.from_hf reads). deepseek2 files become `glm4_moe_lite` when the
    router is sigmoid (expert_gating_func 2: GLM-4.7-Flash, and DeepSeek-V3 routes the same
    way) and `deepseek_v2` when it is softmax; qwen3moe -> qwen3_moe, qwen2 -> qwen2,
    llama -> llama (mixtral when it has experts), glm4moe -> glm4_moe, phi3 -> phi3; the hybrids
    qwen3next -> qwen3_next, qwen35 -> qwen3_5_text, qwen35moe -> qwen3_5_moe_text (_hybrid); the Cohere
    architectures command-r -> cohere, cohere2 -> cohere2 (_cohere); the Mamba-2 hybrids nemotron_h /
    nemotron_h_moe -> nemotron_h, granitehybrid -> granitemoehybrid (_mamba); gemma4 -> gemma4_text (_gemma4);
    gemma3n -> gemma3n_text (_gemma3n); falcon-h1 -> falcon_h1 (_falcon_h1); lfm2 -> lfm2, lfm2moe -> lfm2_moe (_lfm2); olmoe, granite, granitemoe as
    named; olmo2 -> olmo2 (olmo3 where the file states a window), exaone4 -> exaone4 (_post_norm); smollm3; arcee;
    apertus (its xIELU parameters from the xielu.* keys: xielu_params);
    hunyuan-dense -> hunyuan_v1_dense, hunyuan-moe -> hunyuan_v1_moe, phimoe -> phimoe; deci -> nemotron-nas
    (_deci: per-layer head_count / head_count_kv / feed_forward_length as block_configs), exaone -> exaone,
    ernie4_5 -> ernie4_5, dots1 -> dots1 (dots.llm1: sigmoid routing, expert_gating_func 2, assumed with a notice
    where the file does not state it), gemma -> gemma,
    chatglm -> glm."""
    arch = g.architecture
    if not arch:
        raise GGUFError(f"{g.path}: metadata 'general.architecture' is missing")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{g.path}: metadata 'general.architecture' = {arch!r} is not supported "
                        f"(supported: {', '.join(ARCHITECTURES)})")
    m = _Meta(g)
    ts = g.tensors
    nextn = m("nextn_predict_layers", 0, minimum=0)
    blocks = m("block_count", required=True, minimum=1)
    from glmbench.vocab import MAX_CONFIG
    if blocks > MAX_CONFIG["num_hidden_layers"]:   # (before the loops over the blocks: a corrupt count hung them)
        raise GGUFError(f"{g.path}: metadata '{arch}.block_count' = {blocks:,} is larger than any real model's (at most "
                        f"{MAX_CONFIG['num_hidden_layers']:,} layers)")
    L = blocks - nextn
    if L < 1:
        raise GGUFError(f"{g.path}: metadata '{arch}.block_count' = {blocks} leaves no decoder layer after the "
                        f"'{arch}.nextn_predict_layers' = {nextn} multi-token-prediction layers")
    D = m("embedding_length", required=True, minimum=1)
    groups = m("expert_group_count", 0, minimum=0)
    if groups > 1:
        # llama.cpp's load_hparams asserts these (an abort, not a load): the experts split evenly into the groups,
        # at least one group and fewer than all of them chosen
        E, used = m("expert_count", minimum=0), m("expert_group_used_count", 0, minimum=0)
        if E is not None and (E % groups or groups >= E):   # (no expert_count: named missing by the family's reader)
            raise GGUFError(f"{g.path}: metadata '{arch}.expert_group_count' = {groups} does not split "
                            f"'{arch}.expert_count' = {E} experts into groups (llama.cpp's loader asserts it does)")
        if not 0 < used < groups:
            raise GGUFError(f"{g.path}: metadata '{arch}.expert_group_used_count' = {used} must be at least 1 and "
                            f"fewer than '{arch}.expert_group_count' = {groups} (llama.cpp's loader asserts it)")
    if arch in ("llama", "deci"):
        # llama.cpp's load_hparams refuses a llama / deci file that rotates part of the head ("invalid n_rot")
        h0 = g.metadata.get(f"{arch}.attention.head_count")
        h0 = int(np.asarray(h0).reshape(-1)[0]) if isinstance(h0, (np.ndarray, int, np.integer)) and \
            np.asarray(h0).size else 0
        rot = m("rope.dimension_count")
        if h0 > 0 and rot is not None:
            k_len = m("attention.key_length") or D // h0
            if rot != k_len:
                raise GGUFError(f"{g.path}: metadata '{arch}.rope.dimension_count' = {rot} is not the head dim {k_len} "
                                f"('{arch}.attention.key_length', else embedding_length / head_count): llama.cpp's "
                                f"{arch} loader refuses it (invalid n_rot; {arch} rotates the whole head)")
    # (deci: head_count per layer, 0 on the attention-free layers: the query heads are the largest)
    H = m("attention.head_count", required=True, minimum=1) if arch != "deci" else \
        max(_layer_ints(g, "attention.head_count", blocks))
    if H < 1:
        raise GGUFError(f"{g.path}: metadata '{arch}.attention.head_count' is 0 on every layer")
    emb = ts.get("token_embd.weight")
    tok = g._arrays.get("tokenizer.ggml.tokens")
    n_tok = tok[1] if tok else (len(g.metadata["tokenizer.ggml.tokens"])
                                if isinstance(g.metadata.get("tokenizer.ggml.tokens"), (tuple, list)) else None)
    if n_tok is not None and emb is not None and len(emb.shape) == 2 and emb.shape[0] != n_tok:
        # (llama.cpp sizes the vocabulary by the tokenizer, LLAMA_LOAD_LOCALS' n_vocab = vocab.n_tokens(), and creates
        # token_embd {n_embd, n_vocab}: another row count is a tensor of the wrong shape there)
        raise GGUFError(f"{g.path}: tensor 'token_embd.weight' has {emb.shape[0]:,} rows but the tokenizer "
                        f"('tokenizer.ggml.tokens') {n_tok:,} tokens: llama.cpp sizes the vocabulary by the tokenizer "
                        f"and refuses the file")
    V = m("vocab_size", minimum=1)
    if V is None:
        if emb is None:
            raise GGUFError(f"{g.path}: neither metadata '{arch}.vocab_size' nor tensor 'token_embd.weight' gives "
                            f"the vocabulary size")
        V = emb.shape[0]
    # (llama.cpp's loaders read the RMS epsilon with get_key, required, but where a family's norms are LayerNorms:
    # Cohere's, Nemotron's, Nemotron-H's, read there)
    own_eps = arch in ("command-r", "cohere2", "nemotron", "nemotron_h", "nemotron_h_moe")
    hf = {"_name_or_path": g.get("general.name") or os.path.splitext(os.path.basename(g.path))[0],
          "num_hidden_layers": L, "hidden_size": D, "num_attention_heads": H, "vocab_size": V,
          "rms_norm_eps": m("attention.layer_norm_rms_epsilon", 1e-6 if own_eps else None, required=not own_eps,
                            kind=float),
          "rope_theta": m("rope.freq_base", 10000.0, kind=float),
          "tie_word_embeddings": "output.weight" not in ts,
          # (llama.cpp's loader requires it: a file without it does not load)
          "max_position_embeddings": m("context_length", required=True, minimum=1), "hidden_act": "silu",
          "gguf_architecture": arch, "num_nextn_predict_layers": nextn}
    # rope scaling as llama.cpp's load_hparams reads it: the factor from rope.scaling.factor, else the old key
    # rope.scale_linear; the type from rope.scaling.type, "linear" where the file states none (a factor alone is
    # linear scaling there); a type llama.cpp does not know (none / linear / yarn / longrope) it refuses (an assert)
    st = m("rope.scaling.type", kind=str)
    factor = m("rope.scaling.factor", kind=float)
    if factor is None:
        factor = m("rope.scale_linear", kind=float)
    if st is None and factor not in (None, 0.0, 1.0):
        st = "linear"
    if st is not None and st not in ("none", "linear", "yarn", "longrope"):
        raise GGUFError(f"{g.path}: metadata '{arch}.rope.scaling.type' = {st!r} is not a rope scaling llama.cpp knows "
                        f"(none, linear, yarn, longrope)")
    if st and st != "none":
        rs = {"rope_type": st, "factor": factor or 1.0}
        orig = m("rope.scaling.original_context_length")
        if orig:
            rs["original_max_position_embeddings"] = orig
        lm = m("rope.scaling.yarn_log_multiplier", kind=float)
        if lm and (arch == "deepseek2" or arch in DSA_ARCHITECTURES):
            # DeepSeek's converter writes 0.1 * mscale_all_dim, which its loader divides by 0.1 again, and takes
            # mscale == mscale_all_dim (llama-context.cpp's TAG_DEEPSEEK2_YARN_LOG_MUL_FIX)
            rs["mscale"] = rs["mscale_all_dim"] = lm / 0.1
        elif lm and arch == "mistral3":
            # Ministral 3's: mscale_all_dim as it is (conversion/mistral3.py), mscale 1 (llama-context.cpp);
            # llama.cpp's other loaders never read the key
            rs["mscale_all_dim"], rs["mscale"] = lm, 1.0
        # the YaRN ramp's betas: read by llama.cpp's mistral3 (and grok) loaders only (src/models/mistral3.cpp's
        # get_key); every other takes llama-hparams.h's 32 and 1 whatever the file says (the converter writes HF's
        # beta_fast / beta_slow for any model whose rope_parameters has them), HF's defaults as well
        for k in ("beta_fast", "beta_slow"):
            v = m(f"rope.scaling.yarn_{k}", kind=float) if arch == "mistral3" else None
            if v:
                rs[k] = v
        hf["rope_scaling"] = rs
    if arch in OUTPUT_REQUIRED and "output.weight" not in ts:
        raise GGUFError(f"{g.path}: tensor 'output.weight' is missing (llama.cpp's {arch} loader requires the output "
                        f"matrix: it does not tie it to token_embd)")
    if "rope_freqs.weight" in ts and arch not in ROPE_FREQS_ARCHITECTURES:
        raise GGUFError(f"{g.path}: tensor 'rope_freqs.weight' (llama3-style rope factors) is in a {arch} file, whose "
                        f"llama.cpp loader does not take it (llama.cpp refuses the file: a tensor it does not create)")
    if "rope_freqs.weight" in ts and arch != "gemma4":   # (Gemma 4's: its proportional rope, read by _gemma4)
        # llama3-style rope scaling: the converter stores the per-pair frequency divisors as a
        # tensor (LlamaModel.generate_extra_tensors) and writes no rope.scaling keys; llama.cpp
        # divides each pair's frequency by its factor. Read them (a few floats) into the config.
        hf["rope_scaling"] = {"rope_type": "freq_factors", "freq_factors": _rope_factors(g)}
    if arch in MAMBA_ARCHITECTURES:   # (per-layer head_count_kv / feed_forward_length arrays: read there)
        return _mamba(g, m, hf, L, blocks)
    if arch == "gemma4":   # (per-layer head_count_kv / feed_forward_length arrays: read there)
        return _gemma4(g, m, hf, L)
    if arch == "gemma3n":
        return _gemma3n(g, m, hf, L)
    if arch in SHORTCONV_ARCHITECTURES:   # (per-layer head_count_kv, 0 on the conv layers: read there)
        return _lfm2(g, m, hf, L, blocks)
    if arch == "deci":   # (per-layer head_count / head_count_kv / feed_forward_length arrays: read there)
        return _deci(g, m, hf, L, blocks)
    F = m("feed_forward_length", 0)
    if F:
        hf["intermediate_size"] = F
    blk = lambda i, n: f"blk.{i}.{n}.weight"
    if arch == "deepseek2" or arch in DSA_ARCHITECTURES:
        Dr = m("rope.dimension_count", required=True)
        if m("attention.key_length_mla") is not None:
            qk, Dv = m("attention.key_length_mla"), m("attention.value_length_mla", required=True)
        else:
            qk, Dv = m("attention.key_length", required=True), m("attention.value_length", required=True)
        # (deepseek32's loader requires the key, llama.cpp's get_key without a default: "key not found in model";
        # glm-dsa's takes sigmoid where it is unset)
        gating = m("expert_gating_func")
        if gating is None and arch == "deepseek32":
            # the converter writes it only from config.json's scoring_func (conversion/base.py), which DeepSeek-V3.2's
            # released config states ("sigmoid") and transformers' DeepseekV32Config does not save
            raise GGUFError(f"{g.path}: metadata 'deepseek32.expert_gating_func' is missing; llama.cpp's deepseek32 "
                            f"loader requires it (it refuses the file too: 'key not found in model'). The converter "
                            f"writes it only where config.json states scoring_func (DeepSeek-V3.2's: \"sigmoid\"; a "
                            f"config saved by transformers' DeepseekV32Config has none): add it and convert again")
        if gating in (None, 0) and arch in DSA_ARCHITECTURES:
            gating = 2
        if gating in (None, 0):   # 0 is llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_NONE: unset, as missing
            gating, why = _assumed_gating(g, L, ts)
            _notice(hf, f"{g.path}: no metadata 'deepseek2.expert_gating_func'; {why}")
        if gating not in (1, 2):
            raise GGUFError(f"{g.path}: metadata '{arch}.expert_gating_func' = {gating} is not 1 (softmax) "
                            f"or 2 (sigmoid)")
        n_group = m("expert_group_count", 1) or 1
        hf.update(q_lora_rank=m("attention.q_lora_rank") or None, kv_lora_rank=m("attention.kv_lora_rank", required=True),
                  qk_rope_head_dim=Dr, qk_nope_head_dim=qk - Dr, v_head_dim=Dv, num_key_value_heads=H,
                  n_routed_experts=m("expert_count", required=True), num_experts_per_tok=m("expert_used_count", required=True),
                  moe_intermediate_size=m("expert_feed_forward_length", required=True),
                  n_shared_experts=_shared_experts(g, m), first_k_dense_replace=m("leading_dense_block_count", 0),
                  routed_scaling_factor=m("expert_weights_scale", 0.0, kind=float) or 1.0,   # (llama.cpp: 0 unscaled)
                  norm_topk_prob=m("expert_weights_norm", False, kind=bool), n_group=n_group,
                  topk_group=m("expert_group_used_count", 1) or 1,
                  attention_bias=blk(0, "attn_kv_a_mqa").replace("weight", "bias") in ts)
        if arch in DSA_ARCHITECTURES:
            return _dsa(g, m, hf, L, gating)
        if gating == 2:
            hf.update(model_type="glm4_moe_lite", topk_method="noaux_tc", rope_interleave=True)
        else:
            hf.update(model_type="deepseek_v2", scoring_func="softmax",
                      topk_method="group_limited_greedy" if n_group > 1 else "greedy")
        return hf
    # GQA families
    n_kv = m("attention.head_count_kv", H, minimum=1)
    hd = _gqa_head_dim(g, m, H, D, n_kv)
    hf.update(num_key_value_heads=n_kv, head_dim=hd,
              attention_bias=blk(0, "attn_q").replace("weight", "bias") in ts)
    rd = m("rope.dimension_count")
    if rd and rd != hd:
        hf["partial_rotary_factor"] = rd / hd
    if arch in HYBRID_ARCHITECTURES:
        return _hybrid(g, m, hf, L, blocks, hd, rd)
    if arch in PARALLEL_ARCHITECTURES:
        return _falcon_h1(g, m, hf)
    if arch in COHERE_ARCHITECTURES:
        return _cohere(g, m, hf, L)
    if arch in ("qwen3moe", "glm4moe"):
        E = m("expert_count", required=True)
        hf.update(num_experts_per_tok=m("expert_used_count", required=True),
                  moe_intermediate_size=m("expert_feed_forward_length", required=True))
        dense = [i for i in range(L) if blk(i, "ffn_gate_exps") not in ts]
        if arch == "qwen3moe":
            # llama.cpp's qwen3moe graph always renormalises the top-k weights (build_moe_ffn's norm_w true; its
            # loader never reads expert_weights_norm, which the converter does not write)
            if not m("expert_weights_norm", True, kind=bool):
                _notice(hf, f"{g.path}: metadata 'qwen3moe.expert_weights_norm' = false is not read: llama.cpp's "
                            f"qwen3moe always renormalises the top-k weights, and so does glmbench")
            hf.update(model_type="qwen3_moe", num_experts=E, decoder_sparse_step=1, mlp_only_layers=dense,
                      norm_topk_prob=True)
        else:
            # llama.cpp's glm4moe (src/models/glm4-moe.cpp): sigmoid where expert_gating_func is absent or 2 (a
            # softmax router is not GLM-4.5's: refused), the top-k weights renormalised only where
            # expert_weights_norm says so (absent: false, as its loader leaves it)
            gating = m("expert_gating_func", 0)
            if gating not in (0, 2):
                raise GGUFError(f"{g.path}: metadata 'glm4moe.expert_gating_func' = {gating} is not 2 (sigmoid): "
                                f"GLM-4.5's router is sigmoid with a score-correction bias")
            hf.update(model_type="glm4_moe", n_routed_experts=E, n_shared_experts=_shared_experts(g, m),
                      first_k_dense_replace=m("leading_dense_block_count", 0),
                      routed_scaling_factor=m("expert_weights_scale", 0.0, kind=float) or 1.0,
                      norm_topk_prob=m("expert_weights_norm", False, kind=bool),
                      n_group=m("expert_group_count", 1) or 1, topk_group=m("expert_group_used_count", 1) or 1,
                      use_qk_norm=blk(0, "attn_q_norm") in ts)
        return hf
    if arch == "dots1":
        # conversion/dots1.py Dots1Model (Qwen2MoeModel's keys, a TextModel: q / k rows not permuted, NEOX rope is HF's
        # rotate_half; src/models/dots1.cpp): per-head q / k norms before rope, leading_dense_block_count dense layers,
        # then expert_count experts of expert_feed_forward_length (the selection biased by exp_probs_b, groups by
        # expert_group_count / _used_count as llama.cpp's build_moe_ffn takes them) beside expert_shared_count shared
        # ones of that width; expert_weights_norm / _scale (llama.cpp's 0: unscaled). llama.cpp's dots1 reads no window.
        # The converter writes expert_gating_func only where config.json's scoring_func is "sigmoid" or "softmax"
        # (conversion/base.py): without it llama.cpp's dots1 leaves the gating unset (LLAMA_EXPERT_GATING_FUNC_TYPE_NONE,
        # which its build_moe_ffn aborts on); HF's Dots1TopkRouter is sigmoid whatever the config says
        gating = m("expert_gating_func", 0)
        if gating == 0:
            _notice(hf, f"{g.path}: no metadata 'dots1.expert_gating_func'; assumed sigmoid routing, as HF's Dots1 "
                        f"routes (llama.cpp's dots1 graph needs the key: the converter writes it only where config.json "
                        f"states scoring_func 'sigmoid')")
        elif gating != 2:
            raise GGUFError(f"{g.path}: metadata 'dots1.expert_gating_func' = {gating} is not 2 (sigmoid): dots.llm1's "
                            f"router is sigmoid (HF Dots1TopkRouter)")
        _window_not_applied(hf, g, arch, m, "dots.llm1", "its dots1 model reads no window")
        hf.update(model_type="dots1", head_dim=hd, n_routed_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  moe_intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
                  n_shared_experts=_shared_experts(g, m),
                  first_k_dense_replace=m("leading_dense_block_count", 0, minimum=0),
                  routed_scaling_factor=m("expert_weights_scale", 0.0, kind=float) or 1.0,
                  norm_topk_prob=m("expert_weights_norm", False, kind=bool),
                  n_group=m("expert_group_count", 1) or 1, topk_group=m("expert_group_used_count", 1) or 1,
                  scoring_func="sigmoid", topk_method="noaux_tc", sliding_window=None)
        return hf
    if arch == "gemma3":
        # llama.cpp's gemma3 (src/models/gemma3.cpp): sliding_window present -> every layer but each
        # 6th (or `sliding_window_pattern`) is windowed; local rope base rope.freq_base_swa (HF's
        # default 10000 when absent); final_logit_softcapping when present. The converter adds 1 to
        # every norm weight (Gemma3RMSNorm's 1 + w), which models/checkpoint.py takes off again.
        sw = m("attention.sliding_window", minimum=0)
        if emb is not None:   # the converter drops the embedding rows past the tokenizer's vocabulary
            hf["vocab_size"] = emb.shape[0]
        # llama.cpp's attention scale: 1/sqrt(embedding_length / head_count) for the 27B (62 layers), else 1/sqrt(head dim)
        hf.update(model_type="gemma3_text", head_dim=hd, query_pre_attn_scalar=D // H if L == 62 else hd,
                  hidden_activation="gelu_pytorch_tanh", rope_local_base_freq=m("rope.freq_base_swa", 10000.0, kind=float))
        if sw:
            # (load_swa_pattern: one flag per layer, or a period, default 6)
            windowed, pat = _swa_pattern(g, m, L, 6)
            hf.update(sliding_window=sw, layer_types=["sliding_attention" if w else "full_attention" for w in windowed])
            if pat is not None:
                hf["sliding_window_pattern"] = pat
        else:
            hf.update(sliding_window=None, layer_types=["full_attention"] * L)
        cap = m("final_logit_softcapping", kind=float)
        if cap:
            hf["final_logit_softcapping"] = cap
        return hf
    if arch == "gemma":
        # llama.cpp's gemma (src/models/gemma.cpp; conversion/gemma.py GemmaModel): Llama's layer with the
        # embeddings times sqrt(embedding_length), norms stored as 1 + w (models/checkpoint.py takes the 1 off), a
        # GeGLU MLP, queries scaled by 1/sqrt(attention.key_length), NEOX rope (HF's rotate_half: q / k rows as
        # HF's); the converter drops lm_head (llama.cpp reads token_embd as the output: tied)
        hf.update(model_type="gemma", head_dim=hd, hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True)
        return hf
    if arch == "gemma2":
        # llama.cpp's gemma2 (src/models/gemma2.cpp): windows on layers 0, 2, 4... (pattern 2, default
        # window 4096), attention and final logit softcapping (its defaults 50 and 30 when absent), the
        # 27B (46 layers) scaling queries by 1/sqrt(embedding_length / head_count); norms stored as 1 + w. The
        # windowed layers turn by rope.freq_base_swa (get_key, optional; default rope.freq_base: the converter
        # writes none), read as OLMo 3's rope_parameters.sliding_attention; where it differs and the file scales its
        # rope, llama.cpp scales the windowed layers too (rope_freq_scale_train_swa), which glmbench's plain local
        # rope does not state: refused
        if emb is not None:
            hf["vocab_size"] = emb.shape[0]
        sw = m("attention.sliding_window", 4096, minimum=1)
        windowed, _ = _swa_pattern(g, m, L, 2)   # (load_swa_pattern: one flag per layer, or a period, default 2)
        base_swa = m("rope.freq_base_swa", hf["rope_theta"], kind=float)
        if base_swa != hf["rope_theta"]:
            if hf.get("rope_scaling"):
                raise GGUFError(f"{g.path}: metadata '{arch}.rope.freq_base_swa' = {base_swa} differs from "
                                f"'{arch}.rope.freq_base' = {hf['rope_theta']} in a file with rope scaling: llama.cpp "
                                f"scales the windowed layers' rope too, which glmbench does not model")
            hf["rope_parameters"] = {"sliding_attention": {"rope_type": "default", "rope_theta": base_swa}}
        hf.update(model_type="gemma2", head_dim=hd, query_pre_attn_scalar=D // H if L == 46 else hd,
                  hidden_activation="gelu_pytorch_tanh", sliding_window=sw,
                  attn_logit_softcapping=m("attn_logit_softcapping", 50.0, kind=float) or None,
                  final_logit_softcapping=m("final_logit_softcapping", 30.0, kind=float) or None,
                  layer_types=["sliding_attention" if w else "full_attention" for w in windowed])
        return hf
    if arch == "gpt-oss":
        # llama.cpp's openai-moe: every layer MoE (expert_count experts of expert_feed_forward_length,
        # biased router and experts, attention sinks), windows on layers 0, 2, 4... (pattern 2)
        sw = m("attention.sliding_window", required=True, minimum=1)
        windowed, _ = _swa_pattern(g, m, L, 2)   # (load_swa_pattern: one flag per layer, or a period, default 2)
        hf.update(model_type="gpt_oss", num_local_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
                  sliding_window=sw, attention_bias=True,
                  layer_types=["sliding_attention" if w else "full_attention" for w in windowed])
        if isinstance(hf.get("rope_scaling"), dict) and hf["rope_scaling"].get("rope_type") == "yarn":
            hf["rope_scaling"]["truncate"] = False   # HF's gpt-oss YaRN (the converter writes no key for it)
        return hf
    if arch == "seed_oss":
        hf.update(model_type="seed_oss", attention_bias=blk(0, "attn_q").replace("weight", "bias") in ts,
                  attention_out_bias=blk(0, "attn_output").replace("weight", "bias") in ts)
        return hf
    if arch == "phi3":
        # llama.cpp's phi3 model (src/models/phi3.cpp) ignores the window the converter writes ("Phi SWA
        # is currently disabled"): full attention on every layer, as here. Phi-3.5 / Phi-4-mini's 128K
        # rope (rope_factors_long / _short tensors) is HF's longrope (_longrope_scaling)
        _window_not_applied(hf, g, arch, m, "Phi-3", "its phi3 model disables the window")
        hf.update(model_type="phi3", sliding_window=None)
        if "rope_factors_long.weight" in ts or "rope_factors_short.weight" in ts:
            hf.update(_longrope_scaling(g, m, hf))
        return hf
    if arch == "llama" and m("expert_count", 0):
        # Mixtral: llama.cpp's `llama` architecture with experts in every layer (llm_build_llama's
        # MoE branch: softmax gating, the top-k weights renormalised); no window (the converter keeps none)
        hf.update(model_type="mixtral", num_local_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1), sliding_window=None)
        return hf
    if arch == "chatglm":
        # conversion/chatglm.py ChatGLMModel (GlmForCausalLM; THUDM's remote-code ChatGLMModel; src/models/chatglm.cpp):
        # q/k/v (or one fused attn_qkv) with biases, o none; rope.dimension_count of each head rotated in llama.cpp's
        # NORM pairs (2i, 2i + 1: HF glm's interleaved rope, rows as HF's), gate and up fused in one ffn_up of
        # 2 x feed_forward_length rows, gate first (RowSlices); no key_length (llama.cpp's o_proj is n_embd x n_embd:
        # the head is embedding_length / head_count). The converter writes what GlmConfig lacks as its own defaults:
        # context_length = embedding_length (no seq_length), rms eps 1e-5 (no layernorm_epsilon), rope base
        # 10000 x rope_ratio (rope_theta not read): read as the file states them, as llama.cpp runs it
        hf.update(model_type="glm", partial_rotary_factor=(rd or hd) / hd,
                  attention_bias=any(blk(0, n).replace("weight", "bias") in ts for n in ("attn_q", "attn_qkv")))
        return hf
    if arch == "glm4":
        # GLM-4-0414: q/k/v bias, half of each head rotated (rope.dimension_count), gate and up fused in
        # one ffn_up of 2 x feed_forward_length rows (read as RowSlices, as phi3's), post-norms
        hf.update(model_type="glm4", partial_rotary_factor=(rd or hd) / hd)
        return hf
    if arch in ("hunyuan-dense", "hunyuan-moe"):
        # conversion/hunyuan.py HunYuanModel / HunYuanMoEModel (src/models/hunyuan-dense.cpp, hunyuan-moe.cpp): per-head
        # q / k norms (attn_q_norm / attn_k_norm, HF's query_layernorm / key_layernorm); the converter folds the
        # NTK-alpha rope into rope.freq_base (plain rope here). hunyuan-moe: expert_count experts of
        # expert_feed_forward_length (one value, or one per layer all alike), expert_used_count of them, and a
        # shared MLP of expert_shared_feed_forward_length (llama.cpp's default: feed_forward_length), which HF
        # builds as wide as the experts (intermediate_size both)
        hf.update(model_type="hunyuan_v1_dense", head_dim=hd, attention_bias=blk(0, "attn_q").replace("weight", "bias") in ts)
        if arch == "hunyuan-moe":
            E = m("expert_count", required=True, minimum=1)
            fe = _layer_ints(g, "expert_feed_forward_length", L)
            if len(set(fe)) != 1 or not fe[0]:
                raise GGUFError(f"{g.path}: metadata '{arch}.expert_feed_forward_length' = {fe}: Hunyuan's experts "
                                f"have one width on every layer")
            fs = m("expert_shared_feed_forward_length", minimum=1) or F
            if fs != fe[0]:
                raise GGUFError(f"{g.path}: metadata '{arch}.expert_shared_feed_forward_length' = {fs} differs from the "
                                f"experts' {fe[0]} ('{arch}.expert_feed_forward_length'): HF's Hunyuan builds its shared "
                                f"MLP and experts intermediate_size wide both")
            hf.update(model_type="hunyuan_v1_moe", num_experts=E, intermediate_size=fe[0],
                      moe_topk=m("expert_used_count", required=True, minimum=1))
        return hf
    if arch == "phimoe":
        # conversion/phi.py PhiMoeModel (Phi3MiniModel's keys, src/models/phimoe.cpp): LayerNorms with biases, q/k/v/o
        # biases, an output bias (llama.cpp requires them), every layer expert_count experts of feed_forward_length;
        # llama.cpp's phimoe reads no window (full attention on every layer, as here); longrope where the file holds
        # rope_factors_long
        _window_not_applied(hf, g, arch, m, "Phi-3.5-MoE", "its phimoe model reads no window")
        hf.update(model_type="phimoe", head_dim=hd, sliding_window=None,
                  num_local_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  attention_bias=blk(0, "attn_q").replace("weight", "bias") in ts or
                  blk(0, "attn_output").replace("weight", "bias") in ts,
                  lm_head_bias="output.bias" in ts)
        if "rope_factors_long.weight" in ts or "rope_factors_short.weight" in ts:
            hf.update(_longrope_scaling(g, m, hf))
        return hf
    if arch == "olmoe":
        # conversion/olmo.py OlmoeModel (a TextModel: q / k rows not permuted, llama.cpp's NEOX rope is HF's
        # rotate_half; the rms eps written as 1e-5 whatever the config says): every layer MoE of
        # feed_forward_length, q / k RMSNorms over all heads (attn_q_norm / attn_k_norm); llama.cpp's olmoe graph
        # never renormalises the top-k weights (src/models/olmoe.cpp); clip_qkv is not written (none released)
        E = m("expert_count", required=True, minimum=1)
        fe = m("expert_feed_forward_length", minimum=1) or F or _rows_of(g, ts, "ffn_up_exps")
        if not fe:
            raise GGUFError(f"{g.path}: neither metadata '{arch}.feed_forward_length' nor a tensor "
                            f"'blk.0.ffn_up_exps.weight' gives the experts' width")
        hf.update(model_type="olmoe", num_experts=E, num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  intermediate_size=fe, norm_topk_prob=m("expert_weights_norm", False, kind=bool), clip_qkv=None)
        return hf
    if arch in ("granite", "granitemoe"):
        # conversion/granite.py GraniteModel / GraniteMoeModel (LlamaModel's permuted q / k rows; head_dim dropped):
        # the multipliers as attention.scale, embedding_scale, residual_scale and logit_scale (the logits' divisor,
        # src/models/granite.cpp; attention.scale absent: 1 / sqrt(head dim)); granitemoe's experts of
        # feed_forward_length (the gate / up rows the converter splits apart), softmax over the top-k
        if m("expert_shared_feed_forward_length", 0):
            raise GGUFError(f"{g.path}: metadata '{arch}.expert_shared_feed_forward_length' is set: Granite MoE with "
                            f"a shared expert (HF granitemoeshared) is not modelled")
        hf.update(model_type=arch, embedding_multiplier=m("embedding_scale", 0.0, kind=float) or 1.0,
                  residual_multiplier=m("residual_scale", 0.0, kind=float) or 1.0,
                  attention_multiplier=m("attention.scale", 0.0, kind=float) or 1.0 / hd ** 0.5,
                  logits_scaling=m("logit_scale", required=True, kind=float))
        if not hf["logits_scaling"]:
            # (granite.cpp's graph divides the logits by it unconditionally: llama.cpp requires the key, and 0
            # makes every logit infinite)
            raise GGUFError(f"{g.path}: metadata '{arch}.logit_scale' = 0: llama.cpp's {arch} divides the logits by it")
        # (granite.cpp's loader takes rope.scaling.finetuned = false as rope off; granitemoe's never reads the key
        # and always rotates, as HF's Granite MoE does)
        if arch == "granite" and not m("rope.scaling.finetuned", True, kind=bool):
            raise GGUFError(f"{g.path}: metadata '{arch}.rope.scaling.finetuned' = false turns rope off in llama.cpp's "
                            f"{arch}; HF's Granite 3.x always rotates (not modelled)")
        if arch == "granitemoe":
            fe = m("expert_feed_forward_length", minimum=1) or F or _rows_of(g, ts, "ffn_up_exps")
            if not fe:
                raise GGUFError(f"{g.path}: neither metadata '{arch}.feed_forward_length' nor a tensor "
                                f"'blk.0.ffn_up_exps.weight' gives the experts' width")
            hf.update(num_local_experts=m("expert_count", required=True, minimum=1),
                      num_experts_per_tok=m("expert_used_count", required=True, minimum=1), intermediate_size=fe)
        return hf
    if arch in ("olmo2", "exaone4"):
        return _post_norm(g, m, hf, L)
    if arch == "smollm3":
        # conversion/llama.py SmolLM3Model (LlamaModel's permuted q / k rows): llama.cpp's smollm3 graph rotates
        # every layer but each 4th (n_no_rope_layer_step, fixed: the file states no NoPE layers) and windows none
        hf.update(model_type="smollm3", no_rope_layer_interval=4, use_sliding_window=False, sliding_window=None)
        return hf
    if arch == "arcee":
        # conversion/llama.py ArceeModel (LlamaModel's permuted q / k rows, its rope.scaling keys for YaRN): llama.cpp's
        # arcee graph (src/models/arcee.cpp) runs the ungated MLP as relu(up x)^2 whatever the config said; its
        # optional MLP biases are HF's mlp_bias
        hf.update(model_type="arcee", hidden_act="relu2", mlp_bias=blk(0, "ffn_up").replace("weight", "bias") in ts)
        return hf
    if arch == "afmoe":
        return _afmoe(g, m, hf, L, hd)
    if arch == "nemotron":
        # conversion/nemotron.py NemotronModel (a TextModel: q / k rows as HF's, llama.cpp's NEOX rope is HF's
        # rotate_half; src/models/nemotron.cpp): LayerNorm1P as LayerNorms with a bias, their weights stored + 1
        # (checkpoint undoes it), the rotated dims as rope.dimension_count (HF's partial_rotary_factor, stated here
        # whatever it is: NemotronConfig's default is 0.5), eps attention.layer_norm_epsilon, linear rope scaling
        # from the rope.scaling keys, the ungated relu2 MLP with its optional biases
        eps = m("attention.layer_norm_epsilon", kind=float)
        if eps is None:
            raise GGUFError(f"{g.path}: metadata 'nemotron.attention.layer_norm_epsilon' is missing (llama.cpp's "
                            f"nemotron loader requires it)")
        if H * hd != D:
            # (llama.cpp's nemotron loader creates attn_q and attn_output {n_embd, n_embd}: a file whose heads x head
            # dim is not the hidden size, Minitron-8B's shape, has tensors of the wrong shape there, and its
            # converter writes the rotated dims from hidden / heads, not head_dim)
            raise GGUFError(f"{g.path}: metadata 'nemotron.attention.head_count' = {H} x 'nemotron.attention.key_length' "
                            f"= {hd} is not 'nemotron.embedding_length' = {D}: llama.cpp's nemotron loader requires "
                            f"heads x head dim = hidden size (attn_q and attn_output are hidden x hidden)")
        hf.update(model_type="nemotron", hidden_act="relu2", norm_eps=eps, head_dim=hd,
                  partial_rotary_factor=(rd or hd) / hd, mlp_bias=blk(0, "ffn_up").replace("weight", "bias") in ts)
        hf.pop("rms_norm_eps", None)
        return hf
    if arch == "apertus":
        # conversion/llama.py ApertusModel (undo_permute False: q / k rows as HF's; per-head attn_q_norm / attn_k_norm;
        # llama3 rope as LlamaModel's rope_freqs tensor): the ungated MLP's xIELU parameters are metadata, not tensors
        # (xielu_params), checked here; a file without rope scaling turns plain rope by its base (llama.cpp), not
        # ApertusConfig's default llama3
        xielu_params(g, L)
        hf.update(model_type="apertus", hidden_act="xielu", head_dim=hd)
        if "rope_scaling" not in hf:
            hf["rope_parameters"] = {"rope_type": "default", "rope_theta": hf["rope_theta"]}
        return hf
    moe_layers = [i for i in range(L) if blk(i, "ffn_gate_inp") in ts]      # the layers with a router
    if arch == "llama4":
        # the converter writes HF's intermediate_size_mlp as feed_forward_length and intermediate_size
        # as expert_feed_forward_length (conversion/llama.py Llama4Model); the MoE layers are those with
        # experts (interleave_moe_layer_step); chunked attention as llama.cpp's loader sets it
        chunk = None if m("attention.sliding_window", LLAMA4_CHUNK, minimum=0) == 0 else LLAMA4_CHUNK
        m("interleave_moe_layer_step", required=True, minimum=1)   # (llama.cpp's loader requires it; the tensors tell)
        hf.update(model_type="llama4_text", num_local_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
                  intermediate_size_mlp=F or m("expert_feed_forward_length", required=True, minimum=1),
                  moe_layers=moe_layers, attention_chunk_size=chunk,
                  no_rope_layers=[int((i + 1) % LLAMA4_PATTERN != 0) for i in range(L)])
        return hf
    if arch == "minimax-m2":
        hf.update(model_type="minimax_m2", num_local_experts=m("expert_count", required=True, minimum=1),
                  num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
                  rotary_dim=rd or hd)
        return hf
    if arch == "ernie4_5-moe":
        # the MoE layers: from leading_dense_block_count on, every interleave_moe_layer_step-th
        # (conversion/ernie.py). The shared MLP as llama.cpp's loader sizes it (src/models/ernie4-5.cpp): by
        # expert_shared_feed_forward_length alone (get_key, optional; the converter writes HF's intermediate_size //
        # num_key_value_heads), none where the key is missing or 0 (expert_shared_count is not read); HF's ERNIE
        # builds it moe_num_shared_experts x moe_intermediate_size wide, so a width that is no whole number of
        # experts' is a model it cannot state
        start = m("leading_dense_block_count", 0, minimum=0)
        every = m("interleave_moe_layer_step", required=True, minimum=1)   # (llama.cpp's get_key: required)
        # llama.cpp's loader (src/models/ernie4-5.cpp) creates the router and experts, required, on every layer from
        # leading_dense_block_count on, and no dense MLP there; its graph (src/models/ernie4-5-moe.cpp) runs experts
        # only where (i + 1) % interleave_moe_layer_step == 0 and a dense MLP elsewhere, with tensors a layer past
        # the leading ones never has. HF's Ernie4_5_Moe (moe_layer_interval) runs those layers dense, and the
        # converter writes their dense MLP: llama.cpp cannot load or run any such file (released models: step 1)
        off = [i for i in range(start, L) if (i + 1) % every]
        if off:
            raise GGUFError(f"{g.path}: metadata '{arch}.interleave_moe_layer_step' = {every} with "
                            f"'{arch}.leading_dense_block_count' = {start}: llama.cpp's {arch} loader creates experts "
                            f"(no dense MLP) on every layer from {start} on, but its graph runs layer"
                            f"{'s' if len(off) > 1 else ''} {', '.join(map(str, off[:6]))}{', ...' if len(off) > 6 else ''} "
                            f"as a dense MLP, which it never created: llama.cpp cannot run this file (HF runs those "
                            f"layers dense: load the HF folder to price it as HF runs it)")
        for i in range(L):
            if (i in moe_layers) != (i >= start):
                raise GGUFError(
                    f"{g.path}: tensor {blk(i, 'ffn_gate_inp')!r} is missing: llama.cpp's {arch} loader creates the "
                    f"router and experts on every layer from '{arch}.leading_dense_block_count' = {start} on "
                    f"(a last MoE layer before the last layer, HF's moe_layer_end_index, is not a file it loads)"
                    if i >= start else
                    f"{g.path}: tensor {blk(i, 'ffn_gate_inp')!r} is on layer {i}, below "
                    f"'{arch}.leading_dense_block_count' = {start}: llama.cpp's {arch} loader creates no router or "
                    f"experts there (a tensor it does not create: it refuses the file)")
        fe = m("expert_feed_forward_length", required=True, minimum=1)
        fs = m("expert_shared_feed_forward_length", 0, minimum=0)
        if fs % fe:
            raise GGUFError(f"{g.path}: metadata '{arch}.expert_shared_feed_forward_length' = {fs} is not a whole "
                            f"number of experts' widths ('{arch}.expert_feed_forward_length' = {fe}): HF's ERNIE 4.5 "
                            f"builds its shared MLP moe_num_shared_experts x moe_intermediate_size wide")
        hf.update(model_type="ernie4_5_moe", moe_num_experts=m("expert_count", required=True, minimum=1),
                  moe_k=m("expert_used_count", required=True, minimum=1), moe_intermediate_size=fe,
                  moe_num_shared_experts=fs // fe, moe_layer_start_index=start,
                  moe_layer_end_index=max(moe_layers) if moe_layers else -1, moe_layer_interval=every,
                  use_bias=hf["attention_bias"])
        return hf
    if arch == "qwen2moe":
        # llama.cpp's qwen2moe: experts on every layer, one shared expert behind a sigmoid gate
        # (ffn_gate_inp_shexp); the top-k weights not renormalised. A file without the widths' keys (early
        # 2024 conversions) gives them by its tensors' rows (llama.cpp's loader derives them from
        # feed_forward_length then; the rows are what the file holds). A layer without its router is a file
        # llama.cpp refuses (src/models/qwen2moe.cpp creates ffn_gate_inp and the experts on every layer, required)
        dense = [i for i in range(L) if i not in moe_layers]
        if dense:
            raise GGUFError(f"{g.path}: tensor '{blk(dense[0], 'ffn_gate_inp')}' is missing: llama.cpp's qwen2moe "
                            f"loader requires experts on every layer ({len(dense)} of {L} layers have no router)")
        hf.update(model_type="qwen2_moe", **_qwen_moe_sizes(g, m),
                  qkv_bias=hf["attention_bias"], decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=False)
        return hf
    if arch == "mistral3":
        # conversion/mistral3.py: Mistral Small 3.1 / 3.2's text layers (HF model_type mistral) as llama's, q / k
        # permuted; Ministral 3 (ministral3) with YaRN and its attention temperature
        # (attention.temperature_scale = rope_parameters.llama_4_scaling_beta, applied past the YaRN original
        # context, src/models/mistral3.cpp), which makes it a ministral3 config (priced, not run)
        beta = m("attention.temperature_scale", kind=float)
        if beta:
            rs = dict(hf.get("rope_scaling") or {})
            rs["llama_4_scaling_beta"] = float(beta)
            hf.update(model_type="ministral3", sliding_window=None, rope_scaling=rs)
        else:
            hf.update(model_type="mistral", sliding_window=None)
        return hf
    # (exaone: conversion/exaone.py ExaoneModel, a TextModel: q / k not permuted, llama.cpp's NEOX rope is HF's
    # rotate_half; ernie4_5: conversion/ernie.py Ernie4_5Model, not permuted, llama.cpp's NORM rope on HF's
    # interleaved pairs; its biases, use_bias, on every projection)
    hf["model_type"] = {"qwen3": "qwen3", "qwen2": "qwen2", "llama": "llama", "exaone": "exaone",
                        "ernie4_5": "ernie4_5"}[arch]
    if arch == "ernie4_5":
        hf["use_bias"] = hf.pop("attention_bias")
    if arch == "exaone":
        hf["mlp_bias"] = blk(0, "ffn_up").replace("weight", "bias") in ts
    if arch == "llama":
        # llama.cpp's llama loads optional MLP biases (src/models/llama.cpp: ffn_gate / ffn_down / ffn_up "bias",
        # TENSOR_NOT_REQUIRED): HF's mlp_bias
        hf["mlp_bias"] = blk(0, "ffn_up").replace("weight", "bias") in ts
    return hf


# llama.cpp's xIELU keys (src/llama-arch.cpp LLM_KV_XIELU_*: no architecture prefix), in HF XIELUActivation's order
XIELU_KEYS = {"alpha_p": "xielu.alpha_p", "alpha_n": "xielu.alpha_n", "beta": "xielu.beta", "eps": "xielu.eps"}


def xielu_params(g: GGUFFile, L: int) -> dict:
    """Apertus's xIELU parameters of each of the L layers, {alpha_p / alpha_n / beta / eps: [L floats]}, from the
    metadata conversion/llama.py ApertusModel writes: one array per key (the learned alpha_p / alpha_n as HF holds
    them, before their softplus, which ggml_xielu applies), or one number for every layer (llama.cpp's
    get_key_or_arr). A key missing, an array of another length or a value that is not a finite number: a
    GGUFError naming the key (llama.cpp refuses such a file)."""
    out = {}
    for name, key in XIELU_KEYS.items():
        v = g.get(key)
        if v is None:
            raise GGUFError(f"{g.path}: metadata {key!r} is missing (llama.cpp's apertus needs the xIELU parameters "
                            f"of every layer)")
        a = np.asarray(v).reshape(-1) if isinstance(v, np.ndarray) or isinstance(v, (list, tuple)) else np.asarray([v])
        if isinstance(v, (bool, np.bool_)) or a.dtype.kind not in "fiu" or a.dtype == np.bool_:
            raise GGUFError(f"{g.path}: metadata {key!r} must hold numbers, got {v!r}")
        if a.size == 1 and not isinstance(v, (np.ndarray, list, tuple)):
            a = np.repeat(a, L)
        if a.size != L:
            raise GGUFError(f"{g.path}: metadata {key!r} has {a.size} values; '{g.architecture}.block_count' = {L} "
                            f"needs one per layer")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise GGUFError(f"{g.path}: metadata {key!r} must hold finite numbers, got {a.tolist()}")
        out[name] = a.tolist()
    return out


def _post_norm(g: GGUFFile, m: _Meta, hf: dict, L: int) -> dict:
    """hf_config's rest for llama.cpp's post-norm architectures (src/models/olmo2.cpp, exaone4.cpp), from what the
    converter writes (conversion/olmo.py Olmo2Model for OLMo 2 and OLMo 3, conversion/exaone.py Exaone4Model;
    TextModels: q / k rows not permuted, NEOX rope is HF's rotate_half):
      * olmo2: OLMo 2 without attention.sliding_window; with one (> 0), OLMo 3: the layers
        attention.sliding_window_pattern flags (the converter's layer_types; else llama.cpp's every 4th global),
        plain rope on the windowed layers by rope.freq_base_swa (else rope.freq_base) without the scaling, the
        full layers' YaRN from the rope.scaling keys;
      * exaone4: per-head q / k norms; attention.sliding_window on the pattern's layers, which alone rotate (the
        global ones apply no rope); a 64-layer file without the keys takes llama.cpp's 4096 tokens, every 4th
        layer global. (llama.cpp's loader applies a window only at 64 layers, EXAONE 4.0 32B's count; a file of
        another depth that states one is read as its HF config states it, windowed; no released model is one.)
        A llama3-scaled rope is the rope_freqs tensor (hf_config)."""
    arch = g.architecture
    sw = m("attention.sliding_window", 0, minimum=0)
    if arch == "olmo2":
        if not sw:
            hf.update(model_type="olmo2")
            return hf
        windowed, _ = _swa_pattern(g, m, L, 4)
        hf.update(model_type="olmo3", sliding_window=sw,
                  rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": m(
                      "rope.freq_base_swa", hf["rope_theta"], kind=float)}})
    else:
        if not sw and L == 64:
            sw = EXAONE4_WINDOW
        if not sw:
            hf.update(model_type="exaone4", sliding_window=None, layer_types=["full_attention"] * L)
            return hf
        windowed, _ = _swa_pattern(g, m, L, EXAONE4_PATTERN)
        hf.update(model_type="exaone4", sliding_window=sw)
    hf["layer_types"] = ["sliding_attention" if w else "full_attention" for w in windowed]
    return hf


def _afmoe(g: GGUFFile, m: _Meta, hf: dict, L: int, hd: int) -> dict:
    """hf_config's rest for llama.cpp's afmoe (Arcee Trinity; src/models/afmoe.cpp) from what the converter writes
    (conversion/afmoe.py AfmoeModel: LlamaModel's keys, but its tensors through ModelBase.modify_tensors, so q / k
    rows as HF's; NEOX rope is HF's rotate_half). llama.cpp's graph: the embeddings always times sqrt(hidden)
    (HF's mup_enabled: read as true), rope on every layer but each 4th (n_no_rope_layer_step, fixed), a window
    (attention.sliding_window; 0 or absent: none) on the layers attention.sliding_window_pattern gives (default
    every 4th global); per-head q / k norms, the attn_gate sigmoid gate, four norms per layer; leading_dense_block_count
    dense layers, then expert_count experts routed by expert_gating_func (absent: sigmoid) with exp_probs_b, the
    weights renormalised where expert_weights_norm, times expert_weights_scale, beside expert_shared_count shared ones.
    HF's AFMoE rotates exactly its sliding layers and always renormalises: a file whose windows and NoPE layers
    differ is an error; one that does not renormalise (no expert_weights_norm: config.json without route_norm) is
    read as HF runs it, with a notice."""
    arch = g.architecture
    gating = m("expert_gating_func", 0)
    if gating not in (0, 2):
        raise GGUFError(f"{g.path}: metadata '{arch}.expert_gating_func' = {gating} is not 2 (sigmoid): AFMoE's router "
                        f"is sigmoid (HF AfmoeTokenChoiceRouter)")
    if not m("expert_weights_norm", False, kind=bool):
        _notice(hf, f"{g.path}: metadata '{arch}.expert_weights_norm' is absent or false: llama.cpp's afmoe then does "
                    f"not renormalise the top-k weights; HF's AFMoE always does, and so does glmbench")
    rope = [(i + 1) % 4 != 0 for i in range(L)]
    sw = m("attention.sliding_window", 0, minimum=0)
    if sw:
        windowed, _ = _swa_pattern(g, m, L, 4)
        if windowed != rope:
            raise GGUFError(f"{g.path}: the windowed layers (attention.sliding_window_pattern) "
                            f"{[i for i in range(L) if windowed[i]]} are not the layers llama.cpp's afmoe rotates "
                            f"(all but every 4th): HF's AFMoE rotates exactly its sliding layers")
        base_swa = m("rope.freq_base_swa", hf["rope_theta"], kind=float)
        if base_swa != hf["rope_theta"]:
            raise GGUFError(f"{g.path}: metadata '{arch}.rope.freq_base_swa' = {base_swa} differs from "
                            f"'{arch}.rope.freq_base' = {hf['rope_theta']}: HF's AFMoE turns one rope")
    hf.update(model_type="afmoe", head_dim=hd, mup_enabled=True, sliding_window=sw or None,
              layer_types=["sliding_attention" if r else "full_attention" for r in rope],
              num_experts=m("expert_count", required=True, minimum=1),
              num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
              moe_intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
              num_shared_experts=m("expert_shared_count", required=True, minimum=0),
              num_dense_layers=m("leading_dense_block_count", 0, minimum=0),
              route_scale=m("expert_weights_scale", 0.0, kind=float) or 1.0)
    return hf


# llama.cpp's loaders that take a rope_freqs tensor (src/models/*.cpp: LLM_TENSOR_ROPE_FREQS, of the architectures
# glmbench reads); in any other file it is a tensor the loader never creates, which llama.cpp refuses
ROPE_FREQS_ARCHITECTURES = ("llama", "deci", "apertus", "arcee", "exaone", "exaone4", "falcon-h1", "gemma4", "granite",
                            "granitemoe", "granitehybrid", "llama4", "mistral3")


# llama.cpp's loaders that create output.weight required, with no fallback to token_embd (src/models/*.cpp
# load_arch_tensors: flags 0): a file without it does not load
OUTPUT_REQUIRED = ("gpt-oss", "minimax-m2", "qwen2moe", "olmoe", "olmo2", "apertus", "phimoe", "dots1", "nemotron")


# llama.cpp's loaders that create the shared experts' tensors on every MoE layer whatever expert_shared_count says
# (src/models/deepseek2.cpp, glm-dsa.cpp, deepseek32.cpp, dots1.cpp: {n_embd, n_ff_exp x n_expert_shared}, required):
# a count of 0 there is a file llama.cpp refuses ("tensor ... not found" or "wrong shape")
SHARED_EXPERT_REQUIRED = ("deepseek2", "glm-dsa", "deepseek32", "dots1")


_CREATED_RE: dict = {}


def _created_re(arch: str):
    """One regex matching every tensor name llama.cpp's `arch` loader can create (llama_cpp_tensors.CREATED, with
    GENERIC_SCALES): "blk.%d." per layer, "%d" an index."""
    if arch not in _CREATED_RE:
        from glmbench.models import llama_cpp_tensors as lt
        _CREATED_RE[arch] = re.compile("|".join(re.escape(n).replace("%d", r"\d+") for n in sorted(lt.CREATED[arch])))
    return _CREATED_RE[arch]


def _generic_scale(n: str, ts: dict, created) -> bool:
    """`n` is a .scale / .input_scale that llama_model::load_tensors' generic pass creates (llama_cpp_tensors.
    GENERIC_SCALES; output's where output.weight is in the file): only beside its weight, one the loader created."""
    from glmbench.models import llama_cpp_tensors as lt
    base, _, suffix = n.rpartition(".")
    if suffix not in ("scale", "input_scale") or base + ".weight" not in ts or not created.fullmatch(base + ".weight"):
        return False
    return base == "output" or re.sub(r"^blk\.\d+\.", "blk.%d.", n) in lt.GENERIC_SCALES


_PER_EXPERT = re.compile(r"blk\.\d+\.ffn_(gate|up|down)\.\d+\.weight")


def _check_created(g: GGUFFile, m: _Meta) -> None:
    """llama.cpp loads a file only where its architecture's loader creates every tensor the file holds
    (src/llama-model-loader.cpp, llama_model_loader::done_getting_tensors: "wrong number of tensors; expected N,
    got M", N the file's tensors, M those created; a tensor created with TENSOR_NOT_REQUIRED, TENSOR_DUPLICATED or
    TENSOR_SKIP (an unused or MTP one) counts as created). A tensor no create_tensor call of the loader names
    (llama_cpp_tensors.CREATED: e.g. output.weight in gemma / gemma2 / command-r / cohere2 files, whose loaders
    always tie it), a fused tensor's parts beside the fused one (create_tensor_qkv: attn_q / k / v beside attn_qkv;
    create_tensor_gate_up_exps: ffn_gate_exps / ffn_up_exps beside ffn_gate_up_exps), or deepseek2's attn_kv_b in
    an MLA file (key_length_mla set: the loader creates attn_k_b + attn_v_b instead; without it, attn_kv_b and never
    the split) is refused by name: glmbench priced it as extra bytes of a model llama.cpp does not run.
    The first Mixtral GGUFs' one-tensor-per-expert names (blk.N.ffn_gate.E.weight: _per_expert) pass: glmbench reads
    them as the stacked experts on purpose; llama.cpp loaded them until it dropped that layout (this source's
    loaders require ffn_*_exps, so it refuses such a file as missing those)."""
    from glmbench.models import llama_cpp_tensors as lt
    arch = g.vision_architecture or g.architecture
    ts = g.tensors
    rule = (f"llama.cpp ({lt.SOURCE}) refuses a file holding a tensor its loader does not create "
            f"(llama_model_loader::done_getting_tensors: \"wrong number of tensors\")")
    created = _created_re(arch)
    for n in ts:
        if _PER_EXPERT.fullmatch(n):
            continue
        if not created.fullmatch(n) and not _generic_scale(n, ts, created):
            raise GGUFError(f"{g.path}: tensor {n!r} is not one llama.cpp's {arch} loader creates; {rule}")
        parts = n.split(".")
        if parts[0] != "blk" or len(parts) < 4:
            continue
        blk = f"blk.{parts[1]}."
        why = None
        if arch in lt.FUSED_QKV and parts[2] in ("attn_q", "attn_k", "attn_v") and blk + "attn_qkv.weight" in ts and \
                (parts[3] == "weight" or (parts[3] == "bias" and blk + "attn_qkv.bias" in ts)):
            why = f"beside the fused {blk + 'attn_qkv.' + parts[3]!r}, which the loader takes instead"
        elif arch in lt.FUSED_GATE_UP_EXPS and parts[2] in ("ffn_gate_exps", "ffn_up_exps") and \
                blk + "ffn_gate_up_exps.weight" in ts:
            why = f"beside the fused {blk + 'ffn_gate_up_exps.weight'!r}, which the loader takes instead"
        elif arch == "deepseek2" or arch in DSA_ARCHITECTURES:
            # llama_hparams::is_mla(): key_length_mla and value_length_mla set (not 0)
            mla = bool(m("attention.key_length_mla", 0)) and bool(m("attention.value_length_mla", 0))
            if parts[2] == "attn_kv_b" and mla:
                # (ik_llama.cpp's converter keeps attn_kv_b beside the split, which ik_llama.cpp loads; mainline's
                # deepseek2.cpp creates attn_kv_b only where is_mla() is false, so such a file fails there too)
                why = (f"in a file with '{g.architecture}.attention.key_length_mla' (MLA): the loader creates "
                       f"{blk + 'attn_k_b.weight'!r} and {blk + 'attn_v_b.weight'!r} instead (a file from "
                       f"ik_llama.cpp's converter keeps attn_kv_b beside them: convert the HF model with "
                       f"mainline llama.cpp's convert_hf_to_gguf.py, which writes the split only, or run this "
                       f"file in ik_llama.cpp)")
            elif parts[2] in ("attn_k_b", "attn_v_b") and not mla:
                why = (f"in a file without '{g.architecture}.attention.key_length_mla' (not MLA): "
                       + ("the loader creates the joined attn_kv_b instead" if arch == "deepseek2"
                          else f"llama.cpp's {arch} loader requires MLA"))
        if why:
            raise GGUFError(f"{g.path}: tensor {n!r} is not one llama.cpp's {arch} loader creates {why}; {rule}")


def _shared_experts(g: GGUFFile, m: _Meta) -> int:
    """expert_shared_count, required as llama.cpp's loaders of deepseek2 / glm-dsa / deepseek32 / glm4moe / dots1 /
    afmoe require it (get_key), and at least 1 where the loader creates the shared experts' tensors unconditionally
    (SHARED_EXPERT_REQUIRED)."""
    arch = g.architecture
    n = m("expert_shared_count", required=True, minimum=0)
    if n == 0 and arch in SHARED_EXPERT_REQUIRED:
        raise GGUFError(f"{g.path}: metadata '{arch}.expert_shared_count' = 0: llama.cpp's {arch} loader requires the "
                        f"shared experts' tensors (ffn_*_shexp) on every MoE layer, {arch} has at least one")
    return n


def _rows_of(g: GGUFFile, ts: dict, name: str) -> int | None:
    """The rows of layer 0's `name` tensor (experts stacked [E, rows, D]: the experts' width), None without it."""
    t = ts.get(f"blk.0.{name}.weight")
    return None if t is None or len(t.shape) < 2 else int(t.shape[-2])


def _dsa(g: GGUFFile, m: _Meta, hf: dict, L: int, gating: int) -> dict:
    """hf_config's rest for llama.cpp's DeepSeek Sparse Attention architectures (glm-dsa, deepseek32; their
    load_arch_hparams): the router sigmoid (HF's DSA routers are), the indexer's heads, key length and top-k
    (required), and each layer's indexer from attention.indexer.types (a bool per layer; glm-dsa only: absent,
    every layer full below GLM_5_2_CONTEXT tokens of native context, else GLM-5.2's default pattern)."""
    arch = g.architecture
    if gating != 2:
        raise GGUFError(f"{g.path}: metadata '{arch}.expert_gating_func' = {gating} is not 2 (sigmoid): {arch}'s "
                        f"router is sigmoid with a score-correction bias")
    types = g.metadata.get(f"{arch}.attention.indexer.types") if arch == "glm-dsa" else None
    if types is None:
        full = [True] * L if arch != "glm-dsa" or hf["max_position_embeddings"] < GLM_5_2_CONTEXT else \
            [i < 2 or (i - 2) % 4 == 0 for i in range(L)]
    else:
        a = np.atleast_1d(np.asarray(types))
        if a.size == 1:
            a = np.repeat(a, L)   # (llama.cpp's get_key_or_arr: one value for every layer)
        if a.size != L:
            raise GGUFError(f"{g.path}: metadata '{arch}.attention.indexer.types' has {a.size} values for {L} layers")
        full = [bool(v) for v in a]
    hf.update(model_type=DSA_ARCHITECTURES[arch], topk_method="noaux_tc", scoring_func="sigmoid",
              index_n_heads=m("attention.indexer.head_count", required=True, minimum=1),
              index_head_dim=m("attention.indexer.key_length", required=True, minimum=1),
              index_topk=m("attention.indexer.top_k", required=True, minimum=1),
              indexer_types=["full" if f else "shared" for f in full])
    return hf


def _qwen_moe_sizes(g: GGUFFile, m: _Meta) -> dict:
    """The experts' count, top-k and widths of a Qwen MoE file with one shared expert (qwen2moe, qwen3next,
    qwen35moe): the widths from the expert keys, else from the tensors' rows (ffn_up_exps [E, F, D],
    ffn_up_shexp [Fs, D]: early-2024 qwen2moe conversions wrote no width keys; llama.cpp's loader derives
    them from feed_forward_length then; the rows are what the file holds)."""
    ts, arch = g.tensors, g.architecture
    up, sh = ts.get("blk.0.ffn_up_exps.weight"), ts.get("blk.0.ffn_up_shexp.weight")
    fe = m("expert_feed_forward_length", minimum=1)
    fs = m("expert_shared_feed_forward_length", minimum=0)
    if fe is None and up is None:
        raise GGUFError(f"{g.path}: neither metadata '{arch}.expert_feed_forward_length' nor tensor "
                        f"'blk.0.ffn_up_exps.weight' gives the experts' width")
    return dict(num_experts=m("expert_count", required=True, minimum=1),
                num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                moe_intermediate_size=fe if fe is not None else int(up.shape[-2]),
                shared_expert_intermediate_size=fs if fs is not None else (int(sh.shape[0]) if sh is not None else 0))


def _hybrid(g: GGUFFile, m: _Meta, hf: dict, L: int, blocks: int, hd: int, rd: int | None) -> dict:
    """hf_config's rest for the hybrid Gated DeltaNet families, as llama.cpp loads them (src/models/qwen3next.cpp,
    qwen35.cpp, qwen35moe.cpp, load_arch_hparams / load_arch_tensors) from what the converter writes
    (conversion/qwen.py Qwen3NextModel.set_gguf_parameters, used by Qwen3_5TextModel and
    Qwen3_5MoeTextModel too):
      * the linear layers' sizes from the SSM keys: ssm.group_count = linear_num_key_heads,
        ssm.time_step_rank = linear_num_value_heads, ssm.state_size = linear_key_head_dim,
        ssm.inner_size = linear_num_value_heads x linear_value_head_dim, ssm.conv_kernel =
        linear_conv_kernel_dim (all five required, as llama.cpp's get_key requires them);
      * which layers are linear: attention.recurrent_layers (one flag per block, the MTP blocks
        included, which are full attention) when the file has it, else every layer but each
        full_attention_interval-th (llama.cpp's default 4);
      * the full-attention layers' q_proj holds each head's query and its output gate (2 x heads x
        head dim rows), partial rope: rope.dimension_count / key_length (HF's default 0.25 is not
        assumed: a file without the key rotates the whole head, as llama.cpp does);
      * qwen3next / qwen35moe: experts (expert_count of expert_feed_forward_length) and one shared
        expert of expert_shared_feed_forward_length behind a sigmoid gate, the top-k weights always
        renormalised (build_moe_ffn's norm_w); a file without the widths' keys gives them by its
        tensors' rows (ffn_up_exps, ffn_up_shexp). Qwen3-Next's layers without experts (HF's
        mlp_only_layers; llama.cpp requires experts on every layer) are those without a router
        (ffn_gate_inp)."""
    arch, ts = g.architecture, g.tensors
    blk = lambda i, n: f"blk.{i}.{n}.weight"
    if L < blocks and blk(0, "attn_norm") not in ts and blk(L, "attn_norm") in ts:
        # convert_hf_to_gguf.py --mtp writes the MTP block alone (a draft model for llama.cpp's MTP decoding)
        raise GGUFError(f"{g.path}: holds only the {blocks - L} multi-token-prediction block(s) of a {L}-layer "
                        f"{arch} model (a draft file: no tensor {blk(0, 'attn_norm')!r}); give the model's own file")
    K, dk, Hk, Hv, inner = _ssm_sizes(g, m, "value heads", "key heads")
    key = f"{arch}.attention.recurrent_layers"
    flags = g.get(key)
    if flags is not None:
        a = np.asarray(flags).reshape(-1)
        if a.dtype != np.bool_ and not (a.dtype.kind in "iu" and np.isin(a, (0, 1)).all()):
            raise GGUFError(f"{g.path}: metadata {key!r} must be an array of bools, got {flags!r}")
        if a.size != blocks:
            raise GGUFError(f"{g.path}: metadata {key!r} has {a.size} flags; '{arch}.block_count' = {blocks} "
                            f"needs one per block (llama.cpp refuses it too)")
        linear = [bool(x) for x in a[:L]]
    else:
        every = m("full_attention_interval", 4, minimum=1)
        linear = [(i + 1) % every != 0 for i in range(L)]
    if all(linear):
        raise GGUFError(f"{g.path}: every one of the {L} layers is linear attention ({key!r} / "
                        f"'{arch}.full_attention_interval'): a hybrid has at least one full-attention layer")
    first_attn = linear.index(False)
    hf.update(model_type=HYBRID_ARCHITECTURES[arch], head_dim=hd, partial_rotary_factor=(rd or hd) / hd,
              attention_bias=blk(first_attn, "attn_q").replace("weight", "bias") in ts,
              layer_types=["linear_attention" if x else "full_attention" for x in linear],
              linear_conv_kernel_dim=K, linear_key_head_dim=dk, linear_value_head_dim=inner // Hv,
              linear_num_key_heads=Hk, linear_num_value_heads=Hv)
    if arch in ("qwen35", "qwen35moe") and g.get(f"{arch}.rope.dimension_sections") is None:
        # (qwen35.cpp / qwen35moe.cpp read the mrope sections with get_key_or_arr, required; on text tokens the rope
        # is plain, so only their presence is checked)
        raise GGUFError(f"{g.path}: metadata '{arch}.rope.dimension_sections' is missing ({arch} needs it: llama.cpp's "
                        f"loader requires the rope sections)")
    if arch == "qwen35":
        hf["intermediate_size"] = m("feed_forward_length", required=True, minimum=1)
        return hf
    hf.update(**_qwen_moe_sizes(g, m), norm_topk_prob=True)
    if arch == "qwen3next":
        hf.update(decoder_sparse_step=1, mlp_only_layers=[i for i in range(L) if blk(i, "ffn_gate_inp") not in ts])
    return hf


def _gqa_head_dim(g: GGUFFile, m: _Meta, H: int, D: int, n_kv: int, *, values: bool = True) -> int:
    """A GQA file's head dim: attention.key_length, else embedding_length / head_count; the query heads a
    multiple of the KV heads and (`values`: unless the caller checks them itself) attention.value_length, where
    stated, that head dim, else a GGUFError naming the keys."""
    arch = g.architecture
    if H % n_kv:
        raise GGUFError(f"{g.path}: metadata '{arch}.attention.head_count' = {H} is not a multiple of "
                        f"'{arch}.attention.head_count_kv' = {n_kv}")
    hd = m("attention.key_length", minimum=1)
    if hd is None:
        if D % H:
            raise GGUFError(f"{g.path}: metadata '{arch}.embedding_length' = {D} is not a multiple of "
                            f"'{arch}.attention.head_count' = {H} and no '{arch}.attention.key_length' is given")
        hd = D // H
    vl = m("attention.value_length", minimum=1) if values else None
    if vl is not None and vl != hd:
        # (llama.cpp's attn_v is value_length x KV heads wide, and these families' graphs assert the value head
        # as wide as the key head; glmbench's GQA config has one head dim)
        raise GGUFError(f"{g.path}: metadata '{arch}.attention.value_length' = {vl} differs from the key head dim {hd} "
                        f"('{arch}.attention.key_length', else embedding_length / head_count): {arch} takes one head "
                        f"dim for keys and values")
    return hd


def _ssm_sizes(g: GGUFFile, m: _Meta, heads: str, groups: str) -> tuple:
    """(conv_kernel, state_size, group_count, time_step_rank, inner_size) of a hybrid's ssm.* keys, all five
    required as llama.cpp's get_key requires them; inner_size a multiple of the heads (time_step_rank) and
    they of the groups, else a GGUFError naming the keys (`heads`, `groups`: what the family calls them)."""
    arch = g.architecture
    K = m("ssm.conv_kernel", required=True, minimum=1)
    N = m("ssm.state_size", required=True, minimum=1)
    G = m("ssm.group_count", required=True, minimum=1)
    H = m("ssm.time_step_rank", required=True, minimum=1)
    inner = m("ssm.inner_size", required=True, minimum=1)
    if inner % H:
        raise GGUFError(f"{g.path}: metadata '{arch}.ssm.inner_size' = {inner} is not a multiple of "
                        f"'{arch}.ssm.time_step_rank' = {H} ({heads})")
    if H % G:
        raise GGUFError(f"{g.path}: metadata '{arch}.ssm.time_step_rank' = {H} ({heads}) is not a multiple of "
                        f"'{arch}.ssm.group_count' = {G} ({groups})")
    return K, N, G, H, inner


def _falcon_h1(g: GGUFFile, m: _Meta, hf: dict) -> dict:
    """hf_config's rest for llama.cpp's falcon-h1, as it loads it (src/models/falcon-h1.cpp load_arch_hparams /
    load_arch_tensors) from what the converter writes (conversion/falcon_h1.py FalconH1Model on Mamba2Model):
      * every layer attention (head_count, head_count_kv, key_length: read as any GQA file's) and Mamba-2 side by
        side; the SSM's sizes from ssm.* (all five required, as llama.cpp's get_key requires them): inner_size =
        mamba_d_ssm, time_step_rank = the Mamba heads, group_count, state_size, conv_kernel;
      * feed_forward_length (the SwiGLU MLP's width) and attention.layer_norm_rms_epsilon required: HF's defaults
        are no model's;
      * what the tensors tell: the conv's bias (ssm_conv1d.bias: mamba_conv_bias), the gated norm's weight
        (ssm_norm: mamba_rms_norm), biased in_proj / out_proj / MLP (ssm_in.bias: mamba_proj_bias, ssm_out.bias:
        projectors_bias, ffn_up.bias: mlp_bias; refused by configs.from_hf, not modelled).
    The muP multipliers are folded into the weights by the converter: the file states none (they change values,
    not costs)."""
    ts, p = g.tensors, g.path
    K, N, G, Hs, inner = _ssm_sizes(g, m, "the Mamba heads", "the groups")
    has = lambda n: f"blk.0.{n}" in ts
    if not has("ssm_in.weight"):
        raise GGUFError(f"{p}: tensor 'blk.0.ssm_in.weight' is missing: every falcon-h1 layer holds a Mamba-2 mixer")
    hf.update(model_type="falcon_h1", intermediate_size=m("feed_forward_length", required=True, minimum=1),
              rms_norm_eps=m("attention.layer_norm_rms_epsilon", required=True, kind=float),
              mamba_d_ssm=inner, mamba_n_heads=Hs, mamba_d_head=inner // Hs, mamba_n_groups=G, mamba_d_state=N,
              mamba_d_conv=K, mamba_conv_bias=has("ssm_conv1d.bias"), mamba_rms_norm=has("ssm_norm.weight"),
              mamba_proj_bias=has("ssm_in.bias"), projectors_bias=has("ssm_out.bias"),
              mlp_bias=has("ffn_up.bias") or has("ffn_down.bias") or has("ffn_gate.bias"))
    return hf


def _cohere(g: GGUFFile, m: _Meta, hf: dict, L: int) -> dict:
    """hf_config's rest for llama.cpp's Cohere architectures, as it loads them (src/models/command-r.cpp,
    cohere2.cpp: load_arch_hparams / load_arch_tensors) from what the converter writes (conversion/command_r.py
    CommandR2Model, Cohere2Model):
      * one LayerNorm (weight only) per layer before attention and MLP side by side: eps from
        attention.layer_norm_epsilon (required, as llama.cpp's get_key requires it), not the RMS key;
      * the head is the token embedding (llama.cpp duplicates tok_embd; the converter writes no output);
      * logit_scale: cohere2 requires it, command-r's is optional (llama.cpp scales no logits without it);
      * command-r: Command-R+'s per-head q/k LayerNorms (use_qk_norm) stored as HF holds them, attn_q_norm
        [heads, head_dim] and attn_k_norm [kv heads, head_dim] (llama.cpp loads them only for 64 or more
        layers; a file holds them when its checkpoint does, and so they are read);
      * cohere2: attention.sliding_window (required) on the layers attention.sliding_window_pattern gives:
        an array of one flag per layer (true: windowed), or a period n (every n-th layer global; 0: all
        windowed), else llama.cpp's 4; rope on the windowed layers only (rope.dimension_count: the
        converter's rotary_pct x head_dim)."""
    arch, ts = g.architecture, g.tensors
    del hf["rms_norm_eps"]
    hf.update(model_type=COHERE_ARCHITECTURES[arch],
              layer_norm_eps=m("attention.layer_norm_epsilon", required=True, kind=float),
              logit_scale=m("logit_scale", required=arch == "cohere2", kind=float) or 1.0)
    if arch == "command-r":
        q, k = "blk.0.attn_q_norm.weight" in ts, "blk.0.attn_k_norm.weight" in ts
        if q != k:
            raise GGUFError(f"{g.path}: tensor {'blk.0.attn_k_norm.weight' if q else 'blk.0.attn_q_norm.weight'!r} is "
                            f"missing (a command-r file with q/k norms holds both)")
        hf["use_qk_norm"] = q
        return hf
    hf["sliding_window"] = m("attention.sliding_window", required=True, minimum=1)
    windowed, pat = _swa_pattern(g, m, L, COHERE2_PATTERN)
    if pat:
        hf["sliding_window_pattern"] = pat
    hf["layer_types"] = ["sliding_attention" if w else "full_attention" for w in windowed]
    return hf


def _swa_pattern(g: GGUFFile, m: _Meta, L: int, default: int) -> tuple[list, int | None]:
    """The windowed layers as llama.cpp's load_swa_pattern reads attention.sliding_window_pattern: an array of one
    flag per layer (true: windowed), or a period n (every n-th layer global; 0: all windowed), else `default`.
    (flags per layer, the period or None where the file gave flags)."""
    arch = g.architecture
    key = f"{arch}.attention.sliding_window_pattern"
    flags = g.get(key)
    if isinstance(flags, np.ndarray):
        a = flags.reshape(-1)
        if a.dtype != np.bool_ and not (a.dtype.kind in "iu" and np.isin(a, (0, 1)).all()):
            raise GGUFError(f"{g.path}: metadata {key!r} must be an integer or an array of bools, got {flags!r}")
        if a.size != L:
            raise GGUFError(f"{g.path}: metadata {key!r} has {a.size} flags; '{arch}.block_count' = {L} needs one "
                            f"per layer")
        return [bool(x) for x in a], None
    pat = m("attention.sliding_window_pattern", default, minimum=0)
    return [pat == 0 or i % pat < pat - 1 for i in range(L)], pat


def _lfm2(g: GGUFFile, m: _Meta, hf: dict, L: int, blocks: int) -> dict:
    """hf_config's rest for llama.cpp's LFM2 architectures (lfm2 -> lfm2, lfm2moe -> lfm2_moe), as it loads them
    (src/models/lfm2.cpp, lfm2moe.cpp: load_arch_hparams / load_arch_tensors) from what the converter writes
    (conversion/lfm2.py LFM2Model, LFM2MoeModel):
      * each layer's kind from the per-layer array attention.head_count_kv: 0 on the short-convolution layers
        (llama.cpp's is_recr), the attention layers' KV heads elsewhere (all alike) -> HF's layer_types;
      * shortconv.l_cache (conv_L_cache) and attention.layer_norm_rms_epsilon (norm_eps) required, as llama.cpp's
        get_key requires them; the conv's biases by the tensors the file holds (shortconv.in_proj.bias: conv_bias);
      * lfm2: feed_forward_length is the MLP's width the converter computed from block_ff_dim and the
        block_auto_adjust_ff_dim rule: read back as intermediate_size with the adjustment off;
      * lfm2moe: expert_count, expert_used_count, expert_feed_forward_length, expert_gating_func (2: sigmoid)
        required; leading_dense_block_count (num_dense_layers; llama.cpp's default 0), feed_forward_length (the
        dense layers' width, required where there are any), the expert bias by the exp_probs_b tensors
        (use_expert_bias), the top-k weights always renormalised (llama.cpp's build_moe_ffn, norm_w true), scaled
        by expert_weights_scale (1 when absent);
      * attention.sliding_window (optional; > 0: llama.cpp's lfm2 loader windows every attention layer) as
        `sliding_window`."""
    arch, ts, p = g.architecture, g.tensors, g.path
    kv = _layer_ints(g, "attention.head_count_kv", blocks)[:L]
    att = sorted({n for n in kv if n})
    if not att:
        raise GGUFError(f"{p}: metadata '{arch}.attention.head_count_kv' is 0 on every layer: an {arch} file has at "
                        f"least one attention layer")
    if len(att) > 1:
        raise GGUFError(f"{p}: metadata '{arch}.attention.head_count_kv' gives the attention layers different KV "
                        f"heads ({kv}); not supported")
    H, D = hf["num_attention_heads"], hf["hidden_size"]
    hd = _gqa_head_dim(g, m, H, D, att[0])
    types = ["conv" if n == 0 else "full_attention" for n in kv]
    conv = [i for i, t in enumerate(types) if t == "conv"]
    hf.update(num_key_value_heads=att[0], head_dim=hd, layer_types=types,
              conv_L_cache=m("shortconv.l_cache", required=True, minimum=1),
              norm_eps=m("attention.layer_norm_rms_epsilon", required=True, kind=float),
              conv_bias=bool(conv) and f"blk.{conv[0]}.shortconv.in_proj.bias" in ts)
    sw = m("attention.sliding_window", 0, minimum=0)
    if sw:   # (the loader windows every attention layer then: LLAMA_SWA_TYPE_STANDARD)
        hf["sliding_window"] = sw
    if arch == "lfm2":
        hf.update(model_type="lfm2", intermediate_size=m("feed_forward_length", required=True, minimum=1),
                  block_auto_adjust_ff_dim=False)
        return hf
    gating = m("expert_gating_func", required=True)
    if gating != 2:
        raise GGUFError(f"{p}: metadata '{arch}.expert_gating_func' = {gating} is not 2 (sigmoid): LFM2-MoE routes "
                        f"with sigmoid scores")
    nd = m("leading_dense_block_count", 0, minimum=0)
    moe = [i for i in range(min(nd, L), L)]
    hf.update(model_type="lfm2_moe", num_dense_layers=nd, num_experts=m("expert_count", required=True, minimum=1),
              num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
              moe_intermediate_size=m("expert_feed_forward_length", required=True, minimum=1),
              use_expert_bias=bool(moe) and f"blk.{moe[0]}.exp_probs_b.bias" in ts, norm_topk_prob=True,
              routed_scaling_factor=m("expert_weights_scale", 1.0, kind=float) or 1.0)
    F = m("feed_forward_length", required=bool(nd), minimum=1)   # (the converter writes it, dense layers or not)
    if F:
        hf["intermediate_size"] = F
    return hf


def deci_ffn_width(mult: float, hidden: int) -> int:
    """DeciLM's MLP width for ffn_mult (configuration_decilm.py _ffn_mult_to_intermediate_size, llama.cpp's
    DeciModel._ffn_mult_to_intermediate_size): int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256.
    Here, not in configs (which prices DeciLM's block_configs with it), because configs imports this module."""
    f = int(2 * mult * hidden / 3)
    return f if f % 256 == 0 else f + 256 - f % 256


def _deci(g: GGUFFile, m: _Meta, hf: dict, L: int, blocks: int) -> dict:
    """hf_config's rest for llama.cpp's deci (NVIDIA's Llama-Nemotron "DeciLM", HF nemotron-nas), as
    src/models/deci.cpp loads it from what conversion/deci.py DeciModel writes: per-layer arrays
    attention.head_count (0: an attention-free layer), attention.head_count_kv (0 where head_count is not: the
    "linear attention", one hidden x hidden matrix stored as attn_output) and feed_forward_length (0: no MLP, no
    ffn_norm), read back as block_configs (n_heads_in_group = head_count / head_count_kv; ffn_mult = 3 F / (2
    hidden), which DeciLM's rounding maps back to F, a multiple of 256 as the converter writes every width). The
    q / k rows are permuted (DeciModel.permute), llama3 rope the rope_freqs tensor (hf_config)."""
    p, arch = g.path, g.architecture
    D, H = hf["hidden_size"], hf["num_attention_heads"]
    heads = _layer_ints(g, "attention.head_count", blocks)[:L]
    kv = _layer_ints(g, "attention.head_count_kv", blocks)[:L]
    ff = _layer_ints(g, "feed_forward_length", blocks)[:L]
    bc = []
    for i in range(L):
        if heads[i] and heads[i] != H:
            raise GGUFError(f"{p}: metadata '{arch}.attention.head_count' = {heads[i]} on layer {i}: a deci layer "
                            f"attends with all {H} heads or none (0)")
        if heads[i] and kv[i] and H % kv[i]:
            raise GGUFError(f"{p}: metadata '{arch}.attention.head_count_kv' = {kv[i]} on layer {i} does not divide "
                            f"the {H} heads")
        att = {"n_heads_in_group": H // kv[i], "no_op": False, "replace_with_linear": False} if heads[i] and kv[i] \
            else {"n_heads_in_group": None, "no_op": not heads[i], "replace_with_linear": bool(heads[i])}
        if ff[i]:
            mult = 3 * ff[i] / (2 * D)
            if deci_ffn_width(mult, D) != ff[i]:
                raise GGUFError(f"{p}: metadata '{arch}.feed_forward_length' = {ff[i]} on layer {i} is no DeciLM width "
                                f"(int(2 ffn_mult hidden / 3) rounded up to a multiple of 256)")
            ffn = {"ffn_mult": mult, "no_op": False, "replace_with_linear": False}
        else:
            ffn = {"ffn_mult": None, "no_op": True, "replace_with_linear": False}
        bc.append({"attention": att, "ffn": ffn})
    hd = m("attention.key_length", minimum=1) or D // H
    if hd * H != D:
        raise GGUFError(f"{p}: metadata '{arch}.attention.key_length' = {hd} x {H} heads is not "
                        f"'{arch}.embedding_length' = {D}: DeciLM's heads are hidden / heads wide")
    blk = lambda i, n: f"blk.{i}.{n}.bias"
    first = next((i for i in range(L) if kv[i]), None)
    hf.update(model_type="nemotron-nas", block_configs=bc,
              attention_bias=first is not None and blk(first, "attn_q") in g.tensors,
              mlp_bias=any(blk(i, "ffn_up") in g.tensors for i in range(L) if ff[i]))
    return hf


def _layer_ints(g: GGUFFile, key: str, blocks: int) -> list:
    """A required per-layer metadata value (llama.cpp's get_key_or_arr): an array of one non-negative integer
    per block (`blocks`: block_count, the MTP blocks included, as llama.cpp requires), or one integer for every
    block."""
    k = f"{g.architecture}.{key}"
    v = g.get(k)
    if v is None:
        raise GGUFError(f"{g.path}: metadata {k!r} is missing ({g.architecture} needs it: one value per layer)")
    a = np.asarray(v).reshape(-1)
    if isinstance(v, (bool, str, np.bool_)) or a.dtype.kind not in "iuf" or \
            not all(float(x).is_integer() and x >= 0 for x in a.tolist()):
        raise GGUFError(f"{g.path}: metadata {k!r} must be a non-negative integer or an array of them, got {v!r}")
    if not isinstance(v, np.ndarray):
        return [int(v)] * blocks
    if a.size != blocks:
        raise GGUFError(f"{g.path}: metadata {k!r} has {a.size} values; '{g.architecture}.block_count' = {blocks} "
                        f"needs one per block (llama.cpp refuses it too)")
    return [int(x) for x in a.tolist()]


def _mamba(g: GGUFFile, m: _Meta, hf: dict, L: int, blocks: int) -> dict:
    """hf_config's rest for llama.cpp's Mamba-2 hybrids, as it loads them (src/models/nemotron-h.cpp,
    granite-hybrid.cpp: load_arch_hparams / load_arch_tensors) from what the converter writes
    (conversion/nemotron.py NemotronHModel, conversion/granite.py GraniteHybridModel on Mamba2Model and
    GraniteMoeModel):
      * the SSM's sizes from ssm.* (all five required, as llama.cpp's get_key requires them):
        time_step_rank = the Mamba heads, inner_size = heads x head dim, group_count = the groups sharing
        B / C, state_size = d_state, conv_kernel = the convolution's width;
      * which layer is which from the per-layer arrays: granitehybrid's layer is Mamba-2 where
        attention.head_count_kv is 0 (else attention), each with an MLP; nemotron_h's block is Mamba-2
        where head_count_kv and feed_forward_length are both 0, attention where only
        feed_forward_length is 0, an MLP / MoE where feed_forward_length is not (MoE where the block has
        a router, ffn_gate_inp) -> HF's hybrid_override_pattern (M, *, -, E);
      * Nemotron: relu2 MLPs and experts (up / down only), eps attention.layer_norm_epsilon (required, as
        llama.cpp's get_key requires it; the RMS key where a file has one, as llama.cpp prefers it); the experts' count, top-k, width
        (expert_feed_forward_length, else the tensors' rows), the shared expert's width, expert_weights_norm
        (llama.cpp's default false) and _scale (routed_scaling_factor), expert_group_count / _used_count;
        Nemotron 3 Super's latent MoE: moe_latent_size, its projections ffn_latent_down / ffn_latent_up;
      * Granite: experts (expert_count of feed_forward_length, the converter's intermediate_size) beside the
        shared SwiGLU MLP of expert_shared_feed_forward_length; a dense file (expert_count 0: Granite
        4.0-H-Micro) holds the shared MLP as ffn_gate / ffn_up / ffn_down, its width
        expert_shared_feed_forward_length, else feed_forward_length (which llama.cpp's loader sizes it by);
        the multipliers logit_scale (HF logits_scaling), residual_scale, embedding_scale and
        attention.scale (absent: llama.cpp's 1 / sqrt(head dim), 1 for the others); rope iff
        rope.scaling.finetuned (llama.cpp's default true when absent; the converter writes false for every
        Granite 4.0-H: position_embedding_type "nope").
    The tensors' names and shapes (ssm_a = -exp(A_log) [H, 1] and ssm_d [H, 1] without `.weight`,
    ssm_conv1d [C, K], ssm_norm [groups, d_inner / groups], the split shared MLP) are mapped by
    expected_gguf_tensors; models/checkpoint.py undoes the values' conventions to run the file."""
    arch, ts, p = g.architecture, g.tensors, g.path
    blk = lambda i, n: f"blk.{i}.{n}.weight"
    D, H = hf["hidden_size"], hf["num_attention_heads"]
    K, N, G, Hs, inner = _ssm_sizes(g, m, "the Mamba heads", "the groups")
    kv = _layer_ints(g, "attention.head_count_kv", blocks)
    granite = arch == "granitehybrid"
    if granite:
        kinds = ["M" if kv[i] == 0 else "*" for i in range(L)]
    else:
        ff = _layer_ints(g, "feed_forward_length", blocks)
        kinds = []
        for i in range(L):
            if kv[i] and ff[i]:
                raise GGUFError(f"{p}: block {i} has both '{arch}.attention.head_count_kv' = {kv[i]} and "
                                f"'{arch}.feed_forward_length' = {ff[i]}: a nemotron_h block is one of Mamba-2 (both "
                                f"0), attention (feed_forward_length 0) or an MLP / MoE (head_count_kv 0)")
            kinds.append("M" if not kv[i] and not ff[i] else "*" if kv[i] else
                         "E" if blk(i, "ffn_gate_inp") in ts else "-")
    for i, k in enumerate(kinds):
        if k == "M" and blk(i, "ssm_in") not in ts:
            held = sorted({n.split(".")[2] for n in ts if n.startswith(f"blk.{i}.")} - {"attn_norm", "ffn_norm"})
            zero = f"'{arch}.attention.head_count_kv'" + ("" if granite else f" and '{arch}.feed_forward_length'")
            raise GGUFError(f"{p}: block {i} is a Mamba-2 layer by its metadata ({zero} 0 there, as llama.cpp reads "
                            f"it) but has no tensor {blk(i, 'ssm_in')!r} (it holds {', '.join(held) or 'nothing'}): "
                            f"the layer metadata contradicts the tensors and llama.cpp cannot load the file either "
                            f"(one cause: convert_hf_to_gguf.py run with transformers 5 installed, which lists the "
                            f"layers as 'linear_attention' / 'full_attention' / 'mlp', types the converter's "
                            f"NemotronH / GraniteHybrid classes do not look for)")
    mamba = [i for i, k in enumerate(kinds) if k == "M"]
    attn = [i for i, k in enumerate(kinds) if k == "*"]
    if not mamba:
        raise GGUFError(f"{p}: no block is a Mamba-2 layer ('{arch}.attention.head_count_kv'"
                        f"{'' if granite else ' and feed_forward_length'} 0): not a {arch} hybrid")
    n_kv = {kv[i] for i in attn}
    if len(n_kv) > 1:
        raise GGUFError(f"{p}: metadata '{arch}.attention.head_count_kv' gives the attention layers different KV "
                        f"head counts ({sorted(n_kv)}); not supported")
    n_kv = n_kv.pop() if n_kv else H
    hd = _gqa_head_dim(g, m, H, D, n_kv)
    bias = lambda i, n: i is not None and f"blk.{i}.{n}.bias" in ts
    first_attn = attn[0] if attn else None
    conv_bias, proj_bias = bias(mamba[0], "ssm_conv1d"), bias(mamba[0], "ssm_in") or bias(mamba[0], "ssm_out")
    hf.update(num_key_value_heads=n_kv, head_dim=hd, attention_bias=bias(first_attn, "attn_q"))
    for k in ("rope_scaling", "partial_rotary_factor"):
        hf.pop(k, None)

    def rows(name, axis=0):
        """The rows of the first tensor `name` among the layers (a width the metadata does not state)."""
        for i in range(L):
            t = ts.get(blk(i, name))
            if t is not None:
                return int(t.shape[axis])
        return None

    if not granite:
        del hf["rms_norm_eps"]
        # (nemotron-h.cpp: attention.layer_norm_epsilon with get_key, required, whether or not the RMS key, which
        # it prefers, is there)
        eps = m("attention.layer_norm_epsilon", required=True, kind=float)
        rms = m("attention.layer_norm_rms_epsilon", kind=float)
        if rms is not None:
            eps = rms
        mlp = [i for i, k in enumerate(kinds) if k == "-"]
        widths = sorted({ff[i] for i in mlp})
        if len(widths) > 1:
            raise GGUFError(f"{p}: metadata '{arch}.feed_forward_length' gives the MLP blocks different widths "
                            f"({widths}); not supported")
        hf.update(model_type="nemotron_h", num_hidden_layers=L, hybrid_override_pattern="".join(kinds),
                  layer_norm_epsilon=eps, mamba_num_heads=Hs, mamba_head_dim=inner // Hs, n_groups=G, ssm_state_size=N,
                  conv_kernel=K, use_conv_bias=conv_bias, mamba_proj_bias=proj_bias, mlp_hidden_act="relu2",
                  mlp_bias=any(bias(i, "ffn_up") or bias(i, "ffn_down") for i in mlp))
        if widths:
            hf["intermediate_size"] = widths[0]
        if "E" in kinds:
            # Nemotron 3 Super's latent MoE: the experts on a moe_latent_size-wide projection (ffn_latent_down/up)
            latent = m("moe_latent_size", 0, minimum=0)
            if latent:
                hf["moe_latent_size"] = latent
            fe = m("expert_feed_forward_length", minimum=1)
            if fe is None:
                fe = rows("ffn_up_exps", 1)
                if fe is None:
                    raise GGUFError(f"{p}: neither metadata '{arch}.expert_feed_forward_length' nor a tensor "
                                    f"'blk.N.ffn_up_exps.weight' gives the experts' width")
            fs = m("expert_shared_feed_forward_length", minimum=0)
            if fs is None:
                fs = rows("ffn_up_shexp") or 0
            hf.update(n_routed_experts=m("expert_count", required=True, minimum=1),
                      num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                      moe_intermediate_size=fe, moe_shared_expert_intermediate_size=fs,
                      n_shared_experts=m("expert_shared_count", 1 if fs else 0, minimum=0),
                      norm_topk_prob=m("expert_weights_norm", False, kind=bool),
                      routed_scaling_factor=m("expert_weights_scale", 0.0, kind=float) or 1.0,   # (llama.cpp: 0 unscaled)
                      n_group=m("expert_group_count", 1) or 1, topk_group=m("expert_group_used_count", 1) or 1)
        return hf
    # granitehybrid
    hf["rms_norm_eps"] = m("attention.layer_norm_rms_epsilon", required=True, kind=float)
    if inner % D:
        raise GGUFError(f"{p}: metadata '{arch}.ssm.inner_size' = {inner} is not a multiple of "
                        f"'{arch}.embedding_length' = {D} (Granite's Mamba expands the hidden state by a whole factor)")
    E = m("expert_count", 0, minimum=0)
    F = m("feed_forward_length", minimum=1)
    fs = m("expert_shared_feed_forward_length", minimum=0)
    if E:
        fe = F if F is not None else rows("ffn_up_exps", 1)
        if fe is None:
            raise GGUFError(f"{p}: neither metadata '{arch}.feed_forward_length' nor a tensor "
                            f"'blk.N.ffn_up_exps.weight' gives the experts' width")
        if fs is None:
            fs = rows("ffn_up_shexp")
            if fs is None:
                raise GGUFError(f"{p}: metadata '{arch}.expert_shared_feed_forward_length' is missing and no tensor "
                                f"'blk.N.ffn_up_shexp.weight' gives the shared MLP's width (Granite 4.0-H holds one "
                                f"beside the experts on every layer)")
        hf.update(num_local_experts=E, num_experts_per_tok=m("expert_used_count", required=True, minimum=1),
                  intermediate_size=fe, shared_intermediate_size=fs)
    else:
        width = fs or F
        if not width:
            raise GGUFError(f"{p}: metadata '{arch}.feed_forward_length' (or 'expert_shared_feed_forward_length') is "
                            f"missing: the width of a dense {arch} file's MLP")
        if fs and F and fs != F:
            _notice(hf, f"{p}: '{arch}.feed_forward_length' = {F} but the shared MLP is {fs} wide "
                        f"('{arch}.expert_shared_feed_forward_length'): priced at {fs} (llama.cpp's loader sizes a "
                        f"dense file's MLP by feed_forward_length and would refuse this file)", stacklevel=4)
        hf.update(num_local_experts=0, num_experts_per_tok=0, intermediate_size=F or width,
                  shared_intermediate_size=width)
    rope = m("rope.scaling.finetuned", True, kind=bool)
    rd = m("rope.dimension_count")
    if rope and rd and rd != hd:
        hf["partial_rotary_factor"] = rd / hd
    hf.update(model_type="granitemoehybrid", num_hidden_layers=L,
              layer_types=["mamba" if k == "M" else "attention" for k in kinds],
              mamba_n_heads=Hs, mamba_d_head=inner // Hs, mamba_n_groups=G, mamba_d_state=N, mamba_d_conv=K,
              mamba_expand=inner // D, mamba_conv_bias=conv_bias, mamba_proj_bias=proj_bias,
              position_embedding_type="rope" if rope else "nope",
              embedding_multiplier=m("embedding_scale", 0.0, kind=float) or 1.0,
              residual_multiplier=m("residual_scale", 0.0, kind=float) or 1.0,
              attention_multiplier=m("attention.scale", 0.0, kind=float) or 1.0 / hd ** 0.5,
              logits_scaling=m("logit_scale", 0.0, kind=float) or 1.0)
    return hf


# Gemma 4's rope_freqs: a pair whose factor is at least this large does not rotate (the converter writes 1e30)
_UNROTATED = 1e20


def _gemma3n(g: GGUFFile, m: _Meta, hf: dict, L: int) -> dict:
    """hf_config's rest for llama.cpp's Gemma 3n, as it loads it (src/models/gemma3n.cpp, load_arch_hparams /
    load_arch_tensors) from what the converter writes (conversion/gemma.py Gemma3NModel on Gemma3Model), as HF's
    Gemma3nTextConfig (model_type gemma3n_text) states it:
      * the windowed layers: attention.sliding_window_pattern (flags, or a period; llama.cpp's default every 5th
        layer global), the window attention.sliding_window (required);
      * kv-shared layers: attention.shared_kv_layers (llama.cpp itself fixes n_layer_kv_from_start at 20: a file
        without the key shares the layers from 20 on, with a notice);
      * the MLP's width per layer: feed_forward_length (one value or one per layer);
      * activation sparsity: activation_sparsity_scale, the converter's normal quantile of each layer's target
        (-inf where 0), read back through the normal CDF (absent: none);
      * AltUp: altup.num_inputs (llama.cpp's default 4) and altup.active_idx (0); LAuReL's rank from the
        blk.0.laurel_l tensor (llama.cpp's hparams fix it at 64); PLE: embedding_length_per_layer_input (llama.cpp's
        default 256), its table per_layer_token_embd padded by the converter to the full vocabulary (its rows:
        vocab_size_per_layer_input as the file holds it);
      * rope: freq_base on the global layers, freq_base_swa on the windowed ones (default: freq_base);
        final_logit_softcapping where stated; q / k / v RMSNorm'd, softmax scale 1.
    The k / v tensors the file stores for the kv-shared layers (llama.cpp loads them, never uses them) are extra
    bytes, as for Gemma 4; the AltUp projections are stored stacked ([n - 1, D, D]), as glmbench names them."""
    arch, ts, p = g.architecture, g.tensors, g.path
    swa, _ = _swa_pattern(g, m, L, 5)
    sw = m("attention.sliding_window", required=True, minimum=1)
    hd = m("attention.key_length", minimum=1) or hf["hidden_size"] // hf["num_attention_heads"]
    n_kv = m("attention.head_count_kv", hf["num_attention_heads"], minimum=1)
    shared = m("attention.shared_kv_layers", minimum=0)
    if shared is None:
        shared = max(L - 20, 0)
        _notice(hf, f"{p}: no metadata '{arch}.attention.shared_kv_layers'; llama.cpp shares the cache of layers 20 "
                    f"on ({shared} layers)", stacklevel=4)
    if shared >= L:
        raise GGUFError(f"{p}: metadata '{arch}.attention.shared_kv_layers' = {shared} leaves none of the {L} layers "
                        f"to keep a cache")
    ff = _layer_ints(g, "feed_forward_length", L)
    if 0 in ff:
        raise GGUFError(f"{p}: metadata '{arch}.feed_forward_length' = {ff} gives a layer no MLP (every Gemma 3n "
                        f"layer has one)")
    key = f"{arch}.activation_sparsity_scale"
    sc = g.get(key)
    if sc is None:
        asp = [0.0] * L
    else:
        a = np.asarray(sc, np.float64).reshape(-1)
        if a.size != L:
            raise GGUFError(f"{p}: metadata {key!r} has {a.size} values; '{arch}.block_count' = {L} needs one per "
                            f"layer")
        asp = [0.0 if not np.isfinite(x) else 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) for x in a]
    n_alt = m("altup.num_inputs", 4, minimum=1)
    lr = ts.get("blk.0.laurel_l.weight")
    if lr is None:
        raise GGUFError(f"{p}: tensor 'blk.0.laurel_l.weight' (LAuReL's left matrix, which gives its rank) is missing")
    P = m("embedding_length_per_layer_input", 256, minimum=1)
    t = ts.get("per_layer_token_embd.weight")
    if t is None:
        raise GGUFError(f"{p}: tensor 'per_layer_token_embd.weight' (the per-layer embeddings) is missing")
    if len(t.shape) != 2 or t.shape[1] != L * P:
        raise GGUFError(f"{p}: tensor 'per_layer_token_embd.weight' has shape {tuple(t.shape)}; "
                        f"'{arch}.embedding_length_per_layer_input' = {P} x {L} layers needs rows of {L * P}")
    base = hf.pop("rope_theta")
    hf.pop("rope_scaling", None)
    emb = ts.get("token_embd.weight")
    if emb is not None:
        hf["vocab_size"] = emb.shape[0]
    hf.update(model_type="gemma3n_text", head_dim=hd, num_key_value_heads=n_kv, num_kv_shared_layers=shared,
              intermediate_size=ff if len(set(ff)) > 1 else ff[0], activation_sparsity_pattern=asp,
              altup_num_inputs=n_alt, altup_active_idx=m("altup.active_idx", 0, minimum=0),
              laurel_rank=int(lr.shape[0]), hidden_size_per_layer_input=P, vocab_size_per_layer_input=int(t.shape[0]),
              sliding_window=sw, layer_types=["sliding_attention" if w else "full_attention" for w in swa],
              rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": base},
                               "sliding_attention": {"rope_type": "default",
                                                     "rope_theta": m("rope.freq_base_swa", base, kind=float)}},
              final_logit_softcapping=m("final_logit_softcapping", kind=float) or None,
              hidden_activation="gelu_pytorch_tanh", attention_bias=False)
    return hf


def _gemma4(g: GGUFFile, m: _Meta, hf: dict, L: int) -> dict:
    """hf_config's rest for llama.cpp's Gemma 4, as it loads it (src/models/gemma4.cpp, load_arch_hparams /
    load_arch_tensors) from what the converter writes (conversion/gemma.py Gemma4Model on Gemma3Model), as
    HF's Gemma4TextConfig (model_type gemma4_text) states it:
      * which layers are windowed: attention.sliding_window_pattern, one bool per layer (required, as llama.cpp's
        get_arr requires it) -> layer_types; the window attention.sliding_window (required);
      * head dims: attention.key_length = the global layers' (global_head_dim), key_length_swa = the sliding
        ones' (head_dim; required); the value lengths, where stated, equal to them (llama.cpp requires it);
      * KV heads: attention.head_count_kv, one value or one per layer (the global layers' may differ:
        num_global_key_value_heads with attention_k_eq_v, else per_layer_config as HF saves it);
      * attention_k_eq_v: the global layers that keep a cache hold no attn_v (their values are the keys);
      * kv-shared layers: attention.shared_kv_layers (the last ones; llama.cpp's n_layer_kv_from_start);
      * the dense MLP: feed_forward_length, one value or one per layer; twice it on every kv-shared layer is
        use_double_wide_mlp (any other difference is refused);
      * MoE (enable_moe_block): expert_count experts of expert_feed_forward_length, expert_used_count of them,
        on every layer (each has a router, ffn_gate_inp) beside the dense MLP;
      * PLE: embedding_length_per_layer_input (required; 0: none), the table's rows (per_layer_token_embd
        [vocab, layers x P]) its vocabulary (vocab_size_per_layer_input);
      * rope: freq_base on the global layers (proportional: the rotated share from the rope_freqs tensor's
        factors, 1 per rotated pair then 1e30), freq_base_swa on the sliding ones (llama.cpp's default:
        freq_base); final_logit_softcapping where stated; the vocabulary from token_embd's rows (the
        converter cuts them to the tokenizer's)."""
    arch, ts, p = g.architecture, g.tensors, g.path
    blk = lambda i, n: f"blk.{i}.{n}.weight"
    D, H = hf["hidden_size"], hf["num_attention_heads"]
    key = f"{arch}.attention.sliding_window_pattern"
    flags = g.get(key)
    if flags is None:
        raise GGUFError(f"{p}: metadata {key!r} is missing ({arch} needs it: one bool per layer, true where the "
                        f"layer is windowed)")
    a = np.asarray(flags).reshape(-1)
    if not isinstance(flags, np.ndarray) or (a.dtype != np.bool_ and
                                             not (a.dtype.kind in "iu" and np.isin(a, (0, 1)).all())):
        raise GGUFError(f"{p}: metadata {key!r} must be an array of bools (one per layer), got {flags!r}")
    if a.size != L:
        raise GGUFError(f"{p}: metadata {key!r} has {a.size} flags; '{arch}.block_count' = {L} needs one per layer "
                        f"(llama.cpp refuses it too)")
    swa = [bool(x) for x in a]
    if swa[-1]:
        _notice(hf, f"{p}: {key!r} windows the last layer; HF's Gemma 4 (and glmbench's config) runs it with full "
                    f"attention, llama.cpp windowed", stacklevel=4)
    sw = m("attention.sliding_window", required=True, minimum=1)
    hd = m("attention.key_length_swa", required=True, minimum=1)
    kkey = f"{arch}.attention.head_count_kv"
    if g.get(kkey) is None:      # llama.cpp's default: as many KV heads as query heads
        kv = [H] * L
    else:
        kv = _layer_ints(g, "attention.head_count_kv", L)
        if 0 in kv:
            raise GGUFError(f"{p}: metadata {kkey!r} gives layer {kv.index(0)} no KV heads (every Gemma 4 layer "
                            f"attends)")
    sets = {kind: sorted({kv[i] for i in range(L) if swa[i] == (kind == "sliding")}) for kind in ("sliding", "global")}
    for kind, vals in sets.items():
        if len(vals) > 1:
            raise GGUFError(f"{p}: metadata {kkey!r} gives the {kind} layers different KV head counts ({vals}); "
                            f"Gemma 4 has one per kind of layer")
    full = [i for i in range(L) if not swa[i]]
    n_kv = sets["sliding"][0] if sets["sliding"] else sets["global"][0]
    kv_g = sets["global"][0] if sets["global"] else n_kv
    hd_g = _gqa_head_dim(g, m, H, D, n_kv, values=False)   # (the value lengths: checked below)
    if H % kv_g:
        raise GGUFError(f"{p}: metadata '{arch}.attention.head_count' = {H} is not a multiple of the global layers' "
                        f"{kv_g} KV heads ({kkey!r})")
    for k, want, of in (("attention.value_length", hd_g, "attention.key_length"),
                        ("attention.value_length_swa", hd, "attention.key_length_swa")):
        # (value_length defaults to embedding_length / head_count in load_hparams; gemma4.cpp reads
        # value_length_swa with get_key, required)
        v = m(k, minimum=1, required=k == "attention.value_length_swa")
        if v is not None and v != want:
            raise GGUFError(f"{p}: metadata '{arch}.{k}' = {v} differs from '{arch}.{of}' = {want} (Gemma 4's "
                            f"values are as wide as its keys; llama.cpp refuses it too)")
    shared = m("attention.shared_kv_layers", 0, minimum=0)
    if shared >= L:
        raise GGUFError(f"{p}: metadata '{arch}.attention.shared_kv_layers' = {shared} leaves none of the {L} layers "
                        f"to keep a cache")
    first = L - shared
    own_full = [i for i in full if i < first]
    with_v = [i for i in own_full if blk(i, "attn_v") in ts]
    if with_v and len(with_v) != len(own_full):
        no_v = next(i for i in own_full if i not in with_v)
        raise GGUFError(f"{p}: tensor {blk(no_v, 'attn_v')!r} is missing but {blk(with_v[0], 'attn_v')!r} is "
                        f"there: Gemma 4's global layers either all project values or all use the keys (k = v)")
    k_eq_v = bool(own_full) and not with_v
    fkey = f"{arch}.feed_forward_length"
    ff = _layer_ints(g, "feed_forward_length", L)
    F = ff[0]
    if not F or any(f != F for f in ff[:first]):
        raise GGUFError(f"{p}: metadata {fkey!r} = {ff} must give the layers before the kv-shared ones one "
                        f"positive width (Gemma 4's dense MLP)")
    rest = set(ff[first:])
    if not rest <= {F} and rest != {2 * F}:
        raise GGUFError(f"{p}: metadata {fkey!r} = {ff}: the {shared} kv-shared layers must be {F} wide, or all "
                        f"{2 * F} (use_double_wide_mlp)")
    double = rest == {2 * F}
    E = m("expert_count", 0, minimum=0)
    routed = [i for i in range(L) if blk(i, "ffn_gate_inp") in ts]
    if E and len(routed) != L:
        bare = next(i for i in range(L) if i not in routed)
        raise GGUFError(f"{p}: metadata '{arch}.expert_count' = {E} but tensor {blk(bare, 'ffn_gate_inp')!r} (the "
                        f"router) is missing: Gemma 4's experts are on every layer")
    if routed and not E:
        raise GGUFError(f"{p}: tensor {blk(routed[0], 'ffn_gate_inp')!r} (a router) is there but metadata "
                        f"'{arch}.expert_count' is {'missing' if m('expert_count') is None else 0}")
    P = m("embedding_length_per_layer_input", required=True, minimum=0)
    ple_vocab = 0
    if P:
        t = ts.get("per_layer_token_embd.weight")
        if t is None:
            raise GGUFError(f"{p}: metadata '{arch}.embedding_length_per_layer_input' = {P} but tensor "
                            f"'per_layer_token_embd.weight' (the per-layer embeddings) is missing")
        if len(t.shape) != 2 or t.shape[1] != L * P:
            raise GGUFError(f"{p}: tensor 'per_layer_token_embd.weight' has shape {tuple(t.shape)}; "
                            f"'{arch}.embedding_length_per_layer_input' = {P} x {L} layers needs rows of {L * P}")
        ple_vocab = int(t.shape[0])
    base = hf.pop("rope_theta")
    hf.pop("rope_scaling", None)
    base_swa = m("rope.freq_base_swa", base, kind=float)
    glob_rope = {"rope_type": "default", "rope_theta": base}
    if "rope_freqs.weight" in ts:
        t = ts["rope_freqs.weight"]
        if t.type_name not in ("F32", "F16"):
            raise GGUFError(f"{p}: tensor 'rope_freqs.weight' has type {t.type_name}; F32 (or F16) expected")
        f = np.asarray(g.tensor_data("rope_freqs.weight"), np.float64).reshape(-1)
        n_rot = int(np.argmax(f != 1.0)) if (f != 1.0).any() else f.size
        if f.size != hd_g // 2 or not (f[n_rot:] >= _UNROTATED).all():
            raise GGUFError(f"{p}: tensor 'rope_freqs.weight' holds {f.size} factors {f.tolist()[:8]}...; Gemma 4's "
                            f"proportional rope needs {hd_g // 2} ('{arch}.attention.key_length' / 2): 1 for each "
                            f"rotated pair, then 1e30")
        glob_rope = {"rope_type": "proportional", "partial_rotary_factor": 2 * n_rot / hd_g, "rope_theta": base}
    else:
        rd = m("rope.dimension_count", minimum=0)
        if rd and rd != hd_g:
            glob_rope["partial_rotary_factor"] = rd / hd_g
    loc_rope = {"rope_type": "default", "rope_theta": base_swa}
    rd = m("rope.dimension_count_swa", minimum=0)
    if rd and rd != hd:
        loc_rope["partial_rotary_factor"] = rd / hd
    emb = ts.get("token_embd.weight")
    if emb is not None:   # the converter drops the embedding rows past the tokenizer's vocabulary
        hf["vocab_size"] = emb.shape[0]
    hf.update(model_type="gemma4_text", head_dim=hd, global_head_dim=hd_g, num_key_value_heads=n_kv,
              attention_k_eq_v=k_eq_v, num_kv_shared_layers=shared, hidden_size_per_layer_input=P,
              use_double_wide_mlp=double, intermediate_size=F, enable_moe_block=bool(E), sliding_window=sw,
              layer_types=["sliding_attention" if w else "full_attention" for w in swa],
              rope_parameters={"full_attention": glob_rope, "sliding_attention": loc_rope},
              final_logit_softcapping=m("final_logit_softcapping", kind=float) or None,
              hidden_activation="gelu_pytorch_tanh", attention_bias=False)
    if P:
        hf["vocab_size_per_layer_input"] = ple_vocab
    if k_eq_v:
        hf["num_global_key_value_heads"] = kv_g
    elif kv_g != n_kv and full:   # (HF reads num_global_key_value_heads only with k = v: per layer, as it saves it)
        hf["per_layer_config"] = {str(i): {"head_dim": hd_g, "num_key_value_heads": kv_g} for i in full}
    if E:
        hf.update(num_experts=E, top_k_experts=m("expert_used_count", required=True, minimum=1),
                  moe_intermediate_size=m("expert_feed_forward_length", required=True, minimum=1))
    return hf


def _notice(hf: dict, text: str, stacklevel: int = 3) -> None:
    """A value the file does not state and glmbench assumed: kept in the config (`gguf_assumed`,
    measured records carry it) and shown once as a warning (`stacklevel`: hf_config's caller's line)."""
    hf.setdefault("gguf_assumed", []).append(text)
    warnings.warn(text, GGUFNotice, stacklevel=stacklevel)


def _window_not_applied(hf: dict, g: GGUFFile, arch: str, m, model: str, why: str) -> None:
    """A notice where the file states a sliding window that llama.cpp's model for `arch` does not apply (`why`):
    full attention on every layer, as glmbench runs it too. `m`: hf_config's metadata reader."""
    sw = m("attention.sliding_window", 0)
    if sw:
        _notice(hf, f"{g.path}: '{arch}.attention.sliding_window' = {sw} is not applied: llama.cpp runs "
                    f"{model} with full attention ({why}), and so does glmbench", stacklevel=4)


class GGUFNotice(UserWarning):
    """What glmbench assumed for a value a GGUF file does not state (the message says which)."""


def _assumed_gating(g: GGUFFile, n_layer: int, ts) -> tuple:
    """(expert_gating_func, why) for a deepseek2 file without the key. llama.cpp
    (src/models/deepseek2.cpp, load_arch_hparams) picks sigmoid when n_layer (block_count less the
    nextn layers) is 47 or 48 and the vocabulary (deepseek2.vocab_size, else the tokenizer's list)
    has 154880 tokens (GLM-4.7-Flash), else softmax (DeepSeek-V2/V2.5 files predate the key).
    Beyond that rule: a file whose MoE layers carry exp_probs_b (the score-correction bias only
    sigmoid noaux_tc routers have: GLM-4.7-Flash of another shape, DeepSeek-V3 saved by
    transformers 5, whose config has no scoring_func for the converter to write) is read as sigmoid,
    as the HF model it was converted from routes; llama.cpp would route it with softmax."""
    arch = g.architecture
    n_vocab = g.get(f"{arch}.vocab_size")
    if n_vocab is None:
        tok = g._arrays.get("tokenizer.ggml.tokens")
        n_vocab = tok[1] if tok else len(g.get("tokenizer.ggml.tokens") or ())
    if n_layer in (47, 48) and n_vocab == 154880:
        return 2, ("assumed sigmoid routing as llama.cpp does for this shape (GLM-4.7-Flash: 47/48 layers, "
                   "154880 tokens)")
    if any(n.endswith(".exp_probs_b.bias") for n in ts):
        return 2, ("assumed sigmoid routing: the file has exp_probs_b (a noaux_tc score-correction bias, which "
                   "only sigmoid routers carry); llama.cpp would route this file with softmax")
    return 1, "assumed softmax routing as llama.cpp does (DeepSeek-V2/V2.5 files without the key)"


def _rope_factors(g: GGUFFile, name: str = "rope_freqs.weight") -> list:
    """The per-pair divisors of tensor `name` (rope_freqs.weight; phi3's rope_factors_long / _short.weight): float32
    [rope_dim / 2]."""
    t = g.tensors[name]
    if t.type_name not in ("F32", "F16"):
        raise GGUFError(f"{g.path}: tensor '{name}' has type {t.type_name}; F32 (or F16) expected")
    f = np.asarray(g.tensor_data(name), np.float64).reshape(-1)
    if f.size == 0 or not np.all(np.isfinite(f)) or (f <= 0).any():
        raise GGUFError(f"{g.path}: tensor '{name}' must hold positive finite factors, got {f.tolist()[:8]}")
    return f.tolist()


def _longrope_scaling(g: GGUFFile, m, hf: dict) -> dict:
    """LongRoPE as llama.cpp's converter stores it (conversion/phi.py Phi3MiniModel.generate_extra_tensors, PhiMoeModel
    too): the factor lists as tensors rope_factors_long / rope_factors_short (float32 [rope_dim / 2], read into the
    config: not weights), rope.scaling.original_context_length, and the attention factor the converter computes,
    sqrt(1 + ln(s) / ln(original)), s = context_length / original, as rope.scaling.attn_factor (llama.cpp: 1 where
    the key is absent). -> the HF fields {rope_scaling, original_max_position_embeddings}. llama.cpp picks the
    long factors by its context size (n_ctx > original); glmbench.Model by the sequence run, as HF
    (ModelConfig.longrope)."""
    for n in ("rope_factors_long.weight", "rope_factors_short.weight"):
        if n not in g.tensors:
            raise GGUFError(f"{g.path}: tensor '{n}' is missing beside its longrope pair: both factor lists are "
                            f"needed (llama.cpp reads one by the context size)")
    orig = m("rope.scaling.original_context_length", hf.get("max_position_embeddings"), minimum=1)
    rs = {"rope_type": "longrope", "long_factor": _rope_factors(g, "rope_factors_long.weight"),
          "short_factor": _rope_factors(g, "rope_factors_short.weight"), "original_max_position_embeddings": orig,
          "attention_factor": m("rope.scaling.attn_factor", 1.0, kind=float)}
    return {"rope_scaling": rs, "original_max_position_embeddings": orig}


# ---- tensor names ---------------------------------------------------------------------------------
# architectures a gguf package may predate, read through one whose tensor names are theirs (llama.cpp's gguf-py
# constants: deepseek32's MODEL_TENSORS are glm-dsa's less the unsplit attn_kv_b)
_NAME_MAP_STANDIN = {"deepseek32": "glm-dsa"}


def _name_map(arch: str, n_blocks: int):
    gg = _gg()
    enums = {v: k for k, v in gg.MODEL_ARCH_NAMES.items()}
    enum = enums.get(arch) or enums[_NAME_MAP_STANDIN.get(arch, arch)]
    return gg.get_tensor_name_map(enum, n_blocks)


# Gemma 4's GGUF names (llama.cpp's src/llama-arch.cpp, LLM_ARCH_GEMMA4; the converter's conversion/gemma.py
# Gemma4Model) of glmbench's tensor names (ModelConfig.tensor_shapes: the MoE layers' dense MLP as the shared
# expert, HF's router.proj / .scale / .per_expert_scale as mlp.gate.weight / .scale / .per_expert_scale, the
# experts' gate and up apart): the model's tensors, then each layer's
_GEMMA4_MODEL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                       "lm_head.weight": "output.weight",
                       "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
                       "model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
                       "model.per_layer_projection_norm.weight": "per_layer_proj_norm.weight"}
_GEMMA4_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "post_attention_norm",
    "pre_feedforward_layernorm.weight": "ffn_norm", "post_feedforward_layernorm.weight": "post_ffw_norm",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2", "post_feedforward_layernorm_1.weight": "post_ffw_norm_1",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2",
    "self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
    "self_attn.o_proj.weight": "attn_output", "self_attn.q_norm.weight": "attn_q_norm",
    "self_attn.k_norm.weight": "attn_k_norm", "layer_scalar": "layer_output_scale",
    "per_layer_input_gate.weight": "inp_gate", "per_layer_projection.weight": "proj",
    "post_per_layer_input_norm.weight": "post_norm",
    "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down",
    "mlp.shared_experts.gate_proj.weight": "ffn_gate", "mlp.shared_experts.up_proj.weight": "ffn_up",
    "mlp.shared_experts.down_proj.weight": "ffn_down", "mlp.gate.weight": "ffn_gate_inp",
    "mlp.gate.scale": "ffn_gate_inp.scale", "mlp.gate.per_expert_scale": "ffn_down_exps.scale",
    "mlp.experts.gate_proj": "ffn_gate_exps", "mlp.experts.up_proj": "ffn_up_exps",
    "mlp.experts.down_proj": "ffn_down_exps"}


# LFM2's GGUF names (llama.cpp's src/llama-arch.cpp, LLM_ARCH_LFM2 / LFM2MOE; conversion/lfm2.py) of glmbench's tensor
# names (ModelConfig.tensor_shapes: HF's operator_norm / ffn_norm as input_layernorm / post_attention_layernorm, conv
# as linear_attn, out_proj as o_proj, q/k_layernorm as q/k_norm, feed_forward as mlp, expert_bias as the router's
# e_score_correction_bias): the final norm (HF's embedding_norm) is token_embd_norm (LLM_TENSOR_OUTPUT_NORM_LFM2)
_LFM2_MODEL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "token_embd_norm.weight",
                     "lm_head.weight": "output.weight"}
_LFM2_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "linear_attn.in_proj.weight": "shortconv.in_proj.weight", "linear_attn.in_proj.bias": "shortconv.in_proj.bias",
    "linear_attn.conv1d.weight": "shortconv.conv.weight", "linear_attn.conv1d.bias": "shortconv.conv.bias",
    "linear_attn.out_proj.weight": "shortconv.out_proj.weight", "linear_attn.out_proj.bias": "shortconv.out_proj.bias",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
    "mlp.gate.e_score_correction_bias": "exp_probs_b.bias", "mlp.experts.gate_proj": "ffn_gate_exps.weight",
    "mlp.experts.up_proj": "ffn_up_exps.weight", "mlp.experts.down_proj": "ffn_down_exps.weight"}


def _table_name(hf_name: str, model_names: dict, layer_names: dict) -> tuple[str | None, re.Match | None]:
    """An HF tensor's GGUF name by a family's tables: (the model-level name, or the layer's table entry
    without its blk.N prefix; None where neither table has it, the layer-name match or None)."""
    if hf_name in model_names:
        return model_names[hf_name], None
    m = re.match(r"^model\.layers\.(\d+)\.(.+)$", hf_name)
    return (layer_names.get(m.group(2)) if m else None), m


def _lfm2_name(hf_name: str) -> str | None:
    g, m = _table_name(hf_name, _LFM2_MODEL_NAMES, _LFM2_LAYER_NAMES)
    return g if m is None or g is None else f"blk.{m.group(1)}.{g}"


# Gemma 3n's GGUF names (llama.cpp's src/llama-arch.cpp, LLM_ARCH_GEMMA3N; the converter's conversion/gemma.py
# Gemma3NModel): Gemma 4's for the layers it shares, plus AltUp's and LAuReL's
_GEMMA3N_MODEL_NAMES = {**_GEMMA4_MODEL_NAMES, "model.altup_projections.weight": "altup_proj.weight",
                        "model.altup_unembed_projections.weight": "altup_unembd_proj.weight"}
_GEMMA3N_LAYER_NAMES = {
    "altup.correct_output_scale": "altup_correct_scale", "altup.correction_coefs.weight": "altup_correct_coef",
    "altup.prediction_coefs.weight": "altup_predict_coef", "altup.modality_router.weight": "altup_router",
    "altup.router_norm.weight": "altup_router_norm", "laurel.linear_left.weight": "laurel_l",
    "laurel.linear_right.weight": "laurel_r", "laurel.post_laurel_norm.weight": "laurel_post_norm"}


def _gemma3n_name(hf_name: str) -> str | None:
    g, m = _table_name(hf_name, _GEMMA3N_MODEL_NAMES, _GEMMA3N_LAYER_NAMES)
    if m is None or g is not None:
        return g if m is None or g is None else f"blk.{m.group(1)}.{g}.weight"
    return None if m.group(2) == "layer_scalar" else _gemma4_name(hf_name)


def _gemma4_name(hf_name: str) -> str | None:
    g, m = _table_name(hf_name, _GEMMA4_MODEL_NAMES, _GEMMA4_LAYER_NAMES)
    if m is None or g is None:
        return g
    return f"blk.{m.group(1)}.{g}" + ("" if g.endswith(".scale") else ".weight")


def gguf_name(hf_name: str, arch: str, n_blocks: int, _maps={}) -> str | None:
    """The GGUF name of an HF-named tensor (glmbench's names: stacked experts as
    `mlp.experts.gate_proj`), through gguf's TensorNameMap (Gemma 4: its own table, _GEMMA4_LAYER_NAMES);
    None when it has none."""
    if arch == "gemma4":
        return _gemma4_name(hf_name)
    if arch == "gemma3n":
        return _gemma3n_name(hf_name)
    if arch in SHORTCONV_ARCHITECTURES:
        return _lfm2_name(hf_name)
    if arch == "falcon-h1" and hf_name.endswith(".post_attention_layernorm.weight"):
        # the MLP's norm: llama.cpp's falcon-h1 loader names it without `.weight` (tn(LLM_TENSOR_FFN_NORM, i)), and
        # the converter writes it so (HF's pre_ff_layernorm.weight, a source name of gguf's TensorNameMap)
        return hf_name[: -len(".post_attention_layernorm.weight")].replace("model.layers.", "blk.") + ".ffn_norm"
    if hf_name.endswith(".e_score_correction_bias"):   # the converter's rename, then exp_probs_b
        return hf_name.split(".mlp.")[0].replace("model.layers.", "blk.") + ".exp_probs_b.bias"
    if hf_name.endswith(".linear_attn.dt_bias"):   # the converter renames it dt_proj.bias: ssm_dt.bias
        return gguf_name(hf_name[: -len("dt_bias")] + "dt_proj.bias", arch, n_blocks)
    if hf_name.endswith(".linear_attn.A_log"):   # ssm_a (llama.cpp's LLM_TENSOR_SSM_A_NOSCAN): no suffix
        w = gguf_name(hf_name + ".weight", arch, n_blocks)
        return None if w is None else w[: -len(".weight")]
    # Mamba-2's in_proj and D (skip per head; ssm_d, no suffix either), by the name TensorNameMap knows them
    # under (Granite's `mamba.`; glmbench's canonical `linear_attn.` is Qwen3-Next's, whose in_proj is split)
    if hf_name.endswith(".linear_attn.in_proj.weight"):
        return gguf_name(hf_name.replace(".linear_attn.", ".mamba."), arch, n_blocks)
    if hf_name.endswith(".linear_attn.D"):
        w = gguf_name(hf_name.replace(".linear_attn.", ".mamba.") + ".weight", arch, n_blocks)
        return None if w is None else w[: -len(".weight")]
    if hf_name.endswith((".mlp.fc1_latent_proj.weight", ".mlp.fc2_latent_proj.weight")):
        # Nemotron 3 Super's latent projections, by the name TensorNameMap knows (ffn_latent_down / _up)
        return gguf_name(hf_name.replace("model.layers.", "backbone.layers.").replace(".mlp.", ".mixer."), arch,
                         n_blocks)
    if hf_name.endswith("_proj_bias"):   # GPT-OSS's expert biases (mlp.experts.gate_proj_bias): ffn_*_exps.bias
        w = gguf_name(hf_name[: -len("_bias")], arch, n_blocks)
        return None if w is None else w[: -len(".weight")] + ".bias"
    key = (arch, n_blocks)
    if key not in _maps:
        _maps[key] = _name_map(arch, n_blocks)
    base, suffix = hf_name, ".weight"
    for s in (".weight", ".bias"):
        if hf_name.endswith(s):
            base, suffix = hf_name[: -len(s)], s
            break
    g = _maps[key].get_name(base)
    return None if g is None else g + suffix


def un_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's LlamaModel.permute on q_proj/k_proj rows [n_head * Dh, ...]: the converter
    wrote w.reshape(n_head, 2, Dh/2, ...).swapaxes(1, 2) (interleaving each head's two halves)."""
    rows = w.shape[0]
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


# ---- bytes ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileWeights:
    """What a model file really stores: every HF-named tensor's type and exact bytes. `extra_bytes`:
    tensors the config does not name that llama.cpp's loader creates (e.g. rope_freqs,
    phi3's rope_factors_long / _short, NVFP4 .scale tensors; one it does not create is refused: _check_created), loaded
    with the model; `skipped_bytes`: multi-token-prediction layers, never run by decoding."""
    path: str
    kind: str                                         # "gguf" | "safetensors" (an HF folder)
    main_type: str                                    # the type holding most matrix bytes ("Q4_K")
    total_bytes: int                                  # every tensor of the file
    tensors: tuple = field(compare=False, repr=False)  # ((hf_name, type_name, n_bytes), ...)
    extra_bytes: int = 0
    skipped_bytes: int = 0
    # a multimodal checkpoint's vision tower and projector (audio tower) beside its text model (text_model_name:
    # None): not priced, as the config prices the text model only (ModelConfig.unpriced)
    unpriced_bytes: int = 0

    @property
    def model_bytes(self) -> int:
        """Bytes of the model priced: everything but the skipped MTP layers and the unpriced vision tower."""
        return self.total_bytes - self.skipped_bytes - self.unpriced_bytes

    @property
    def weight_format(self) -> str:
        """The vocab weight format standing for the file's main matrix type where one name is needed
        (records, the cost model's matmul dtype): the type itself when vocab knows it (Q4_K ->
        q4_K), else q8_0 for 32-weight blocks and q4_K for 256-weight super-blocks. Bytes never
        come from it: they are the file's own (bytes_of)."""
        from glmbench import vocab
        t = self.main_type
        name = t.lower().replace("_k", "_K")
        if name in vocab.WEIGHT_FORMATS:
            return name
        return "q4_K" if t.endswith("_K") or t.startswith(("IQ", "TQ")) else "q8_0"

    def bytes_of(self) -> dict:
        return {n: b for n, _, b in self.tensors}

    def types(self) -> dict:
        return {n: t for n, t, _ in self.tensors}

    def type_counts(self) -> dict:
        out: dict = {}
        for _, t, b in self.tensors:
            out[t] = out.get(t, 0) + b
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class _Rows(str):
    """A GGUF tensor name with a row range [start, stop) (RowSlice, ExpertRows). As a str it is the
    tensor's name."""
    start: int
    stop: int

    def __new__(cls, name: str, start: int, stop: int):
        o = super().__new__(cls, name)
        o.start, o.stop = int(start), int(stop)
        return o


class RowSlice(_Rows):
    """A GGUF tensor name standing for rows [start, stop) of that tensor: phi3's fused attn_qkv (q, k,
    v one after the other) and ffn_up ([2F, D]: gate rows first, then up, as llama.cpp's fused SwiGLU
    splits it). As a str it is the tensor's name."""


class PerExpert(tuple):
    """The GGUF names of a stacked expert tensor stored one expert at a time (llama.cpp's first Mixtral
    files, late 2023: blk.N.ffn_gate.E.weight per expert; the converter stacks them as ffn_gate_exps
    since 2024, and llama.cpp still loads both): the HF tensor is their stack, in expert order."""


class Joined(str):
    """GGUF tensors whose rows, one after another, hold one HF tensor: Qwen3-Next's in_proj_qkvz
    [2 Hk dk + 2 Hv dv, D], which llama.cpp's converter (conversion/qwen.py
    Qwen3NextModel.modify_tensors) regroups from HF's per-key-head [q, k, v, z] blocks into the q, k
    and v rows of every head (attn_qkv) and their z rows (attn_gate), as llama.cpp's qwen3next loads
    them (src/models/qwen3next.cpp: wqkv, wqkv_gate). `names`: all of them, whose bytes together are
    the HF tensor's (file_weights). As a str it is the first one's name, as a RowSlice is its fused
    tensor's; checkpoint.state_dict reads all of them and gathers their rows back into HF's order
    (checkpoint._qkvz_rows)."""
    names: tuple

    def __new__(cls, names):
        o = super().__new__(cls, names[0])
        o.names = tuple(names)
        return o


def _qkvz_split(hf: str, name: str, ts: dict) -> Joined | None:
    """The attn_qkv + attn_gate pair holding Qwen3-Next's in_proj_qkvz `hf` (GGUF name `name`,
    ssm_in: the fused tensor files of llama.cpp's first qwen3next support kept), when the file splits it."""
    if not hf.endswith(".linear_attn.in_proj_qkvz.weight") or not name.endswith(".ssm_in.weight"):
        return None
    b = name[: -len(".ssm_in.weight")]
    qkv, z = b + ".attn_qkv.weight", b + ".attn_gate.weight"
    return Joined((qkv, z)) if qkv in ts and z in ts else None


class ExpertRows(_Rows):
    """A GGUF tensor name standing for rows [start, stop) of every expert's matrix in a stacked tensor
    [E, rows, D] (axis 1, not axis 0 as a RowSlice): Gemma 4's ffn_gate_up_exps [E, 2F, D], each expert's
    gate rows then its up rows (HF's experts.gate_up_proj, which llama.cpp's gemma4 loads whole as
    ffn_gate_up_exps). As a str it is the tensor's name; a reader of the weights takes a[:, start:stop]
    (models/checkpoint.py's _expert_rows). expected_gguf_tensors gives them only to a caller that says it
    takes them (expert_rows=True: file_weights and checkpoint.py) and refuses the file otherwise."""


def _gate_up_split(hf: str, name: str, shape, ts: dict) -> ExpertRows | None:
    """The rows of Gemma 4's fused ffn_gate_up_exps holding the experts' gate or up (`hf`:
    mlp.experts.gate_proj / up_proj [E, F, D]; GGUF name `name`: ffn_gate_exps / ffn_up_exps, which older
    files hold apart), when the file fuses them."""
    for part, first in (("ffn_gate_exps", True), ("ffn_up_exps", False)):
        if name.endswith(f".{part}.weight") and hf.endswith(("mlp.experts.gate_proj", "mlp.experts.up_proj")):
            fused = name[: -len(f"{part}.weight")] + "ffn_gate_up_exps.weight"
            if fused not in ts:
                return None
            F = int(shape[1])
            return ExpertRows(fused, 0, F) if first else ExpertRows(fused, F, 2 * F)
    return None


def _per_expert(hf: str, shape, ts: dict) -> PerExpert | None:
    """The per-expert names of a stacked expert tensor `hf` ([E, ...]), when the file holds them so."""
    parts = {"mlp.experts.gate_proj": "ffn_gate", "mlp.experts.up_proj": "ffn_up", "mlp.experts.down_proj": "ffn_down"}
    pre, _, rest = hf.partition(".mlp.")
    if "mlp." + rest not in parts or not pre.startswith("model.layers."):
        return None
    blk = pre.replace("model.layers.", "blk.")
    names = [f"{blk}.{parts['mlp.' + rest]}.{e}.weight" for e in range(int(shape[0]))]
    return PerExpert(names) if all(n in ts for n in names) else None


def _phi3_fused(hf: str, shapes: dict, ts: dict) -> RowSlice | None:
    """The rows of phi3's fused attn_qkv / ffn_up (glm4's ffn_up too; chatglm's attn_qkv with its bias, and ffn_up)
    holding HF tensor `hf`, when the file fuses them."""
    pre = hf.split(".self_attn.")[0].split(".mlp.")[0]       # "model.layers.N"
    blk = pre.replace("model.layers.", "blk.")
    m = re.search(r"\.self_attn\.([qkv])_proj\.(weight|bias)$", hf)
    if m:
        # (chatglm's fused attn_qkv carries one bias of the q, k, v rows too: THUDM's remote-code query_key_value)
        part = m.group(2)
        name = f"{blk}.attn_qkv.{part}"
        if name not in ts:
            return None
        q, k = (shapes[f"{pre}.self_attn.{x}_proj.{part}"][0] for x in ("q", "k"))
        a = {"q": 0, "k": q, "v": q + k}[m.group(1)]
        return RowSlice(name, a, a + shapes[hf][0])
    if hf.endswith(("mlp.gate_proj.weight", "mlp.up_proj.weight")):
        name = blk + ".ffn_up.weight"
        F = shapes[hf][0]
        if blk + ".ffn_gate.weight" in ts or name not in ts or ts[name].shape[0] != 2 * F:
            return None
        return RowSlice(name, 0, F) if hf.endswith("gate_proj.weight") else RowSlice(name, F, 2 * F)
    return None


def expected_gguf_tensors(g: GGUFFile, shapes: dict, n_layers: int, *, expert_rows: bool = False) -> dict:
    """HF name -> the GGUF tensor names that hold it (kv_b_proj: attn_kv_b, or attn_k_b + attn_v_b;
    phi3's q/k/v and gate/up: a RowSlice of the fused attn_qkv / ffn_up; stacked experts stored one
    expert at a time: a PerExpert of their names; Qwen3-Next's in_proj_qkvz: ssm_in, or a Joined of
    attn_qkv + attn_gate; Gemma 4's experts' gate / up: an ExpertRows of ffn_gate_up_exps where the file
    fuses them, given only with `expert_rows`: a reader that does not take each expert's rows gets a
    GGUFError saying so rather than the whole fused tensor),
    checked against the file: a missing tensor or a shape that disagrees with the config is a GGUFError
    naming both names."""
    arch, ts = g.architecture, g.tensors
    nb = n_layers + int(g.get(f"{arch}.nextn_predict_layers") or 0)
    out = {}
    for hf, shape in shapes.items():
        if arch == "apertus" and ".mlp.act_fn." in hf:
            continue   # Apertus's xIELU parameters: metadata (xielu_params), no tensors
        fused = _phi3_fused(hf, shapes, ts) if arch in ("phi3", "glm4", "chatglm") else None
        if fused is not None:
            if tuple(ts[fused].shape[1:]) != tuple(shape[1:]) or fused.stop > ts[fused].shape[0]:
                raise GGUFError(f"{g.path}: tensor {str(fused)!r} has shape {tuple(ts[fused].shape)}, the config "
                                f"({hf!r}) expects rows {fused.start}..{fused.stop} of width {tuple(shape[1:])}")
            out[hf] = (fused,)
            continue
        name = gguf_name(hf, arch, nb)
        up = hf.split(".mlp.")[0].replace("model.layers.", "blk.") + ".ffn_up.weight"
        if arch in ("phi3", "glm4", "chatglm") and hf.endswith(("mlp.gate_proj.weight", "mlp.up_proj.weight")) and \
                up in ts and (name is None or name not in ts):
            # a fused ffn_up whose rows are not the config's gate and up (2 x feed_forward_length)
            raise GGUFError(f"{g.path}: tensor {up!r} has shape {tuple(ts[up].shape)}; the config ({hf!r}) expects gate "
                            f"and up fused in it, 2 x {shape[0]} rows of width {tuple(shape[1:])} "
                            f"('{arch}.feed_forward_length' = {shape[0]})")
        if name is None:
            raise GGUFError(f"{g.path}: no GGUF name for tensor {hf!r} (architecture {arch})")
        if name not in ts:
            if hf.endswith(".e_score_correction_bias") or (hf == "lm_head.weight" and "output.weight" not in ts):
                continue  # routed on scores alone / tied embeddings
            if arch == "gemma4" and hf.endswith(".mlp.gate.per_expert_scale"):
                continue  # folded into the experts' own scales (the converter's NVFP4 files: _generate_nvfp4_tensors)
            fused = _gate_up_split(hf, name, shape, ts) if arch == "gemma4" else None
            if fused is not None:
                fs = tuple(ts[fused].shape)
                if fs != (shape[0], 2 * shape[1], *shape[2:]):
                    raise GGUFError(f"{g.path}: tensor {str(fused)!r} has shape {fs}, the config ({hf!r}, the gate and "
                                    f"up rows of each expert) expects {(shape[0], 2 * shape[1], *shape[2:])}")
                if not expert_rows:
                    raise GGUFError(f"{g.path}: tensor {str(fused)!r} holds the experts' gate and up rows fused "
                                    f"([E, 2F, D]); this reader does not split them (checkpoint.py's does: "
                                    f"expected_gguf_tensors(expert_rows=True))")
                out[hf] = (fused,)
                continue
            each = _per_expert(hf, shape, ts)
            if each is not None:
                bad = [n for n in each if tuple(ts[n].shape) != tuple(shape[1:])]
                if bad:
                    raise GGUFError(f"{g.path}: tensor {bad[0]!r} has shape {tuple(ts[bad[0]].shape)}, the config "
                                    f"({hf!r}, one expert) expects {tuple(shape[1:])}")
                out[hf] = each
                continue
            split = _qkvz_split(hf, name, ts)
            if split is not None:
                # the z rows: the value heads' width (out_proj's input); q, k, v: the rest
                vz = shapes[hf.replace("in_proj_qkvz", "out_proj")][1]
                want = ((shape[0] - vz, *shape[1:]), (vz, *shape[1:]))
                for n, w in zip(split.names, want):
                    if tuple(ts[n].shape) != w:
                        raise GGUFError(f"{g.path}: tensor {n!r} has shape {tuple(ts[n].shape)}, the config "
                                        f"({hf!r}, split in q/k/v and z rows) expects {w}")
                out[hf] = (split,)
                continue
            if hf.endswith("self_attn.kv_b_proj.weight"):
                kb, vb = name.replace("attn_kv_b", "attn_k_b"), name.replace("attn_kv_b", "attn_v_b")
                if kb in ts and vb in ts:
                    out[hf] = (kb, vb)
                    continue
                raise GGUFError(f"{g.path}: tensor {name!r} (or the split {kb!r} + {vb!r}) is missing "
                                f"(HF {hf!r})")
            if arch == "gemma4" and hf.endswith(("mlp.experts.gate_proj", "mlp.experts.up_proj")):
                fused = name.rsplit(".", 2)[0] + ".ffn_gate_up_exps.weight"
                raise GGUFError(f"{g.path}: tensor {name!r} (or the fused {fused!r}) is missing (HF {hf!r})")
            if hf.endswith(".linear_attn.in_proj_qkvz.weight"):
                raise GGUFError(f"{g.path}: tensor {name!r} (or the split {name.replace('ssm_in', 'attn_qkv')!r} + "
                                f"{name.replace('ssm_in', 'attn_gate')!r}) is missing (HF {hf!r})")
            raise GGUFError(f"{g.path}: tensor {name!r} is missing (HF {hf!r}, shape {tuple(shape)} from the config)")
        # (ERNIE-4.5's score-correction bias is stored [1, E], as HF holds it: the same E values; a Gated
        # DeltaNet's or Mamba-2's depthwise conv1d [C, 1, K] squeezed to [C, K] by the converter; Command-R+'s
        # per-head q/k LayerNorm weights [heads, head_dim] as HF holds them, flat in the config; Mamba-2's A and
        # D [H, 1] (conversion/mamba.py Mamba2Model), its gated norm [groups, d_inner / groups])
        fs = tuple(ts[name].shape)
        if fs != tuple(shape) and not (
                hf.endswith(".e_score_correction_bias") and fs == (1, *shape)) and not (
                hf.endswith(".linear_attn.conv1d.weight") and len(shape) == 3 and shape[1] == 1
                and fs == (shape[0], shape[2])) and not (
                hf.endswith(("self_attn.q_norm.weight", "self_attn.k_norm.weight")) and len(shape) == 1
                and len(fs) == 2 and fs[0] * fs[1] == shape[0]) and not (
                hf.endswith((".linear_attn.A_log", ".linear_attn.D")) and len(shape) == 1
                and fs == (shape[0], 1)) and not (
                hf.endswith(".linear_attn.norm.weight") and (arch in MAMBA_ARCHITECTURES or arch in PARALLEL_ARCHITECTURES)
                and len(shape) == 1
                and len(fs) == 2 and fs[0] * fs[1] == shape[0]):
            if g.vision_architecture == "qwen3vlmoe" and ".mlp.experts." in hf and len(shape) == 3 and \
                    fs in ((shape[0], shape[2], shape[1]), (shape[0], shape[2] // 2, 2 * shape[1])):
                # conversion/qwen3vl.py Qwen3VLMoeTextModel takes the experts as the released checkpoints hold them
                # (gate_up_proj [E, D, 2F], down_proj [E, F, D]) and transposes them; a folder saved by transformers
                # 5.x holds them as its model does ([E, 2F, D], [E, D, F]), so the file's experts come out transposed
                # (and gate / up split on the wrong axis). llama.cpp's qwen3vlmoe loader refuses the file too.
                raise GGUFError(f"{g.path}: tensor {name!r} has shape {fs}, the config ({hf!r}) expects "
                                f"{tuple(shape)}: the experts are transposed, as llama.cpp's converter writes them from "
                                f"a Qwen3-VL-MoE folder saved by transformers 5.x (experts.gate_up_proj [E, 2F, D], not "
                                f"the released checkpoints' [E, D, 2F]); llama.cpp's qwen3vlmoe loader refuses the file "
                                f"too. Convert the released checkpoint (or transpose the folder's experts.gate_up_proj "
                                f"and experts.down_proj back to [E, D, 2F] / [E, F, D] first)")
            raise GGUFError(f"{g.path}: tensor {name!r} has shape {tuple(ts[name].shape)}, the config "
                            f"({hf!r}) expects {tuple(shape)}")
        out[hf] = (name,)
    return out


def file_weights(g: GGUFFile, shapes: dict, n_layers: int) -> FileWeights:
    """Each HF-named tensor of `shapes` (ModelConfig.tensor_shapes()) -> its stored type and bytes."""
    # (first: a tensor llama.cpp does not create can make the config ask for one the file lacks, e.g. an output.weight
    # in a gemma2 file reads as an untied lm_head that gemma2 never has)
    _check_created(g, _Meta(g))
    where = expected_gguf_tensors(g, shapes, n_layers, expert_rows=True)
    used, rows = set(), []
    for hf, names in where.items():
        names = tuple(p for n in names for p in (n.names if isinstance(n, Joined) else (n,)))
        ts = [g.tensors[n] for n in names]
        used.update(str(n) for n in names)
        # a RowSlice holds its rows' share of the fused tensor's bytes (whole rows: exact)
        # (an ExpertRows: its rows of every expert, axis 1)
        rows.append((hf, ts[0].type_name, sum(t.n_bytes * (n.stop - n.start) // t.shape[0] if isinstance(n, RowSlice)
                                              else t.n_bytes * (n.stop - n.start) // t.shape[1]
                                              if isinstance(n, ExpertRows) else t.n_bytes for n, t in zip(names, ts))))
    skipped = extra = 0
    arch = g.architecture
    blocks = g.get(f"{arch}.block_count")
    for n, t in g.tensors.items():
        if n in used:
            continue
        parts = n.split(".")
        if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() and int(parts[1]) < n_layers and \
                re.fullmatch(r"ffn_(gate|up|down|gate_up|gate_inp)_shexp", parts[2]):
            # a shared expert's tensor on a layer the metadata gives none: llama.cpp's loaders create shexp tensors
            # only where the count / width says so, and a tensor the loader does not create is a file it refuses
            # ("wrong number of tensors"); running without it, or pricing it as extra bytes, would be another model
            said = [f"'{k}' = {g.get(k)}" for k in (f"{arch}.expert_shared_count", f"{arch}.expert_shared_feed_forward_length")
                    if g.get(k) is not None]
            raise GGUFError(f"{g.path}: tensor {n!r} is a shared expert's, but the metadata gives layer {parts[1]} none "
                            f"({', '.join(said) if said else 'no shared-expert count or width'}); llama.cpp refuses such "
                            f"a file (a tensor its loader does not create)")
        if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() and int(parts[1]) >= n_layers:
            if isinstance(blocks, (int, np.integer)) and int(parts[1]) >= blocks:
                # (llama.cpp refuses such a file: "wrong number of tensors")
                raise GGUFError(f"{g.path}: tensor {n!r} is of block {parts[1]}, but metadata "
                                f"'{g.architecture}.block_count' = {int(blocks)}")
            skipped += t.n_bytes
        else:
            extra += t.n_bytes
    by_type: dict = {}
    for hf, t, b in rows:
        if len(shapes[hf]) >= 2:
            by_type[t] = by_type.get(t, 0) + b
    # (the main type is the tensors', never the metadata's general.file_type: llama.cpp reads that key only to name
    # the file (src/llama-model-loader.cpp: it replaces the type guessed from the tensors, for llama_ftype_name,
    # "unknown, may not work" for a value it lacks) and checks it against nothing, since a mix's "mostly" type
    # legitimately sits beside others (Q4_K_M: Q6_K / Q5_K matrices, F32 norms). glmbench reads it nowhere: bytes and
    # types are the tensors' own, so an unknown or contradicting file_type cannot make a price wrong)
    main = max(by_type, key=by_type.get) if by_type else "F32"
    return FileWeights(g.path, "gguf", main, g.tensor_bytes, tuple(rows), extra, skipped)


# ---- HF safetensors folders ---------------------------------------------------------------------
_ST_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
             "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}
# safetensors dtype -> the vocab weight format standing for it (FileWeights.weight_format)
_ST_FORMAT = {"F32": "F32", "F16": "F16", "BF16": "BF16", "F64": "F64", "F8_E4M3": "FP8", "F8_E5M2": "FP8"}


def _safetensors_header(path: str) -> dict:
    """{name: (dtype, shape, bytes)} from a .safetensors file's JSON header (no tensor data read);
    a GGUFError (ValueError) naming the file when it is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            if not 0 < n <= os.path.getsize(path) - 8:
                raise GGUFError(f"{path}: not a safetensors file (header length {n})")
            h = json.loads(f.read(n))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GGUFError(f"{path}: not a readable safetensors header: {e}") from None
    if not isinstance(h, dict):
        raise GGUFError(f"{path}: not a safetensors file (its header is a JSON {type(h).__name__}, not an object)")
    out = {}
    for name, e in h.items():
        if name == "__metadata__":
            continue
        if not isinstance(e, dict) or not isinstance(e.get("dtype"), str) or e["dtype"] not in _ST_BYTES \
                or not isinstance(e.get("shape"), list) \
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in e["shape"]):
            raise GGUFError(f"{path}: tensor {name!r} header entry {e!r} has no known dtype and shape")
        numel = 1
        for d in e["shape"]:
            numel *= d
        out[name] = (e["dtype"], tuple(e["shape"]), numel * _ST_BYTES[e["dtype"]])
    return out


# the parts a quantized checkpoint stores for one matrix, by suffix: AWQ / GPTQ (qweight, qzeros, scales, g_idx),
# compressed-tensors (weight_packed, weight_scale, ...), FP8 block scales (weight_scale_inv), bitsandbytes (the
# packed weight's absmax, quant_map, quant_state; int8's SCB), MXFP4 (gpt-oss: X_blocks, X_scales)
_QUANT_PARTS = (".qweight", ".qzeros", ".scales", ".g_idx", ".weight_packed", ".weight_scale", ".weight_shape",
                ".weight_zero_point", ".weight_global_scale", ".input_global_scale", ".weight_scale_inv",
                ".input_scale", ".SCB", ".weight_format")
_BNB_PARTS = re.compile(r"\.weight\.(absmax|quant_map|nested_absmax|nested_quant_map|quant_state\..*)$")


# EXAONE 3.x's released checkpoint names (ExaoneForCausalLM, remote code) -> Llama's, as transformers 5.25 renames
# them on load (conversion_mapping.py "exaone")
_EXAONE_NAMES = ((r"^transformer\.wte\.", "model.embed_tokens."), (r"^transformer\.h\.", "model.layers."),
                 (r"^transformer\.ln_f\.", "model.norm."), (r"\.attn\.attention\.", ".self_attn."),
                 (r"\.self_attn\.out_proj\.", ".self_attn.o_proj."), (r"\.ln_1\.", ".input_layernorm."),
                 (r"\.ln_2\.", ".post_attention_layernorm."), (r"\.mlp\.c_fc_0\.", ".mlp.gate_proj."),
                 (r"\.mlp\.c_fc_1\.", ".mlp.up_proj."), (r"\.mlp\.c_proj\.", ".mlp.down_proj."))


def exaone_name(name: str) -> str:
    """An EXAONE 3.x checkpoint tensor's Llama name (transformer.h.N.attn.attention.q_proj.weight ->
    model.layers.N.self_attn.q_proj.weight); any other name as it is."""
    if not name.startswith("transformer."):
        return name
    for a, b in _EXAONE_NAMES:
        name = re.sub(a, b, name)
    return name


# a multimodal checkpoint's text model (transformers 5.25's ForConditionalGeneration: model.language_model.*, lm_head;
# the older layouts of LLaVA / Mllama / InternVL: language_model.model.*, language_model.lm_head) and the parts beside
# it: Qwen-VL's and GLM-4V's visual, LLaVA's / InternVL's vision_tower and multi_modal_projector (InternVL's remote
# code: vision_model, mlp1), LLaVA-NeXT's image_newline, Gemma's embed_vision / embed_audio / audio_tower
_TEXT_PREFIXES = (("model.language_model.", "model."), ("language_model.model.", "model."),
                  ("language_model.lm_head.", "lm_head."))
_VISION_PARTS = re.compile(r"^(model\.)?(visual|vision_tower|vision_model|vision_encoder|multi_modal_projector|mm_projector|"
                           r"image_newline|audio_tower|embed_vision|embed_audio|mlp1)(\.|$)")


def text_model_name(name: str) -> str | None:
    """A checkpoint tensor's name in its text model (model.language_model.layers.0... -> model.layers.0...,
    _TEXT_PREFIXES); None for a multimodal model's vision / audio tower or projector (_VISION_PARTS), which
    glmbench does not price; any other name as it is."""
    for a, b in _TEXT_PREFIXES:
        if name.startswith(a):
            return b + name[len(a):]
    return None if _VISION_PARTS.match(name) else name


def _stored_owner(name: str, shapes: dict) -> list:
    """The config's tensors (ModelConfig.tensor_shapes names) a stored tensor's bytes belong to: itself, the
    matrix a quantization part belongs to (_QUANT_PARTS, _BNB_PARTS, MXFP4's _blocks / _scales), the stacked
    experts a per-expert tensor is one of (mlp.experts.N.X.weight -> mlp.experts.X), both halves of a fused
    gate_up_proj; [] for a tensor the config does not name."""
    n = re.sub(r"\.experts\.\d+\.", ".experts.", _BNB_PARTS.sub(".weight", name))
    # (Gemma 3n's AltUp projections, one tensor each in HF's checkpoint, stacked in the config)
    n = re.sub(r"^model\.altup_(unembed_)?projections\.\d+\.", r"model.altup_\1projections.", n)
    for suffix in _QUANT_PARTS:
        if n.endswith(suffix):
            n = n[:-len(suffix)] + ".weight"
            break
    else:
        n = re.sub(r"_(blocks|scales)$", "", n)
    for c in (n, n[:-len(".weight")] if n.endswith(".weight") else None):
        if c is None:
            continue
        if c in shapes:
            return [c]
        if "gate_up_proj" in c:
            halves = [c.replace("gate_up_proj", "gate_proj"), c.replace("gate_up_proj", "up_proj")]
            if all(h in shapes for h in halves):
                return halves
    # transformers 5's names for tensors glmbench names otherwise: Hunyuan's router (mlp.gate.wg) and shared MLP
    # (mlp.shared_mlp), Phi-3.5-MoE's router (mlp.router)
    # (EXAONE 3.x's released names: exaone_name)
    alias = re.sub(r"\.mlp\.(gate\.wg|router)\.", ".mlp.gate.", exaone_name(n)).replace(".mlp.shared_mlp.",
                                                                                        ".mlp.shared_experts.")
    # (the released Mixtral / Phi-3.5-MoE names: block_sparse_moe.gate the router, experts' w1 / w3 / w2 their gate /
    # up / down; model.block_sparse_moe_state_dict)
    from glmbench import vocab
    alias = re.sub(r"\.block_sparse_moe\.gate\.", ".mlp.gate.", alias)
    alias = re.sub(r"\.block_sparse_moe\.experts\.(w[123])\.",
                   lambda m: f".mlp.experts.{vocab.BLOCK_SPARSE_EXPERT_NAMES[m[1]]}.", alias)
    return _stored_owner(alias, shapes) if alias != n else []


def safetensors_files(folder: str) -> list:
    """The *.safetensors files of an HF folder that hold its model: those model.safetensors.index.json's
    weight_map names where the folder has one (a listed file missing is a GGUFError naming it), else every
    *.safetensors but Mistral's consolidated*.safetensors copy (its own tensor names) beside HF-named ones."""
    idx = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(idx):
        try:
            with open(idx, encoding="utf-8") as f:
                wm = json.load(f).get("weight_map")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as e:
            raise GGUFError(f"{idx}: not a readable safetensors index: {e}") from None
        if not isinstance(wm, dict) or not wm or not all(isinstance(v, str) for v in wm.values()):
            raise GGUFError(f"{idx}: field 'weight_map' must map tensor names to file names, got {wm!r}")
        files = [os.path.join(folder, n) for n in sorted(set(wm.values()))]
        for f in files:
            if not os.path.isfile(f):
                raise GGUFError(f"{idx}: 'weight_map' names {os.path.basename(f)!r}, which is not in {folder}")
        return files
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    hf = [f for f in files if not os.path.basename(f).startswith("consolidated")]
    # shards without their index (model-00001-of-00004.safetensors ...): each of the N must be there, else the
    # missing one's tensors would be priced at a guessed dtype (sweep) or named missing one by one (measure)
    sets: dict = {}
    for f in hf or files:
        s = _SHARD_NAME.match(os.path.basename(f))
        if s:
            sets.setdefault((s["prefix"], int(s["count"])), set()).add(int(s["no"]))
    for (prefix, count), have in sorted(sets.items()):
        first = 0 if 0 in have else 1   # (HF numbers them from 1)
        missing = [n for n in range(first, first + count) if n not in have]
        if missing:
            name = f"{prefix}-{missing[0]:05d}-of-{count:05d}.safetensors"
            raise GGUFError(f"{folder}: shard {name!r} is missing ({len(have)} of the {count} shards "
                            f"{prefix}-NNNNN-of-{count:05d}.safetensors are there, and no "
                            f"model.safetensors.index.json)")
    return hf or files


_SHARD_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.safetensors$")


def folder_weights(folder: str, shapes: dict, n_layers: int) -> FileWeights | None:
    """An HF folder's stored bytes from its *.safetensors headers (None without any; the files
    safetensors_files picks): each HF-named
    tensor of `shapes` holds the bytes of the stored tensors that make it (_stored_owner: itself, its
    quantization parts such as AWQ / GPTQ qweight + qzeros + scales, MXFP4 blocks + scales, FP8 scales,
    experts stored one by one, half a fused gate_up_proj each), at the type of its largest part (AWQ /
    GPTQ / MXFP4 for those layouts); a tensor the folder does not store under a name of its own is
    counted at the dtype of its layer's other tensors, else the folder's main one, so a prediction for
    the folder is at its stored dtype; an unquantized tensor stored whole under its own name with another
    number of elements than `shapes` gives is a GGUFError (config and weights disagree). Layers past
    `n_layers` (MTP) are skipped bytes; tensors the config
    does not name extra bytes; a multimodal checkpoint's text model is read by its text names and its vision tower
    and projector are unpriced bytes (text_model_name)."""
    files = safetensors_files(folder) if glob.glob(os.path.join(folder, "*.safetensors")) else []
    if not files:
        return None
    head: dict = {}
    where: dict = {}
    for f in files:
        h = _safetensors_header(f)
        head.update(h)
        where.update(dict.fromkeys(h, f))
    total = sum(b for _, _, b in head.values())
    where = {text_model_name(n): f for n, f in where.items()}
    # (a multimodal checkpoint: the text model's tensors by their text names, the vision tower's bytes unpriced)
    texts = {n: text_model_name(n) for n in head}
    unpriced = sum(b for n, (_, _, b) in head.items() if texts[n] is None)
    head = {texts[n]: v for n, v in head.items() if texts[n] is not None}
    parts: dict = {}
    for name, (dt, shape, b) in head.items():
        owners = _stored_owner(name, shapes)
        for o in owners:
            parts.setdefault(o, []).append((name, dt, shape, b / len(owners)))
    by_type: dict = {}
    layer_dt: dict = {}
    for name, (dt, shape, b) in head.items():
        if len(shape) >= 2 and dt in _ST_FORMAT:     # (unquantized storage: the fallback's dtype)
            by_type[dt] = by_type.get(dt, 0) + b
            if name.startswith("model.layers."):
                layer_dt.setdefault(name.split(".")[2], dt)
    fallback = max(by_type, key=by_type.get) if by_type else "F32"
    rows, counted = [], 0
    for hf, shape in shapes.items():
        numel = 1
        for d in shape:
            numel *= int(d)
        if hf in parts:
            b = int(sum(p[3] for p in parts[hf]))
            _, dt, st_shape, _ = max(parts[hf], key=lambda p: p[3])
            own = [p for p in parts[hf] if p[0] in (hf, hf + ".weight")]
            if len(parts[hf]) == 1 and own and dt in _ST_FORMAT and math.prod(st_shape) != numel:
                # a matrix stored whole under its own name holds the config's shape (else config and weights
                # disagree: the bytes priced would be the file's, the FLOPs and the cache the config's)
                raise GGUFError(f"{where.get(own[0][0], folder)}: tensor {own[0][0]!r} has shape {tuple(st_shape)}, "
                                f"but its config.json gives {tuple(shape)}")
            names = [p[0] for p in parts[hf]]
            if any(n.endswith(".qweight") for n in names):
                # AWQ packs 32 // bits weights of an output row per int32 ([in, out / 8]), GPTQ of an input column
                q = next(p for p in parts[hf] if p[0].endswith(".qweight"))[2]
                t = "AWQ" if len(q) == 2 and len(shape) >= 2 and q[0] == shape[-1] and q[1] < shape[-2] else "GPTQ"
            elif any(n.endswith("_blocks") for n in names) and dt == "U8":
                t = "MXFP4"
            else:
                t = _ST_FORMAT.get(dt, dt)
        else:
            dt = layer_dt.get(hf.split(".")[2], fallback) if hf.startswith("model.layers.") else fallback
            b, t = numel * _ST_BYTES[dt], _ST_FORMAT.get(dt, dt)
        rows.append((hf, t, b))
        counted += b
    main_by: dict = {}
    for hf, t, b in rows:
        if len(shapes[hf]) >= 2:
            main_by[t] = main_by.get(t, 0) + b
    main = max(main_by, key=main_by.get) if main_by else "F32"
    skipped = sum(b for n, (_, _, b) in head.items()
                  if n.startswith("model.layers.") and n.split(".")[2].isdigit() and int(n.split(".")[2]) >= n_layers)
    extra = max(0, total - unpriced - counted - skipped)
    return FileWeights(os.fspath(folder), "safetensors", main, total, tuple(rows), extra, skipped, unpriced)
