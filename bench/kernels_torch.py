#!/usr/bin/env python3
"""PyTorch's side of bench/kernels: the same operations at the same sizes, timed the same way
(the median over 7 rounds of back-to-back calls and a synchronize, measured on the host), each
result checked against a float64 computation first. With --ember FILE (bench/kernels's output)
it prints ember's time next to torch's and ember's throughput over torch's (1.00 is parity).

    python3 bench/kernels_torch.py [--ember kernels.txt]

scripts/bench-kernels.sh runs both. Exits 0 with a message where torch or a CUDA device is
missing, 1 when a result is wrong.
"""

import argparse
import math
import re
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ember", help="bench/kernels's output, for the ratios")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("kernels_torch: no torch here, so no PyTorch side")
        return 0
    if not torch.cuda.is_available():
        print("kernels_torch: torch sees no CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)

    def timed(fn, reps=20, rounds=7):
        per = []
        for r in range(rounds + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
            if r > 0:
                per.append((time.perf_counter() - t0) * 1e3 / reps)
        return statistics.median(per)

    ok = True

    def check(name, got, want, tol):
        nonlocal ok
        err = ((got.double() - want).abs() / want.abs().clamp(min=1.0)).max().item()
        if not err <= tol:
            print("WRONG: torch %s: relative error %g (tolerance %g)" % (name, err, tol))
            ok = False
            return False
        return True

    rows = []  # (ember's kernel name, torch's operation, unit, work, torch ms)

    n = 1 << 26
    x = torch.rand(n, device=dev, generator=gen)
    y = torch.rand(n, device=dev, generator=gen)
    z = torch.empty_like(x)
    if check("copy", z.copy_(x), x.double(), 0):
        rows.append(("copy f32", "Tensor.copy_", "GB/s", 8.0 * n, timed(lambda: z.copy_(x))))
    if check("triad", torch.add(x, y, alpha=3.0, out=z), x.double() + 3.0 * y.double(), 1e-6):
        rows.append(("triad f32", "torch.add(alpha=)", "GB/s", 12.0 * n, timed(lambda: torch.add(x, y, alpha=3.0, out=z))))
    if check("sum", torch.sum(x), x.double().sum(), 1e-5):
        rows.append(("reduce sum f32", "torch.sum", "GB/s", 4.0 * n, timed(lambda: torch.sum(x))))
    del x, y, z

    m = torch.rand(8192, 8192, device=dev, generator=gen) * 2 - 1
    t = torch.empty_like(m)
    if check("transpose", t.copy_(m.t()), m.double().t(), 0):
        rows.append(("transpose 8192^2 f32", "copy_(t())", "GB/s", 8.0 * m.numel(), timed(lambda: t.copy_(m.t()))))
    del m, t

    a = torch.rand(4096, 4096, device=dev, generator=gen) * 16 - 8
    if check("softmax", torch.softmax(a, dim=-1), torch.softmax(a.double(), dim=-1), 1e-6):
        ms = timed(lambda: torch.softmax(a, dim=-1))
        rows.append(("softmax 4096x4096 (exp)", "torch.softmax", "GB/s", 8.0 * a.numel(), ms))
        rows.append(("softmax (fast::exp)", "torch.softmax", "GB/s", 8.0 * a.numel(), ms))
    g = torch.rand(4096, device=dev, generator=gen) + 0.5
    b = torch.rand(4096, device=dev, generator=gen) - 0.5
    ln = lambda: torch.nn.functional.layer_norm(a, (4096,), g, b, 1e-5)
    if check("layer_norm", ln(), torch.nn.functional.layer_norm(a.double(), (4096,), g.double(), b.double(), 1e-5), 1e-4):
        rows.append(("layernorm 4096x4096", "F.layer_norm", "GB/s", 8.0 * a.numel() + 8.0 * 4096, timed(ln)))
    del a

    p = torch.rand(4096, 4096, device=dev, generator=gen) * 2 - 1
    q = torch.rand(4096, 4096, device=dev, generator=gen) * 2 - 1
    c = torch.empty_like(p)
    want = (p[:64].double() @ q.double())
    if check("mm", torch.mm(p, q, out=c)[:64], want, 1e-4):
        rows.append(("sgemm warptile (example)", "torch.mm (no TF32)", "TFLOP/s", 2.0 * 4096**3, timed(lambda: torch.mm(p, q, out=c), reps=5, rounds=5)))
    del p, q, c

    # bf16 in and out, f32 sums (torch's defaults otherwise, as bench/kernels's cuBLAS call uses
    # cuBLAS's): within bf16's rounding of the exact product.
    p = (torch.rand(8192, 8192, device=dev, generator=gen) * 2 - 1).bfloat16()
    q = (torch.rand(8192, 8192, device=dev, generator=gen) * 2 - 1).bfloat16()
    c = torch.empty_like(p)
    want = (p[:64].double() @ q.double())
    if check("matmul bf16", torch.matmul(p, q, out=c)[:64], want, 1e-2):
        rows.append(("gemm bf16 (example)", "torch.matmul (bf16)", "TFLOP/s", 2.0 * 8192**3, timed(lambda: torch.matmul(p, q, out=c), reps=5, rounds=5)))
    # The same with B given n x k, as examples/gemm_wgmma.h takes it: p @ q.T.
    want = (p[:64].double() @ q.double().T)
    if check("matmul bf16 (B transposed)", torch.matmul(p, q.T, out=c)[:64], want, 1e-2):
        rows.append(("gemm bf16 wgmma (example)", "torch.matmul (bf16, q.T)", "TFLOP/s", 2.0 * 8192**3, timed(lambda: torch.matmul(p, q.T, out=c), reps=5, rounds=5)))
    del p, q, c

    # Fused attention forward, (B=1, H=16, S=4096, D=128) in bf16, on torch's FlashAttention
    # kernels; heads 0 and 1 checked against softmax(Q K^T / sqrt(d)) V in float64 (plain matmul
    # and softmax), within bf16's rounding.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sdpa = torch.nn.functional.scaled_dot_product_attention
    heads, seq, dim = 16, 4096, 128
    q, k, v = (torch.randn(1, heads, seq, dim, device=dev, generator=gen).bfloat16() for _ in range(3))
    for causal, label in ((False, "attention (example)"), (True, "attention causal (example)")):
        s = q[:, :2].double() @ k[:, :2].double().transpose(-1, -2) / math.sqrt(dim)
        if causal:
            s = s.masked_fill(torch.ones(seq, seq, dtype=torch.bool, device=dev).triu(1), float("-inf"))
        want = torch.softmax(s, dim=-1) @ v[:, :2].double()
        del s
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            if check(label, sdpa(q, k, v, is_causal=causal)[:, :2], want, 1e-2):
                flops = 4.0 * heads * seq * seq * dim / (2 if causal else 1)
                rows.append((label, "torch SDPA (flash)", "TFLOP/s", flops, timed(lambda: sdpa(q, k, v, is_causal=causal))))
        del want
    del q, k, v

    ember = {}
    if args.ember:
        # bench/kernels's rows: the kernel's name, then the peer, then "<ms> ms <ms> ms", or
        # "<ms> ms -" where bench/kernels runs no peer (the attention rows: torch is the peer).
        for line in open(args.ember):
            mt = re.match(r"^(.{26}) .*?([0-9.]+) ms +(?:[0-9.]+ ms|- )", line)
            if mt:
                ember.setdefault(mt.group(1).strip(), float(mt.group(2)))

    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    print("%-26s %-20s %13s %13s %9s %-7s %10s" % ("kernel", "torch", "ember", "torch", "torch", "unit", "ember/torch"))
    for name, op, unit, work, ms in rows:
        scale = 1e-9 if unit == "GB/s" else 1e-12
        e = ember.get(name)
        print("%-26s %-20s %13s %10.3f ms %9.1f %-7s %10s" % (
            name, op, ("%10.3f ms" % e) if e else "-", ms, work / (ms * 1e-3) * scale, unit,
            ("%.2f" % (ms / e)) if e else "-"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
