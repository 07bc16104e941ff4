#!/usr/bin/env python3
"""The numpy peer of `clefcheck audit` for scripts/bench.sh: what a user
would write instead, doing the same work on the same file.

  peer.py quick ADAPTER_DIR   read the safetensors header, decode every bf16
                              tensor, count non-finite values, take norms
  peer.py exact ADAPTER_DIR   the same, plus for every LoRA pair the Grams
                              A·Aᵀ and Bᵀ·B (float32, BLAS syrk) and the
                              singular values of s·B·A from eigvalsh of
                              Lᵀ·Gb·L, Ga = L·Lᵀ (float64)

A benchmark dependency (Debian's python3-numpy), not a test one. Prints one
line: the mode, pairs, non-finite count, and a checksum of the figures.
"""
import json
import os
import struct
import sys

import numpy as np


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def load_bf16(f, start, info):
    b, e = info["data_offsets"]
    f.seek(start + b)
    u = np.frombuffer(f.read(e - b), dtype=np.uint16)
    x = (u.astype(np.uint32) << 16).view(np.float32)
    return x.reshape(info["shape"])


def main():
    mode, adapter = sys.argv[1], sys.argv[2]
    with open(os.path.join(adapter, "adapter_config.json")) as f:
        cfg = json.load(f)
    r, alpha = cfg["r"], cfg["lora_alpha"]
    s = alpha / (r ** 0.5 if cfg.get("use_rslora") else r)
    path = os.path.join(adapter, "adapter_model.safetensors")
    header, start = tensors(path)
    pairs = sorted(k[: -len(".lora_A.weight")] for k in header if k.endswith(".lora_A.weight"))
    nonfinite, check, n = 0, 0.0, 0
    with open(path, "rb") as f:
        for p in pairs:
            a = load_bf16(f, start, header[p + ".lora_A.weight"])
            b = load_bf16(f, start, header[p + ".lora_B.weight"])
            nonfinite += int(a.size - np.count_nonzero(np.isfinite(a)))
            nonfinite += int(b.size - np.count_nonzero(np.isfinite(b)))
            na, nb = np.linalg.norm(a), np.linalg.norm(b)
            check += float(na) + float(nb)
            n += 1
            if mode == "quick":
                continue
            ga = (a @ a.T).astype(np.float64)  # numpy calls syrk for X @ X.T
            gb = (b.T @ b).astype(np.float64)
            try:
                l = np.linalg.cholesky(ga)
                w = np.linalg.eigvalsh(l.T @ gb @ l)
            except np.linalg.LinAlgError:  # a singular A·Aᵀ
                w = np.linalg.eigvals(gb @ ga).real
            sigma = abs(s) * np.sqrt(np.clip(np.sort(w)[::-1], 0, None))
            check += float(sigma[0])
    print(f"{mode} pairs={n} nonfinite={nonfinite} checksum={check:.6g}")


if __name__ == "__main__":
    main()
