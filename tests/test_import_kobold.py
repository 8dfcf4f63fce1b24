"""KoboldCpp's `--benchmark` results as people paste them (glmbench.results.importers, formats
`koboldcpp-benchmark` and `koboldcpp-csv`): the block koboldcpp.py prints after a benchmark run and the
CSV it appends to with `--benchmark FILE.csv`. The layouts are as recalled from koboldcpp.py (no copy of
it here: docs/SOURCES.md says so); the numbers are invented."""
import pytest

from glmbench import cli
from glmbench.predict import runtime as rtm
from glmbench.results import importers as im

BLOCK = """Welcome to KoboldCpp - Version 1.68
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes
Running benchmark (Not Saved)...
Processing Prompt [BLAS] (8092 / 8092 tokens)
Generating (100 / 100 tokens)

Benchmark Completed - v1.68 Results:
======
Flags: NoAVX2=False Threads=7 HighPriority=False NoBlas=False Cublas_Args=['normal', '0', 'mmq'] Tensor_Split=None BlasThreads=7 BlasBatchSize=512 FlashAttention=True KvCache=1
Timestamp: 2024-06-20 16:32:10.466137+00:00
Backend: koboldcpp_cublas.so
Layers: {layers}
Model: Meta-Llama-3-8B-Instruct-Q4_K_M
MaxCtx: 8192
GenAmount: 100
-----
ProcessingTime: {pt}s
ProcessingSpeed: 1303.06T/s
GenerationTime: 3.050s
GenerationSpeed: 32.79T/s
TotalTime: 9.260s
Output:  1 1 1 1
-----
"""

CSV = ("Timestamp,Backend,Layers,Model,MaxCtx,GenAmount,ProcessingTime,ProcessingSpeed,GenerationTime,GenerationSpeed,"
       "TotalTime,Output,Flags\n"
       "2024-06-20 16:40:10+00:00,koboldcpp_vulkan.so,99,Qwen2.5-Coder-7B-Instruct-Q8_0,4096,100,2.21,1809.95,2.05,48.78,"
       "4.26, 1, 1 1,NoAVX2=False Threads=7 Cublas_Args=None Tensor_Split=None BlasBatchSize=1024 FlashAttention=False "
       "KvCache=0\n")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_a_pasted_block_is_pp_from_empty_then_tg_after_the_prompt(tmp_path):
    p = write(tmp_path, "kobold.txt", BLOCK.format(layers=99, pt="6.210"))
    assert im.detect(open(p).read(), p) == "koboldcpp-benchmark"
    pp, tg = im.read(p)
    # the prompt fills the context but the generated tokens: 8192 - 100 = 8092 from an empty cache
    assert (pp["test"], pp["n_prompt"], pp["n_depth"], pp["avg_ts"]) == ("pp", 8092, 0, 1303.06)
    assert (tg["test"], tg["n_gen"], tg["n_depth"], tg["avg_ts"]) == ("tg", 100, 8092, 32.79)
    for r in (pp, tg):
        assert (r["model"], r["weights"], r["hardware"], r["n_cards"]) == ("llama-3-8b", "Q4_K_M", "rtx-3090", 1)
        # its Flags line: flash attention, the batch (n_batch and n_ubatch), --quantkv 1 = q8_0
        assert (r["flash_attn"], r["n_batch"], r["n_ubatch"], r["type_k"], r["type_v"]) == (1, 512, 512, "q8_0", "q8_0")
        assert r["backends"] == "CUDA" and r["tool"] == "koboldcpp --benchmark (v1.68)"
        assert rtm.from_record(r) == "llama.cpp"        # KoboldCpp runs llama.cpp's kernels
    assert pp["source"].endswith(":19") and tg["source"].endswith(":21")


def test_its_layers_time_and_backend(tmp_path):
    # fewer GPU layers than the model has: n_gpu_layers says so (the check leaves such points out)
    pp, _ = im.read(write(tmp_path, "k.txt", BLOCK.format(layers=20, pt="6.210")))
    assert pp["n_gpu_layers"] == 20
    # a ProcessingTime that does not give MaxCtx - GenAmount tokens: said, the prompt kept
    notes = []
    pp, _ = im.read(write(tmp_path, "k2.txt", BLOCK.format(layers=99, pt="3.100")), notices=notes)
    assert pp["n_prompt"] == 8092 and any("ProcessingTime x ProcessingSpeed" in n for n in notes)
    # Vulkan's library, whatever device lines came before
    vk = BLOCK.format(layers=99, pt="6.210").replace("koboldcpp_cublas.so", "koboldcpp_vulkan.dll")
    pp, _ = im.read(write(tmp_path, "k3.txt", vk))
    assert pp["backends"] == "Vulkan" and rtm.from_record(pp) == "llama.cpp-vulkan"
    # an unknown cache type: f16 with a notice
    notes = []
    pp, _ = im.read(write(tmp_path, "k4.txt", BLOCK.format(layers=99, pt="6.210").replace("KvCache=1", "KvCache=7")),
                    notices=notes)
    assert pp["type_k"] == "f16" and any("KvCache=7" in n for n in notes)


def test_bad_blocks_say_which_line(tmp_path):
    text = BLOCK.format(layers=99, pt="6.210")
    with pytest.raises(im.FormatError, match=r"k\.txt:\d+: .*MaxCtx"):
        im.read(write(tmp_path, "k.txt", text.replace("MaxCtx: 8192", "MaxCtx: lots")))
    with pytest.raises(im.FormatError, match=r"has no `MaxCtx:` line"):
        im.read(write(tmp_path, "k5.txt", text.replace("MaxCtx: 8192\n", "")))
    with pytest.raises(im.FormatError, match=r"leaves no prompt"):
        im.read(write(tmp_path, "k6.txt", text.replace("MaxCtx: 8192", "MaxCtx: 100")))


def test_its_csv(tmp_path):
    p = write(tmp_path, "kobold_rtx4090.csv", CSV)
    assert im.detect(open(p).read(), p) == "koboldcpp-csv"
    pp, tg = im.read(p)
    assert (pp["n_prompt"], tg["n_depth"], tg["n_gen"], pp["avg_ts"], tg["avg_ts"]) == (3996, 3996, 100, 1809.95, 48.78)
    assert (pp["model"], pp["weights"], pp["hardware"]) == ("qwen2.5-coder-7b", "q8_0", "rtx-4090")
    assert (pp["flash_attn"], pp["n_ubatch"], pp["type_k"], pp["backends"]) == (0, 1024, "f16", "Vulkan")
    assert pp["tool"] == "koboldcpp --benchmark"


def test_its_csv_with_commas_in_the_output_and_the_flags(tmp_path):
    # koboldcpp.py writes the generated text and the flags unquoted: Cublas_Args=['normal', '0', 'mmq']
    row = ("2024-06-20 16:32:10+00:00,koboldcpp_cublas.so,20,Meta-Llama-3-70B-Instruct-Q4_K_M,4096,100,9.99,400.00,"
           "3.33,30.00,13.32, 1, 1, 1,NoAVX2=False Threads=7 Cublas_Args=['normal', '0', 'mmq'] Tensor_Split=None "
           "BlasBatchSize=256 FlashAttention=True KvCache=2\n")
    pp, tg = im.read(write(tmp_path, "kobold_rtx3090.csv", CSV.splitlines(True)[0] + row))
    assert (pp["model"], pp["weights"], pp["n_gpu_layers"], pp["backends"]) == ("llama-3-70b", "Q4_K_M", 20, "CUDA")
    assert (pp["flash_attn"], pp["n_ubatch"], pp["type_k"], pp["n_threads"]) == (1, 256, "q4_0", 7)
    assert (pp["n_prompt"], pp["avg_ts"], tg["n_depth"], tg["avg_ts"]) == (3996, 400.0, 3996, 30.0)


def test_compare_and_calibrate_read_it(tmp_path, capsys):
    p = write(tmp_path, "kobold.txt", BLOCK.format(layers=99, pt="6.210"))
    assert cli.main(["compare", p]) == 0
    out = capsys.readouterr().out
    assert "pp8092" in out and "tg100@d8092" in out and "1303.06" in out
