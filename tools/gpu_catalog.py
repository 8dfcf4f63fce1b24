"""Writes the built-in GPU catalog (glmbench/data/hardware/*.json) from the table below.

Run from the repository root: `python tools/gpu_catalog.py` (rewrites every profile it lists; the
files are the shipped truth, this script is how they were made and how to redo them).

Where a datasheet gives the dense tensor rates (data-center cards, Titan V, T4, Hopper, B200), they
are taken as given. For the other cards (GeForce, RTX/Quadro workstation, laptops) NVIDIA's
whitepapers give the rates as SM count x per-SM rate x boost clock, and so does this script, with
the per-SM rates of each architecture's whitepaper (dense, FLOP or int8 op per clock per SM):

    architecture            f16 tensor (f16 acc)  int8 tensor  fp32   notes
    Volta  (sm_70)          1024                  (dp4a) 512   128    no int8 tensor core: int8 = dp4a = 4 x fp32
    Turing (sm_75)          1024                  2048         128
    Turing GTX 16 (sm_75)   (no tensor) 256       (dp4a) 512   128    f16 on the FP16 units at 2 x fp32
    Ampere GA100 (sm_80)    2048                  4096         128
    Ampere GA10x (sm_86)    1024                  2048         256
    Ampere GA10B (sm_87)    2048                  4096         256    Jetson Orin
    Ada (sm_89)             1024                  2048         256
    Blackwell RTX (sm_120)  1024                  2048         256    GB10 (sm_121) the same

`fp16` (and `bf16`) in a profile is the f16 tensor rate with f32 accumulate, the rate of a
f16 x f16 -> f32 GEMM (cuBLAS CUBLAS_COMPUTE_32F, PyTorch, vLLM): GeForce cards (and the L40) run it
at half the f16-accumulate rate, the workstation and data-center cards at the full rate.
`fp16_acc16` is the f16-accumulate rate (cuBLAS CUBLAS_COMPUTE_16F: what llama.cpp's CUDA backend
asks for by default on its f16 cuBLAS path). Bandwidth = bus width / 8 x data rate.
`fp8` (Ada sm_89, Hopper, Blackwell only: the cards with FP8 tensor cores) is the dense e4m3 tensor
rate with f32 accumulate, the rate of vLLM's W8A8 fp8 GEMM (CUTLASS scaled_mm accumulates in f32):
the datasheet's figure on data-center/workstation cards (equal to their INT8 rate), and for a card
whose 16-bit tensor path runs f32 accumulate at half rate (GeForce, L40, L20, GB10) half its INT8
rate, as the Ada and RTX Blackwell whitepapers state for GeForce (RTX 4090: FP8 330.3 with f32
accumulate, 660.6 with f16 accumulate).
"""
from __future__ import annotations

import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "glmbench", "data", "hardware")

# per-SM, per-clock dense rates: (f16 tensor with f16 accumulate, int8, fp32)
PER_SM = {
    "volta": (1024, 512, 128), "turing": (1024, 2048, 128), "turing16": (256, 512, 128),
    "ga100": (2048, 4096, 128), "ga10x": (1024, 2048, 256), "ga10b": (2048, 4096, 256),
    "ada": (1024, 2048, 256), "blackwell": (1024, 2048, 256),
}
ARCH = {"volta": ("Volta", "7.0"), "turing": ("Turing", "7.5"), "turing16": ("Turing (no tensor cores)", "7.5"),
        "ga100": ("Ampere", "8.0"), "ga10x": ("Ampere", "8.6"), "ga10b": ("Ampere", "8.7"),
        "ada": ("Ada Lovelace", "8.9"), "blackwell": ("Blackwell", "12.0"), "hopper": ("Hopper", "9.0"),
        "blackwell-dc": ("Blackwell", "10.0")}
# architectures with FP8 tensor cores (sm_89 and later)
FP8_ARCHS = ("ada", "hopper", "blackwell", "blackwell-dc")
# usable GB/s per direction of a PCIe x16 link, by generation (about 80% of the raw rate; PCIe 4.0 x16
# is 32 GB/s raw, ~25 usable)
PCIE_X16 = {3: 12.5, 4: 25.0, 5: 50.0}

WP = {
    "turing": "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf",
    "ga10x": "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf",
    "ada": "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
    "blackwell": "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
    "tpu": "https://www.techpowerup.com/gpu-specs/",
}
GEFORCE = {
    "turing": "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-20",
    "turing16": "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-16",
    "ga10x": "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-30",
    "ada": "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-40",
    "blackwell": "https://www.nvidia.com/en-us/geforce/graphics-cards/compare/?section=compare-50",
}


def derived(key, name, a, sms, mhz, bus_bits, gbps, mem_gb, mem_type, pcie, *, pro=False, aliases=(),
            lanes=16, nvlink=None, page=None, note="", memory_gib=None, device=None, rates=None, bus=None,
            bandwidth=None):
    """A card whose rates are SM count x per-SM rate x boost clock (the way NVIDIA's whitepapers
    state them)."""
    f16a, i8, f32 = PER_SM[a]
    ghz = mhz / 1000
    acc16 = sms * f16a * ghz / 1000
    fp16 = acc16 if (pro or a in ("turing16", "volta", "ga100", "ga10b")) else acc16 / 2
    t = {"fp16": round(fp16, 1), "bf16": round(fp16, 1), "fp32": round(sms * f32 * ghz / 1000, 1),
         "int8": round(sms * i8 * ghz / 1000, 1)}
    if a in ("turing", "turing16"):   # no bf16 hardware before Ampere: converted, run at the fp32 rate
        t["bf16"] = t["fp32"]
    if a not in ("turing16",):
        t["fp16_acc16"] = round(acc16, 1)
    if rates:
        t.update(rates)
    if a in FP8_ARCHS:     # FP8 tensor cores: the int8 rate, halved where f32 accumulate runs at half rate
        t["fp8"] = round(t["int8"] * (1.0 if t["fp16"] >= 0.99 * t["fp16_acc16"] else 0.5), 1)
    bw = round(bus_bits / 8 * gbps, 1)
    bw = int(bw) if bw == int(bw) else bw
    if bandwidth is not None:
        bw = bandwidth
    accum = ("f32 accumulate at the full rate (workstation/data-center card)" if pro or a in ("ga100", "ga10b")
             else "no tensor cores: f16 on the FP16 units at 2 x fp32, int8 by dp4a" if a == "turing16"
             else "f32 accumulate at half the f16-accumulate rate (GeForce)")
    how = (f"{sms} SMs x {PER_SM[a][0]} f16 / {PER_SM[a][1]} int8 / {PER_SM[a][2]} fp32 FLOP per clock per SM "
           f"x {mhz} MHz boost ({accum}); {bus_bits}-bit {mem_type} at {gbps:g} Gbps = {bw} GB/s")
    src = "; ".join(s for s in (page or GEFORCE.get(a, ""), WP.get(a, ""), WP["tpu"]) if s)
    return dict(key=key, name=name, arch=a, mhz=mhz, mem=memory_gib if memory_gib is not None else mem_gb, bw=bw, t=t,
                mem_type=mem_type, bus=bus or f"PCIe {pcie}.0 x{lanes}",
                link=PCIE_X16[pcie] * lanes / 16 if pcie else None, lat=10, nvlink=nvlink,
                aliases=list(aliases) + ([device] if device else []),
                source=f"{src}. Derived: {how}." + (f" {note}" if note else ""))


def given(key, name, a, mem, bw, fp16, int8, fp32, mem_type, bus, *, link, lat=10, nvlink=None, aliases=(),
          source, acc16=None, bf16=None, note="", fp8=None):
    """A card whose dense rates its datasheet gives; `fp8` (dense, f32 accumulate) is required for the
    architectures with FP8 tensor cores (FP8_ARCHS) and refused for the others."""
    if bf16 == "fp32":      # no bf16 hardware (Volta, Turing): converted, run at the fp32 rate
        bf16 = fp32
    if (fp8 is None) == (a in FP8_ARCHS):
        raise SystemExit(f"{key}: fp8 is {'missing' if fp8 is None else 'given'} for architecture {a}")
    t = {"fp16": fp16, "bf16": fp16 if bf16 is None else bf16, "fp32": fp32, "int8": int8,
         "fp16_acc16": fp16 if acc16 is None else acc16}
    if fp8 is not None:
        t["fp8"] = fp8
    return dict(key=key, name=name, arch=a, mem=mem, bw=bw, t=t, mem_type=mem_type, bus=bus, link=link, lat=lat,
                nvlink=nvlink, aliases=list(aliases), source=source + (f". {note}" if note else ""))


def gf(name):  # the CUDA device name of a GeForce card
    return "NVIDIA GeForce " + name


CARDS = []
add = CARDS.append

# ---- Volta -------------------------------------------------------------------------------------
V100 = ("https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf; "
        "https://www.nvidia.com/en-us/data-center/v100/")
V100_NOTE = ("Volta has no int8 tensor cores: int8 is dp4a, 4 x the fp32 rate; no bf16 hardware: bf16 at the "
             "fp32 rate. Memory: nvidia-smi's total "
             "(16,160 MiB of 16 GB, 32,510 MiB of 32 GB).")
add(given("v100-sxm2-16gb", "V100 SXM2 16GB", "volta", 15.8, 900, 125, 62.8, 15.7, "HBM2", "SXM2", link=150, lat=5,
          nvlink=150, aliases=["V100", "Tesla V100-SXM2-16GB", "V100 SXM2", "V100 16GB"], bf16="fp32", source=V100,
          note="NVLink 2: 300 GB/s total = 150 per direction. " + V100_NOTE))
add(given("v100-sxm2-32gb", "V100 SXM2 32GB", "volta", 31.7, 900, 125, 62.8, 15.7, "HBM2", "SXM2", link=150, lat=5,
          nvlink=150, aliases=["Tesla V100-SXM2-32GB", "V100 32GB", "Tesla V100-SXM2-32GB-LS"], bf16="fp32", source=V100,
          note="NVLink 2: 300 GB/s total = 150 per direction. " + V100_NOTE))
add(given("v100-pcie-16gb", "V100 PCIe 16GB", "volta", 15.8, 900, 112, 56, 14, "HBM2", "PCIe 3.0 x16", link=12.5,
          aliases=["Tesla V100-PCIE-16GB", "V100 PCIe"], bf16="fp32", source=V100, note=V100_NOTE))
add(given("v100-pcie-32gb", "V100 PCIe 32GB", "volta", 31.7, 900, 112, 56, 14, "HBM2", "PCIe 3.0 x16", link=12.5,
          aliases=["Tesla V100-PCIE-32GB"], bf16="fp32", source=V100, note=V100_NOTE))
add(given("v100s-pcie-32gb", "V100S PCIe 32GB", "volta", 31.7, 1134, 130, 65.6, 16.4, "HBM2", "PCIe 3.0 x16",
          link=12.5, aliases=["V100S", "Tesla V100S-PCIE-32GB", "V100S PCIe"], bf16="fp32", source=V100, note=V100_NOTE))
add(given("titan-v", "Titan V", "volta", 11.8, 652.8, 110, 59.6, 14.9, "HBM2", "PCIe 3.0 x16", link=12.5,
          aliases=["NVIDIA TITAN V", "TITAN V"], bf16="fp32", source="https://www.nvidia.com/en-us/titan/titan-v/; " + WP["tpu"],
          note="3072-bit HBM2 at 1.7 Gbps = 652.8 GB/s; 110 TFLOPS tensor as NVIDIA states it (f32 accumulate at "
               "the full rate). Volta has no int8 tensor cores: int8 is dp4a, 4 x fp32 (5120 cores x 2 x 1455 MHz "
               "= 14.9 TFLOPS); no bf16 hardware (bf16 at the fp32 rate). Memory: 12 GB, 12,066 MiB in nvidia-smi."))

add(given("quadro-gv100", "Quadro GV100", "volta", 31.7, 870, 118.5, 59.2, 14.8, "HBM2", "PCIe 3.0 x16", link=12.5,
          nvlink=100, aliases=["NVIDIA Quadro GV100", "GV100"], bf16="fp32",
          source="NVIDIA Quadro GV100 data sheet (https://www.nvidia.com/en-us/design-visualization/quadro/); " + WP["tpu"],
          note="32 GB HBM2 at 870 GB/s; tensor 118.5 TFLOPS and FP32 14.8 TFLOPS as the data sheet states them (5120 "
               "cores x 2 x about 1450 MHz); NVLink with two bridges 200 GB/s total = 100 per direction (not assumed). "
               + V100_NOTE.replace("Memory: nvidia-smi's total (16,160 MiB of 16 GB, 32,510 MiB of 32 GB).",
                                   "Memory: as the V100 32GB, 32,510 MiB.")))

# ---- Turing --------------------------------------------------------------------------------------
T4 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf"
add(given("t4", "T4", "turing", 15.0, 320, 65, 130, 8.1, "GDDR6", "PCIe 3.0 x16", link=12.5,
          aliases=["Tesla T4", "NVIDIA T4"], bf16="fp32", source=T4 + "; https://www.nvidia.com/en-us/data-center/tesla-t4/",
          note="Mixed-precision (f16) 65 TFLOPS, INT8 130 TOPS, FP32 8.1 TFLOPS; Turing has no bf16 tensor path "
               "(bf16 given as 2 x fp32). Memory: 16 GB with ECC on by default (1/16 reserved): 15 GiB."))
for k, n, sms, mhz, bits, gbps, mem, nv, extra in (
        ("rtx-2060", "RTX 2060", 30, 1680, 192, 14, 6, None, ()),
        ("rtx-2060-12gb", "RTX 2060 12GB", 34, 1650, 192, 14, 12, None, ()),
        ("rtx-2060-super", "RTX 2060 SUPER", 34, 1650, 256, 14, 8, None, ()),
        ("rtx-2070", "RTX 2070", 36, 1620, 256, 14, 8, None, ()),
        ("rtx-2070-super", "RTX 2070 SUPER", 40, 1770, 256, 14, 8, 25, ()),
        ("rtx-2080", "RTX 2080", 46, 1710, 256, 14, 8, 25, ()),
        ("rtx-2080-super", "RTX 2080 SUPER", 48, 1815, 256, 15.5, 8, 25, ()),
        ("rtx-2080-ti", "RTX 2080 Ti", 68, 1545, 352, 14, 11, 50, ())):
    add(derived(k, n, "turing", sms, mhz, bits, gbps, mem, "GDDR6", 3, nvlink=nv, device=gf(n), aliases=extra,
                note="Turing has no bf16 hardware (bf16 at the fp32 rate)."))
add(derived("titan-rtx", "Titan RTX", "turing", 72, 1770, 384, 14, 24, "GDDR6", 3, pro=True, nvlink=50,
            device="NVIDIA TITAN RTX", aliases=["TITAN RTX"], page="https://www.nvidia.com/en-us/deep-learning-ai/products/titan-rtx/",
            note="Titan RTX runs f32 accumulate at the full rate (130 TFLOPS). Turing has no bf16 hardware (bf16 at the fp32 rate)."))
QRTX = "https://www.nvidia.com/en-us/design-visualization/quadro/"
for k, n, sms, mhz, bits, gbps, mem, nv in (
        ("quadro-rtx-4000", "Quadro RTX 4000", 36, 1545, 256, 13, 8, None),
        ("quadro-rtx-5000", "Quadro RTX 5000", 48, 1815, 256, 14, 16, 50),
        ("quadro-rtx-6000", "Quadro RTX 6000", 72, 1770, 384, 14, 24, 50),
        ("quadro-rtx-8000", "Quadro RTX 8000", 72, 1770, 384, 14, 48, 50)):
    add(derived(k, n, "turing", sms, mhz, bits, gbps, mem, "GDDR6", 3, pro=True, nvlink=nv, page=QRTX,
                note="Quadro: f32 accumulate at the full rate. Turing has no bf16 hardware (bf16 at the fp32 rate). "
                     "'RTX 6000' without 'Ada' or 'PRO' is this card."))
for k, n, sms, mhz, bits, gbps, mem, mt in (
        ("gtx-1650", "GTX 1650", 14, 1665, 128, 8, 4, "GDDR5"),
        ("gtx-1660", "GTX 1660", 22, 1785, 192, 8, 6, "GDDR5"),
        ("gtx-1660-super", "GTX 1660 SUPER", 22, 1785, 192, 14, 6, "GDDR6"),
        ("gtx-1660-ti", "GTX 1660 Ti", 24, 1770, 192, 12, 6, "GDDR6"),
        ("gtx-1660-ti-laptop", "GTX 1660 Ti Laptop", 24, 1590, 192, 12, 6, "GDDR6")):
    add(derived(k, n, "turing16", sms, mhz, bits, gbps, mem, mt, 3, device=gf(n) if "Laptop" not in n else None,
                aliases=["NVIDIA GeForce GTX 1660 Ti with Max-Q design"] if "Laptop" in n else (),
                note="Turing without tensor cores (TU116/TU117): int8 mma is not run on tensor cores; laptop "
                     "clocks are the highest-TGP boost." if "Laptop" in n else
                     "Turing without tensor cores (TU116/TU117)."))

# ---- Ampere --------------------------------------------------------------------------------------
A100 = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf; "
        "https://www.nvidia.com/en-us/data-center/a100/")
A100_NOTE = ("BF16/FP16 tensor 312 TFLOPS dense (624 with sparsity), INT8 624 TOPS dense, FP32 19.5. NVLink 3: 600 GB/s "
             "total = 300 per direction (PCIe cards: through a 2-card bridge, not assumed).")
add(given("a100-sxm-80gb", "A100 SXM4 80GB", "ga100", 80, 2039, 312, 624, 19.5, "HBM2e", "SXM4", link=300, lat=5,
          nvlink=300, aliases=["A100", "A100 SXM", "A100 80GB", "NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"], source=A100,
          note=A100_NOTE + " Memory: 81,920 MiB."))
add(given("a100-sxm-40gb", "A100 SXM4 40GB", "ga100", 39.6, 1555, 312, 624, 19.5, "HBM2", "SXM4", link=300, lat=5,
          nvlink=300, aliases=["A100 40GB", "NVIDIA A100-SXM4-40GB"], source=A100,
          note=A100_NOTE + " Memory: 40,536 MiB in nvidia-smi."))
add(given("a100-pcie-80gb", "A100 PCIe 80GB", "ga100", 80, 1935, 312, 624, 19.5, "HBM2e", "PCIe 4.0 x16", link=25,
          nvlink=300, aliases=["A100 PCIe", "NVIDIA A100 80GB PCIe"], source=A100, note=A100_NOTE + " Memory: 81,920 MiB."))
add(given("a100-pcie-40gb", "A100 PCIe 40GB", "ga100", 39.6, 1555, 312, 624, 19.5, "HBM2", "PCIe 4.0 x16", link=25,
          nvlink=300, aliases=["NVIDIA A100-PCIE-40GB"], source=A100, note=A100_NOTE + " Memory: 40,536 MiB in nvidia-smi."))
add(given("a30", "A30", "ga100", 23.7, 933, 165, 330, 10.3, "HBM2", "PCIe 4.0 x16", link=25, nvlink=100,
          aliases=["NVIDIA A30"], source="https://www.nvidia.com/en-us/data-center/products/a30-gpu/",
          note="BF16/FP16 165 TFLOPS dense, INT8 330 TOPS dense, FP32 10.3; NVLink bridge 200 GB/s total (not assumed). "
               "Memory: 24 GB HBM2, 24,258 MiB in nvidia-smi."))
add(given("a10", "A10", "ga10x", 22.5, 600, 125, 250, 31.2, "GDDR6", "PCIe 4.0 x16", link=25,
          aliases=["NVIDIA A10"], source="https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
          note="BF16/FP16 125 TFLOPS dense, INT8 250 TOPS dense, FP32 31.2. Memory: 24 GB with ECC on by default "
               "(1/16 reserved): 22.5 GiB. The AWS A10G is a different part (a10g)."))
add(given("a40", "A40", "ga10x", 45, 696, 149.7, 299.3, 37.4, "GDDR6", "PCIe 4.0 x16", link=25, nvlink=56.25,
          aliases=["NVIDIA A40"], source="https://www.nvidia.com/en-us/data-center/a40/",
          note="BF16/FP16 149.7 TFLOPS dense, INT8 299.3 TOPS dense, FP32 37.4; NVLink bridge 112.5 GB/s total (not "
               "assumed). Memory: 48 GB with ECC on by default (1/16 reserved): 45 GiB."))
add(given("a2", "A2", "ga10x", 15, 200, 18, 36, 4.5, "GDDR6", "PCIe 4.0 x8", link=12.5,
          aliases=["NVIDIA A2", "A2 Tensor Core GPU", "NVIDIA A2 Tensor Core GPU"],
          source="https://www.nvidia.com/en-us/data-center/products/a2/",
          note="Datasheet: FP16/BF16 tensor 18 TFLOPS dense (36 with sparsity), INT8 36 TOPS dense, FP32 4.5; 16 GB "
               "GDDR6 at 200 GB/s; PCIe 4.0 x8; 40-60 W. f32 accumulate at the full rate (data-center card). Memory: 16 GB "
               "with ECC on by default (1/16 reserved): 15 GiB."))
add(given("a10g", "A10G", "ga10x", 22.5, 600, 140.1, 280.2, 35.0, "GDDR6", "PCIe 4.0 x16", link=25,
          aliases=["NVIDIA A10G"], source="AWS EC2 G5 instances https://aws.amazon.com/ec2/instance-types/g5/; " + WP["ga10x"]
          + "; " + WP["tpu"],
          note="AWS's GA102 part (G5 instances); NVIDIA publishes no data sheet for it, so its rates are derived as for "
               "the other GA10x cards: 80 SMs (320 tensor cores) x 1024 f16 / 2048 int8 / 256 fp32 per clock per SM x "
               "1710 MHz boost, f32 accumulate at the full rate as on the A10 (a data-center card); 384-bit GDDR6 at "
               "12.5 Gbps = 600 GB/s. Memory: 24 GB with ECC on (1/16 reserved): 22.5 GiB, as the A10. Less certain "
               "than datasheet figures."))
A800 = ("NVIDIA A800 Tensor Core GPU data sheet (China-market A100 variant, nvidia.cn data-center/a800); "
        "A100 data sheet " + A100.split(";")[0])
add(given("a800-sxm-80gb", "A800 SXM4 80GB", "ga100", 80, 2039, 312, 624, 19.5, "HBM2e", "SXM4", link=200, lat=5,
          nvlink=200, aliases=["A800", "A800 SXM", "NVIDIA A800-SXM4-80GB", "A800 80GB"], source=A800,
          note="The A100 SXM4 80GB with NVLink cut to 400 GB/s total = 200 per direction; compute and memory as the A100 "
               "(BF16/FP16 312 TFLOPS dense, INT8 624 TOPS dense, FP32 19.5, 2039 GB/s). Memory: 81,920 MiB."))
add(given("a800-pcie-80gb", "A800 PCIe 80GB", "ga100", 80, 1935, 312, 624, 19.5, "HBM2e", "PCIe 4.0 x16", link=25,
          nvlink=200, aliases=["NVIDIA A800 80GB PCIe", "A800 PCIe"], source=A800,
          note="The A100 PCIe 80GB with an NVLink bridge of 400 GB/s total (not assumed); 1935 GB/s; compute as the "
               "A100. Memory: 81,920 MiB."))
for k, n, sms, mhz, bits, gbps, mem, mt, lanes, nv in (
        ("rtx-3050", "RTX 3050", 20, 1777, 128, 14, 8, "GDDR6", 8, None),
        ("rtx-3050-6gb", "RTX 3050 6GB", 18, 1470, 96, 14, 6, "GDDR6", 8, None),
        ("rtx-3060", "RTX 3060", 28, 1777, 192, 15, 12, "GDDR6", 16, None),
        ("rtx-3060-ti", "RTX 3060 Ti", 38, 1665, 256, 14, 8, "GDDR6", 16, None),
        ("rtx-3070", "RTX 3070", 46, 1725, 256, 14, 8, "GDDR6", 16, None),
        ("rtx-3070-ti", "RTX 3070 Ti", 48, 1770, 256, 19, 8, "GDDR6X", 16, None),
        ("rtx-3080", "RTX 3080", 68, 1710, 320, 19, 10, "GDDR6X", 16, None),
        ("rtx-3080-12gb", "RTX 3080 12GB", 70, 1710, 384, 19, 12, "GDDR6X", 16, None),
        ("rtx-3080-ti", "RTX 3080 Ti", 80, 1665, 384, 19, 12, "GDDR6X", 16, None),
        ("rtx-3090-ti", "RTX 3090 Ti", 84, 1860, 384, 21, 24, "GDDR6X", 16, 56.25)):
    add(derived(k, n, "ga10x", sms, mhz, bits, gbps, mem, mt, 4, lanes=lanes, nvlink=nv,
                device=gf(n) if k != "rtx-3050-6gb" else None,
                note="NVLink bridge 112.5 GB/s total (not assumed)." if nv else
                "The 70 W GA107 card of 2024 (18 SMs, 96-bit); its device line reads like the 8 GB card's, "
                "so only the name with '6GB' resolves here." if k == "rtx-3050-6gb" else ""))
add(derived("rtx-3090", "RTX 3090", "ga10x", 82, 1695, 384, 19.5, 24, "GDDR6X", 4, nvlink=56.25,
            device=gf("RTX 3090"), aliases=["RTX3090"], rates={"fp16": 71, "bf16": 71, "fp32": 35.6, "int8": 284},
            note="GA102 whitepaper: FP16/BF16 tensor with f32 accumulate 71 TFLOPS dense (142 with f16 accumulate), "
                 "INT8 284 TOPS dense, FP32 35.6. NVLink bridge 112.5 GB/s total (not assumed)."))
WS = "https://www.nvidia.com/en-us/design-visualization/desktop-graphics/"
for k, n, sms, mhz, bits, gbps, mem, nv, al in (
        ("rtx-a2000-6gb", "RTX A2000 6GB", 26, 1200, 192, 12, 6, None, []),
        ("rtx-a2000", "RTX A2000", 26, 1200, 192, 12, 12, None, ["NVIDIA RTX A2000 12GB", "NVIDIA RTX A2000"]),
        ("rtx-a4000", "RTX A4000", 48, 1560, 256, 14, 16, None, ["NVIDIA RTX A4000"]),
        ("rtx-a4500", "RTX A4500", 56, 1650, 320, 16, 20, 56.25, ["NVIDIA RTX A4500"]),
        ("rtx-a5000", "RTX A5000", 64, 1695, 384, 16, 24, 56.25, ["NVIDIA RTX A5000"]),
        ("rtx-a5500", "RTX A5500", 80, 1665, 384, 16, 24, 56.25, ["NVIDIA RTX A5500"])):
    add(derived(k, n, "ga10x", sms, mhz, bits, gbps, mem, "GDDR6", 4, pro=True, nvlink=nv, aliases=al, page=WS,
                note="NVLink bridge 112.5 GB/s total (not assumed)." if nv else ""))
add(derived("rtx-a6000", "RTX A6000", "ga10x", 84, 1800, 384, 16, 48, "GDDR6", 4, pro=True, nvlink=56.25,
            aliases=["NVIDIA RTX A6000"], page="https://www.nvidia.com/en-us/design-visualization/rtx-a6000/",
            rates={"fp16": 154.8, "bf16": 154.8, "fp32": 38.7, "int8": 309.7},
            note="Datasheet: FP16 tensor 154.8 TFLOPS dense (309.7 with sparsity), INT8 309.7 TOPS dense, FP32 38.7. "
                 "NVLink bridge 112.5 GB/s total (not assumed). Memory: 48 GB, ECC off by default."))
ORIN = ("https://www.nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-orin/; "
        "https://www.nvidia.com/content/dam/en-zz/Solutions/gtcf21/jetson-orin/nvidia-jetson-agx-orin-technical-brief.pdf")
for k, n, sms, mhz, mem, gib, al in (
        ("jetson-agx-orin-64gb", "Jetson AGX Orin 64GB", 16, 1300, 64, 61.4, ["Jetson AGX Orin", "AGX Orin", "Orin"]),
        ("jetson-agx-orin-32gb", "Jetson AGX Orin 32GB", 14, 930, 32, 30.6, [])):
    c = derived(k, n, "ga10b", sms, mhz, 256, 6.4, mem, "LPDDR5", None, aliases=al, page=ORIN, memory_gib=gib,
                bus="SoC (memory shared with the CPU)",
                note="GPU only (the DLAs' TOPS are not counted). Memory is shared with the Arm CPU: about "
                     f"{gib} GiB of the {mem} GB is visible to the OS. One module: no card-to-card link.")
    c["link"] = None
    add(c)
# Orin NX / Nano: 8 SMs (1024 CUDA cores, 32 tensor cores), 128-bit LPDDR5; the visible share of memory
# assumed as the AGX modules' (~96%)
for k, n, mhz, gbps, mem, gib, al, note in (
        ("jetson-orin-nx-16gb", "Jetson Orin NX 16GB", 918, 6.4, 16, 15.3, ["Jetson Orin NX", "Orin NX"],
         "GPU at its 25 W / MAXN maximum, 918 MHz."),
        ("jetson-orin-nano-8gb", "Jetson Orin Nano 8GB", 1020, 6.4, 8, 7.6,
         ["Jetson Orin Nano", "Orin Nano", "Jetson Orin Nano Super"],
         "The MAXN SUPER mode of JetPack 6.2 (the 'Super' developer kit): GPU 1020 MHz, memory 102 GB/s; the "
         "original 15 W mode runs 625 MHz and 68 GB/s, 0.61x and 0.67x of these.")):
    c = derived(k, n, "ga10b", 8, mhz, 128, gbps, mem, "LPDDR5", None, aliases=al, page=ORIN, memory_gib=gib,
                bus="SoC (memory shared with the CPU)",
                note="GPU only (the DLAs' TOPS are not counted). " + note + " Memory is shared with the Arm CPU: "
                     f"about {gib} GiB of the {mem} GB assumed visible to the OS. One module: no card-to-card link.")
    c["link"] = None
    add(c)

# ---- Ada -----------------------------------------------------------------------------------------
for k, n, sms, mhz, bits, gbps, mem, mt, lanes in (
        ("rtx-4060", "RTX 4060", 24, 2460, 128, 17, 8, "GDDR6", 8),
        ("rtx-4060-ti", "RTX 4060 Ti", 34, 2535, 128, 18, 8, "GDDR6", 8),
        ("rtx-4060-ti-16gb", "RTX 4060 Ti 16GB", 34, 2535, 128, 18, 16, "GDDR6", 8),
        ("rtx-4070", "RTX 4070", 46, 2475, 192, 21, 12, "GDDR6X", 16),
        ("rtx-4070-super", "RTX 4070 SUPER", 56, 2475, 192, 21, 12, "GDDR6X", 16),
        ("rtx-4070-ti", "RTX 4070 Ti", 60, 2610, 192, 21, 12, "GDDR6X", 16),
        ("rtx-4070-ti-super", "RTX 4070 Ti SUPER", 66, 2610, 256, 21, 16, "GDDR6X", 16),
        ("rtx-4080", "RTX 4080", 76, 2505, 256, 22.4, 16, "GDDR6X", 16),
        ("rtx-4080-super", "RTX 4080 SUPER", 80, 2550, 256, 23, 16, "GDDR6X", 16),
        ("rtx-4090-d", "RTX 4090 D", 114, 2520, 384, 21, 24, "GDDR6X", 16)):
    add(derived(k, n, "ada", sms, mhz, bits, gbps, mem, mt, 4, lanes=lanes,
                device=gf(n) if not n.endswith("16GB") else None,
                aliases=["RTX 4060 Ti 8GB"] if k == "rtx-4060-ti" else ()))
add(derived("rtx-4090", "RTX 4090", "ada", 128, 2520, 384, 21, 24, "GDDR6X", 4, device=gf("RTX 4090"),
            aliases=["RTX4090"], rates={"fp16": 165.2, "bf16": 165.2, "fp32": 82.6, "int8": 660.6},
            note="Ada whitepaper: FP16/BF16 tensor with f32 accumulate 165.2 TFLOPS dense (330.3 with f16 accumulate), "
                 "INT8 660.6 TOPS dense, FP32 82.6. No NVLink or P2P on GeForce Ada."))
LAPTOP_NOTE = "Laptop: the boost clock of the highest TGP; a laptop at a lower TGP is slower."


def add_laptops(a, mem_type, pcie, rows, note=LAPTOP_NOTE):
    """Laptop GPUs of one architecture: (key, name, SMs, top boost MHz, bus bits, Gbps, GB) rows;
    CUDA calls each "NVIDIA GeForce <name> GPU"; x8 below 40 SMs."""
    for k, n, sms, mhz, bits, gbps, mem in rows:
        add(derived(k, n, a, sms, mhz, bits, gbps, mem, mem_type, pcie, device=gf(n + " GPU"),
                    lanes=8 if sms < 40 else 16, page="https://www.nvidia.com/en-us/geforce/laptops/compare/", note=note))


add_laptops("ada", "GDDR6", 4, (
    ("rtx-4050-laptop", "RTX 4050 Laptop", 20, 2370, 96, 16, 6),
    ("rtx-4060-laptop", "RTX 4060 Laptop", 24, 2370, 128, 16, 8),
    ("rtx-4070-laptop", "RTX 4070 Laptop", 36, 2175, 128, 16, 8),
    ("rtx-4080-laptop", "RTX 4080 Laptop", 58, 2280, 192, 18, 12),
    ("rtx-4090-laptop", "RTX 4090 Laptop", 76, 2040, 256, 18, 16)))
ADA_WS = "https://www.nvidia.com/en-us/design-visualization/desktop-graphics/"
for k, n, sms, mhz, bits, gbps, mem, lanes in (
        ("rtx-2000-ada", "RTX 2000 Ada", 22, 2130, 128, 14, 16, 8),
        ("rtx-4000-sff-ada", "RTX 4000 SFF Ada", 48, 1565, 160, 14, 20, 16),
        ("rtx-4000-ada", "RTX 4000 Ada", 48, 2175, 160, 18, 20, 16),
        ("rtx-4500-ada", "RTX 4500 Ada", 60, 2580, 192, 18, 24, 16),
        ("rtx-5000-ada", "RTX 5000 Ada", 100, 2550, 256, 18, 32, 16),
        ("rtx-6000-ada", "RTX 6000 Ada", 142, 2505, 384, 20, 48, 16)):
    add(derived(k, n, "ada", sms, mhz, bits, gbps, mem, "GDDR6", 4, lanes=lanes, pro=True,
                aliases=[f"NVIDIA {n} Generation"], page=ADA_WS,
                note="Workstation Ada: f32 accumulate at the full rate (Ada whitepaper, RTX 6000 Ada)."))
add(given("l4", "L4", "ada", 22.5, 300, 121, 242.5, 30.3, "GDDR6", "PCIe 4.0 x16", link=25, fp8=242.5, aliases=["NVIDIA L4"],
          source="https://www.nvidia.com/en-us/data-center/l4/",
          note="Datasheet (dense = half the sparse figure): FP16/BF16 121 TFLOPS, FP8/INT8 242.5 (f32 accumulate at the full "
               "rate, as its FP16), FP32 30.3. Memory: "
               "24 GB with ECC on by default (1/16 reserved): 22.5 GiB."))
add(given("l40", "L40", "ada", 45, 864, 181.05, 362.1, 90.5, "GDDR6", "PCIe 4.0 x16", link=25, acc16=362.1, fp8=181.05,
          aliases=["NVIDIA L40"], source="https://www.nvidia.com/en-us/data-center/l40/",
          note="Datasheet: FP16/BF16 tensor 181.05 TFLOPS dense (f32 accumulate at half rate, as on GeForce; the f16-"
               "accumulate 362.1 is twice that, as for AD102 GeForce), INT8 362.1 TOPS dense, FP32 90.5; FP8 362.1 dense "
               "as published, 181.05 stored: f32 accumulate at half rate as its FP16 (the GeForce AD102 rule). Memory: "
               "48 GB with ECC on by default: 45 GiB."))
add(given("l40s", "L40S", "ada", 45, 864, 362.05, 733, 91.6, "GDDR6", "PCIe 4.0 x16", link=25, fp8=733, aliases=["NVIDIA L40S"],
          source="https://www.nvidia.com/en-us/data-center/l40s/",
          note="Datasheet: FP16/BF16 tensor 362.05 TFLOPS dense, INT8 733 TOPS dense (as published), FP8 733 TFLOPS dense, "
               "FP32 91.6. "
               "Memory: 48 GB with ECC on by default: 45 GiB."))

add(given("l20", "L20", "ada", 45, 864, 119.5, 239, 59.8, "GDDR6", "PCIe 4.0 x16", link=25, acc16=239, fp8=119.5,
          aliases=["NVIDIA L20"], source="NVIDIA L20 data sheet (China-market data-center Ada, AD102, 2023-11); " + WP["tpu"],
          note="48 GB GDDR6 at 864 GB/s; FP16/BF16 tensor 119.5 TFLOPS dense (239 with sparsity), INT8 and FP8 239 dense, "
               "FP32 59.8 (92 SMs). Its FP16 figure is twice its FP32 as on the L40: f32 accumulate at half rate, the "
               "f16-accumulate rate 239; FP8 stored with f32 accumulate, 119.5. Memory: 48 GB with ECC on by default: "
               "45 GiB. Less certain than the figures on NVIDIA's global site."))

# ---- Hopper --------------------------------------------------------------------------------------
H100 = "https://www.nvidia.com/en-us/data-center/h100/; https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
add(given("h100-sxm", "H100 SXM", "hopper", 79.6, 3350, 989, 1979, 67, "HBM3", "SXM5", link=450, lat=5, nvlink=450, fp8=1979,
          aliases=["H100", "NVIDIA H100 80GB HBM3", "H100 80GB", "H100 SXM5", "H100 SXM5 80GB"], source=H100,
          note="SXM5: 3.35 TB/s; BF16/FP16 tensor 989 TFLOPS dense; FP8 1979 TFLOPS and INT8 1979 TOPS dense; FP32 67. "
               "Link: NVLink 4, "
               "900 GB/s bidirectional = 450 GB/s per direction. Memory: nvidia-smi reports 81,559 MiB (79.6 GiB) of "
               "the nominal 80 GB."))
add(given("h100-pcie", "H100 PCIe", "hopper", 79.6, 2000, 756, 1513, 51, "HBM2e", "PCIe 5.0 x16", link=50, nvlink=300, fp8=1513,
          aliases=["NVIDIA H100 PCIe", "H100 PCIe 80GB"], source=H100,
          note="PCIe: 2 TB/s; BF16/FP16 tensor 756 TFLOPS dense; FP8 1513 TFLOPS and INT8 1513 TOPS dense; FP32 51; "
               "NVLink bridge 600 GB/s "
               "total (not assumed). Memory: 81,559 MiB as the SXM."))
add(given("h100-nvl", "H100 NVL", "hopper", 93.6, 3900, 835.5, 1670.5, 60, "HBM3", "PCIe 5.0 x16", link=50, fp8=1670.5,
          nvlink=300, aliases=["NVIDIA H100 NVL", "H100 NVL 94GB"], source=H100,
          note="Per card (the first datasheets gave a pair): 94 GB, 3.9 TB/s; BF16/FP16 1671 TFLOPS with sparsity = "
               "835.5 dense; FP8 and INT8 1670.5 dense; FP32 60; NVLink bridge 600 GB/s total (not assumed). Memory: "
               "95,830 MiB in nvidia-smi."))
H200 = "https://www.nvidia.com/en-us/data-center/h200/"
add(given("h200-sxm", "H200 SXM", "hopper", 140.4, 4800, 989, 1979, 67, "HBM3e", "SXM5", link=450, lat=5, nvlink=450, fp8=1979,
          aliases=["H200", "NVIDIA H200", "H200 141GB", "H200 SXM5"], source=H200,
          note="141 GB HBM3e, 4.8 TB/s; the same Hopper compute as the H100 SXM: BF16 989 TFLOPS dense, FP8 1979 TFLOPS and "
               "INT8 1979 TOPS, "
               "FP32 67 (datasheet figures; what a GEMM reaches belongs in the runtime profile). Link: NVLink 4, 450 GB/s "
               "per direction. Memory: nvidia-smi reports 143,771 MiB (140.4 GiB) of the nominal 141 GB."))
add(given("h200-nvl", "H200 NVL", "hopper", 140.4, 4800, 835.5, 1670.5, 60, "HBM3e", "PCIe 5.0 x16", link=50, fp8=1670.5,
          nvlink=450, aliases=["NVIDIA H200 NVL"], source=H200,
          note="141 GB HBM3e, 4.8 TB/s; BF16/FP16 1671 TFLOPS with sparsity = 835.5 dense; FP8 and INT8 1670.5 dense; "
               "FP32 60; NVLink bridge 900 GB/s (2- or 4-way, not assumed). Memory as the H200 SXM."))

H800 = "NVIDIA H800 Tensor Core GPU data sheet (China-market H100 variant, nvidia.cn data-center/h800); " + H100
add(given("h800-sxm", "H800 SXM", "hopper", 79.6, 3350, 989, 1979, 67, "HBM3", "SXM5", link=200, lat=5, nvlink=200,
          fp8=1979, aliases=["H800", "NVIDIA H800", "NVIDIA H800 80GB HBM3", "H800 SXM5", "H800 80GB"], source=H800,
          note="The H100 SXM with NVLink cut to 400 GB/s total = 200 per direction (and FP64 cut): 3.35 TB/s; BF16/FP16 "
               "989 TFLOPS dense, FP8 1979, INT8 1979, FP32 67. Memory: as the H100 SXM, 81,559 MiB."))
add(given("h800-pcie", "H800 PCIe", "hopper", 79.6, 2000, 756, 1513, 51, "HBM2e", "PCIe 5.0 x16", link=50, nvlink=200,
          fp8=1513, aliases=["NVIDIA H800 PCIe", "H800 PCIe 80GB"], source=H800,
          note="The H100 PCIe with an NVLink bridge of 400 GB/s total (not assumed): 2 TB/s; BF16/FP16 756 TFLOPS dense, "
               "FP8 and INT8 1513 dense, FP32 51. Memory: 81,559 MiB as the H100."))
add(given("h20", "H20", "hopper", 95.6, 4000, 148, 296, 44, "HBM3", "SXM5", link=450, lat=5, nvlink=450, fp8=296,
          aliases=["NVIDIA H20", "H20 96GB"],
          source="NVIDIA HGX H20 product brief (China-market Hopper, 2024); https://www.nvidia.com/en-us/data-center/h100/",
          note="96 GB HBM3 at 4.0 TB/s; BF16/FP16 tensor 148 TFLOPS dense, FP8 and INT8 296 dense, FP32 44; NVLink 900 "
               "GB/s total = 450 per direction. Memory: 96 GB less the H100's reserve (81,559 of 81,920 MiB): 97,871 MiB "
               "= 95.6 GiB. NVIDIA does not publish this brief on its global site: less certain than the H100 figures."))
GH200 = ("NVIDIA GH200 Grace Hopper Superchip data sheet https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip; "
         "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/")
add(given("gh200-96gb", "GH200 96GB", "hopper", 95.6, 4000, 989, 1979, 67, "HBM3",
          "Superchip (NVLink-C2C 900 GB/s to the Grace CPU)", link=450, lat=5, nvlink=450, fp8=1979,
          aliases=["GH200", "NVIDIA GH200", "NVIDIA GH200 480GB", "GH200 480GB"], source=GH200,
          note="The first GH200: 96 GB HBM3 at 4 TB/s beside the Grace CPU's 480 GB LPDDR5X (nvidia-smi names it "
               "'NVIDIA GH200 480GB' after the module's CPU memory); the H100 SXM's compute: FP8 3958 TFLOPS with "
               "sparsity = 1979 dense, BF16/FP16 989 dense, INT8 1979 dense, FP32 67. GPU to GPU (NVL32, NVL2): NVLink 4, "
               "450 GB/s per direction. Memory: 96 GB less the H100's reserve: 95.6 GiB (the CPU's LPDDR5X is not "
               "counted). 'GH200' bare is this one."))
add(given("gh200-144gb", "GH200 144GB", "hopper", 143.4, 4900, 989, 1979, 67, "HBM3e",
          "Superchip (NVLink-C2C 900 GB/s to the Grace CPU)", link=450, lat=5, nvlink=450, fp8=1979,
          aliases=["NVIDIA GH200 144G HBM3e", "GH200 144GB HBM3e"], source=GH200,
          note="The HBM3e GH200: 144 GB at 4.9 TB/s; compute as the 96 GB one (FP8 1979 dense, BF16/FP16 989, INT8 1979, "
               "FP32 67). Memory: 144 GB less the H100's reserve: 143.4 GiB."))

# ---- Blackwell -----------------------------------------------------------------------------------
add(given("b200", "B200", "blackwell-dc", 179.1, 8000, 2250, 4500, 75, "HBM3e", "SXM6", link=900, lat=5, fp8=4500,
          nvlink=900, aliases=["NVIDIA B200", "B200 180GB", "HGX B200"],
          source="https://www.nvidia.com/en-us/data-center/hgx/; https://www.nvidia.com/en-us/data-center/dgx-b200/",
          note="HGX B200 per GPU (the 8-GPU table / 8): 180 GB HBM3e, 8 TB/s; FP16/BF16 tensor 4.5 PFLOPS with "
               "sparsity = 2.25 dense; INT8 72 POPS with sparsity per 8 GPUs = 9 per GPU = 4.5 POPS dense (twice "
               "the f16 rate, as FP8: 72 PFLOPS with sparsity per 8 GPUs = 4.5 dense; so int8 tensor cores, MMQ on them); FP32 75. Link: NVLink 5, 1.8 TB/s bidirectional = 900 GB/s per direction. Memory: "
               "nvidia-smi reports 183,359 MiB (179.1 GiB)."))
add(given("gb200", "GB200", "blackwell-dc", 185, 8000, 2500, 5000, 80, "HBM3e",
          "Superchip (NVLink-C2C to the Grace CPU)", link=900, lat=5, nvlink=900, fp8=5000,
          aliases=["NVIDIA GB200", "GB200 NVL72"], source="https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
          note="Per GPU of the GB200 NVL72 table (/ 72): 13.4 TB HBM3e = 186 GB, 576 TB/s = 8 TB/s; FP8 720 PFLOPS and "
               "INT8 720 POPS with sparsity = 5 dense; FP16/BF16 360 PFLOPS with sparsity = 2.5 dense; FP32 5760 TFLOPS = "
               "80. NVLink 5: 1.8 TB/s bidirectional = 900 per direction. Memory: 186 GB less the H100's reserve: about "
               "185 GiB (assumed)."))
for k, n, sms, mhz, bits, gbps, mem, mt, lanes in (
        ("rtx-5050", "RTX 5050", 20, 2570, 128, 20, 8, "GDDR6", 8),
        ("rtx-5060", "RTX 5060", 30, 2497, 128, 28, 8, "GDDR7", 8),
        ("rtx-5060-ti-8gb", "RTX 5060 Ti 8GB", 36, 2572, 128, 28, 8, "GDDR7", 8),
        ("rtx-5060-ti", "RTX 5060 Ti", 36, 2572, 128, 28, 16, "GDDR7", 8),
        ("rtx-5070", "RTX 5070", 48, 2512, 192, 28, 12, "GDDR7", 16),
        ("rtx-5070-ti", "RTX 5070 Ti", 70, 2452, 256, 28, 16, "GDDR7", 16),
        ("rtx-5080", "RTX 5080", 84, 2617, 256, 30, 16, "GDDR7", 16),
        ("rtx-5090", "RTX 5090", 170, 2407, 512, 28, 32, "GDDR7", 16)):
    add(derived(k, n, "blackwell", sms, mhz, bits, gbps, mem, mt, 5, lanes=lanes,
                device=gf(n) if k != "rtx-5060-ti-8gb" else None,
                aliases=["RTX 5060 Ti 16GB"] if k == "rtx-5060-ti" else (),
                note=("'RTX 5060 Ti' is the 16 GB card (the one sold most for inference); the 8 GB one is "
                      "rtx-5060-ti-8gb." if k == "rtx-5060-ti" else "")))
add_laptops("blackwell", "GDDR7", 5, (
    ("rtx-5060-laptop", "RTX 5060 Laptop", 26, 2497, 128, 24, 8),
    ("rtx-5070-laptop", "RTX 5070 Laptop", 36, 2347, 128, 24, 8),
    ("rtx-5070-ti-laptop", "RTX 5070 Ti Laptop", 46, 2220, 192, 28, 12),
    ("rtx-5080-laptop", "RTX 5080 Laptop", 60, 2287, 256, 28, 16),
    ("rtx-5090-laptop", "RTX 5090 Laptop", 82, 2160, 256, 28, 24)),
    note="Laptop: the boost clock of the highest TGP (less certain than the desktop cards'); a laptop at a lower TGP "
         "is slower. NVIDIA's AI TOPS for these parts imply about 2.7 GHz, above any laptop boost clock, and are not used.")
for k, n, sms, tops, bits, gbps, mem, lanes, watts in (
        ("rtx-pro-5000-blackwell", "RTX PRO 5000 Blackwell", 110, 2064, 384, 28, 48, 16, 300),
        ("rtx-pro-4500-blackwell", "RTX PRO 4500 Blackwell", 82, 1687, 256, 28, 32, 16, 200),
        ("rtx-pro-2000-blackwell", "RTX PRO 2000 Blackwell", 34, 545, 128, 18, 16, 8, 70)):
    mhz = round(tops * 1e6 / (sms * 8192))      # the clock NVIDIA's AI TOPS (FP4, sparse: 8192 per SM-clock) imply
    add(derived(k, n, "blackwell", sms, mhz, bits, gbps, mem, "GDDR7", 5, lanes=lanes, pro=True,
                aliases=[f"NVIDIA {n}"],
                page="https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/",
                note=f"A {watts} W card: NVIDIA states {tops} AI TOPS (FP4 with sparsity), which {sms} SMs give at about "
                     f"{mhz} MHz; every rate here at that clock. f32 accumulate at the full rate assumed as for the "
                     "RTX PRO 6000 (NVIDIA publishes FP4 only)."))
c = derived("rtx-5090-d", "RTX 5090 D", "blackwell", 170, 2407, 512, 28, 32, "GDDR7", 5, device=gf("RTX 5090 D"),
            rates={"fp16": 148.4, "bf16": 148.4, "int8": 593.8, "fp16_acc16": 296.9},
            note="The China-market card has the 5090's SMs but its tensor rate capped: NVIDIA gives 2375 AI TOPS "
                 "(FP4 with sparsity) against the 5090's 3352, so the tensor rates here are 2375/8 = 296.9 f16 "
                 "(f16 accumulate), half that with f32 accumulate, int8 593.8; fp32 and bandwidth as the 5090.")
add(c)
PRO6000 = "https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/"
add(derived("rtx-pro-6000-blackwell", "RTX PRO 6000 Blackwell", "blackwell", 188, 2617, 512, 28, 96, "GDDR7", 5, pro=True,
            aliases=["NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000"], page=PRO6000,
            rates={"fp16": 500, "bf16": 500, "fp16_acc16": 500, "int8": 1000, "fp32": 125},
            note="600 W Workstation Edition. NVIDIA states 4000 AI TOPS (FP4 with sparsity) and 125 TFLOPS FP32, "
                 "stored as published (f16 = 4000/8 = 500, int8 1000; the per-SM rates at 2617 MHz give 1% more); f32 accumulate at the full rate is assumed as on the "
                 "workstation Ada cards (NVIDIA publishes FP4 only)."))
add(derived("rtx-pro-6000-blackwell-max-q", "RTX PRO 6000 Blackwell Max-Q", "blackwell", 188, 2280, 512, 28, 96, "GDDR7",
            5, pro=True, aliases=["NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"], page=PRO6000,
            rates={"fp32": 110},
            note="300 W Max-Q Workstation Edition: NVIDIA states 3511 AI TOPS and 110 TFLOPS FP32, i.e. about 2280 MHz "
                 "under load; f32 accumulate at the full rate assumed as for the 600 W card."))
add(derived("rtx-pro-6000-blackwell-server", "RTX PRO 6000 Blackwell Server", "blackwell", 188, 2617, 512, 28, 96,
            "GDDR7", 5, pro=True, bandwidth=1597, rates={"fp16": 500, "bf16": 500, "fp16_acc16": 500, "int8": 1000, "fp32": 125}, aliases=["NVIDIA RTX PRO 6000 Blackwell Server Edition"],
            page="https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/",
            note="Server Edition (passive, up to 600 W): the datasheet's 1597 GB/s memory bandwidth (the Workstation "
                 "Edition: 1792); compute as the Workstation Edition (same GB202 with 188 SMs, 'up to'); less "
                 "certain than the workstation figures."))
c = derived("rtx-pro-4000-blackwell", "RTX PRO 4000 Blackwell", "blackwell", 70, 2175, 192, 28, 24, "GDDR7", 5, pro=True,
            aliases=["NVIDIA RTX PRO 4000 Blackwell"], page="https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-4000/",
            rates={"fp32": 46.9},
            note="NVIDIA states 1247 AI TOPS (FP4 with sparsity: 70 SMs at about 2175 MHz) and 46.9 TFLOPS FP32 (about "
                 "2617 MHz): the two imply different clocks (a 140 W card); both are kept as published: tensor rates "
                 "from the AI TOPS, fp32 as stated. f32 accumulate at the full rate assumed.")
add(c)
add(given("gb10", "GB10 (DGX Spark)", "blackwell", 119.7, 273, 62.5, 250, 31, "LPDDR5x",
          "SoC (NVLink-C2C to the Grace CPU)", link=25, acc16=125, fp8=125,
          aliases=["NVIDIA GB10", "GB10", "DGX Spark", "NVIDIA DGX Spark"],
          source="https://www.nvidia.com/en-us/products/workstations/dgx-spark/",
          note="128 GB LPDDR5x shared with the CPU (about 119.7 GiB visible to the OS), 256-bit at 8533 MT/s = 273 "
               "GB/s. NVIDIA states 1 PFLOP FP4 with sparsity: 500 dense FP4, 250 FP8/INT8 (fp8 stored as 125, f32 accumulate "
               "at half rate assumed as for its FP16), 125 FP16 with f16 "
               "accumulate; 48 SMs (6144 CUDA cores) at about 2.5 GHz, fp32 31 TFLOPS. sm_121 is consumer Blackwell: "
               "f32 accumulate at half rate assumed as on GeForce (not published). Link: two Sparks through their "
               "ConnectX-7 (200 Gb/s = 25 GB/s)."))
for c in CARDS:
    if c["key"] == "gb10":
        c["cc"] = "12.1"


# Boost clocks of the cards whose rates the datasheet gives (`given`): NVIDIA's published
# specifications (datasheets, architecture whitepapers) ("datasheet"), a reported figure where NVIDIA
# publishes none ("reported", less certain), or the clock the card's own source text already derives
# its rates from ("source"). A runtime model's fixed per-kernel times scale as
# 1 / boost clock (glmbench/predict/kernels.py clock_scale).
GIVEN_MHZ = {
    "titan-v": (1455, "source"), "quadro-gv100": (1450, "source"), "a10g": (1710, "source"),
    "a10": (1695, "datasheet"), "a2": (1770, "reported"), "a100-pcie-40gb": (1410, "datasheet"), "a100-pcie-80gb": (1410, "datasheet"),
    "a100-sxm-40gb": (1410, "datasheet"), "a100-sxm-80gb": (1410, "datasheet"), "a30": (1440, "datasheet"),
    "a40": (1740, "datasheet"), "a800-pcie-80gb": (1410, "datasheet"), "a800-sxm-80gb": (1410, "datasheet"),
    "b200": (1965, "reported"), "gb10": (2500, "reported"), "gb200": (1965, "reported"), "gh200-144gb": (1980, "datasheet"),
    "gh200-96gb": (1980, "datasheet"), "h100-nvl": (1785, "datasheet"), "h100-pcie": (1755, "datasheet"),
    "h100-sxm": (1980, "datasheet"), "h20": (1980, "reported"), "h200-nvl": (1785, "datasheet"), "h200-sxm": (1980, "datasheet"),
    "h800-pcie": (1755, "datasheet"), "h800-sxm": (1980, "datasheet"), "l20": (2520, "datasheet"), "l4": (2040, "datasheet"),
    "l40": (2490, "datasheet"), "l40s": (2520, "datasheet"), "t4": (1590, "datasheet"), "v100-pcie-16gb": (1380, "datasheet"),
    "v100-pcie-32gb": (1380, "datasheet"), "v100-sxm2-16gb": (1530, "datasheet"), "v100-sxm2-32gb": (1530, "datasheet"),
    "v100s-pcie-32gb": (1601, "datasheet"),
}


def profile(c) -> dict:
    arch, cc = ARCH[c["arch"]]
    d = {"name": c["name"], "memory_gib": c["mem"], "bandwidth_gbs": c["bw"], "tflops": c["t"], "launch_us": 3}
    if c.get("link"):
        d["link_gbps"] = c["link"]
        d["link_latency_us"] = c["lat"]
    if c.get("nvlink"):
        d["nvlink_gbps"] = c["nvlink"]
    mhz, how = (c["mhz"], "source") if c.get("mhz") else GIVEN_MHZ[c["key"]]
    d["boost_mhz"] = mhz
    d.update(arch=arch, compute_capability=c.get("cc", cc), bus=c["bus"], memory_type=c["mem_type"])
    al = []
    for a in c["aliases"]:
        if a not in al and a != c["name"]:
            al.append(a)
    d["aliases"] = al
    d["source"] = c["source"]
    if how != "source":
        d["source"] += (f" Boost clock {mhz} MHz: NVIDIA's published specifications (datasheet or architecture "
                        "whitepaper)" + (" (not published by NVIDIA; a reported figure, less certain)"
                                         if how == "reported" else "") + ".")
    return d


def main(argv) -> int:
    keys = [c["key"] for c in CARDS]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise SystemExit(f"duplicate keys: {sorted(dup)}")
    for c in CARDS:
        with open(os.path.join(OUT, c["key"] + ".json"), "w") as f:
            f.write(json.dumps(profile(c), indent=2) + "\n")
    print(f"wrote {len(CARDS)} profiles to {os.path.normpath(OUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
