"""llama-bench markdown as people paste it, for the tests that check a row's model column names the right
built-in (tests/test_gguf_mamba.py, test_gguf_gemma4.py, test_olmoe_granite.py)."""
from glmbench.results import importers as im

# llama-bench's md header with the CUDA build's ngl and fa columns, and the log lines a CUDA build prints first
LB_HEAD = ("| model                          |       size |     params | backend    | ngl |        fa |            test |                  t/s |\n"
           "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------: | --------------: | -------------------: |\n")
CUDA_4090 = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"


def check_rows_name_builtins(tmp_path, rows: dict, tail: str, head: str = CUDA_4090 + LB_HEAD) -> None:
    """Each of `rows` (llama-bench's model, size and params cells -> (built-in, weights)), written as one table
    under `head` with the rest of the row `tail`, reads as that built-in and weights, told from its model cell."""
    for i, (cols, (model, weights)) in enumerate(rows.items()):
        p = tmp_path / f"r{i}.md"
        p.write_text(head + f"| {cols} | {tail} |\n")
        (r,) = im.read(str(p))
        assert (r["model"], r["weights"]) == (model, weights), cols
        assert r["inferred"]["model"].startswith(f"from '{cols.split(' Q')[0]}'"), r["inferred"]["model"]
