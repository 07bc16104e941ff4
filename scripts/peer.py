#!/usr/bin/env python3
"""The numpy peer of `clefcheck audit` for scripts/bench.sh: what a user
would write instead, doing the same work on the same file.

  peer.py quick ADAPTER_DIR   read the safetensors header, decode every bf16
                              tensor, count non-finite values, take norms
  peer.py exact ADAPTER_DIR   the same, plus for every LoRA pair the Grams
                              A·Aᵀ and Bᵀ·B (float32, BLAS syrk) and the
                              singular values of s·B·A from eigvalsh of
                              Lᵀ·Gb·L, Ga = L·Lᵀ (float64)
  peer.py sha256 ADAPTER_DIR  only that: the floor of an audit that checks
                              the files' digests (needs no numpy)
  peer.py MODE --sha256 DIR   first the SHA-256 of the files the audit reads
                              (hashlib, i.e. OpenSSL: what a user would
                              write to check the Hub's LFS oids), as
                              clefcheck does unless --no-digest

A benchmark dependency (Debian's python3-numpy), not a test one. Prints one
line: the mode, pairs, non-finite count, and a checksum of the figures.
"""
import hashlib
import json
import os
import struct
import sys

np = None  # numpy, imported by main unless the mode is sha256


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


def sha256s(adapter):
    out = {}
    for name in ("adapter_config.json", "adapter_model.safetensors", "extraction-report.json"):
        path = os.path.join(adapter, name)
        if not os.path.exists(path):
            continue
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while True:
                b = f.read(1 << 24)
                if not b:
                    break
                h.update(b)
        out[name] = h.hexdigest()
    return out


def main():
    args = sys.argv[1:]
    digest = "--sha256" in args
    if digest:
        args.remove("--sha256")
    mode, adapter = args[0], args[1]
    digests = sha256s(adapter) if digest or mode == "sha256" else {}
    if mode == "sha256":
        for name, d in digests.items():
            print(f"sha256 {d} {name}")
        return
    global np
    import numpy as np
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
    for name, d in digests.items():
        print(f"sha256 {d} {name}")


if __name__ == "__main__":
    main()
