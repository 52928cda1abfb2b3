"""Compiles every kernel of the given .eir inputs for gfx90a, gfx942 and gfx1100 and compares each
code object's amdhsa.kernels metadata (llvm-readobj --notes) with ember's own kernarg layout: the
kernel's parameters (from its printed IR) in order, each at its natural alignment, with its name
and size; then the hidden arguments, aligned to 8, whose group sizes block_dim reads 12 bytes past
their start ([Note] AMDGPU target), or none where the kernel reads neither block_dim nor
grid_dim (LLVM then leaves them out); the wave size of the arch.

An input in split-file form (`//--- name` lines) is split into its parts. A part that does not
compile for NVPTX either is an input meant to fail (a verifier or parser test) and is counted
apart. Prints one line per mismatch, then the totals.

    amdgpu_inputs.py OUTDIR FILE...
"""
import os
import re
import subprocess
import sys

ARCHS = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32}
SIZES = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2, "i32": 4, "u32": 4,
         "f32": 4, "i64": 8, "u64": 8, "f64": 8}


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def parts_of(path):
    text = open(path).read()
    if "\n//--- " not in "\n" + text:
        return [(os.path.basename(path), text)]
    parts, name, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("//--- "):
            if name:
                parts.append((name, "\n".join(lines) + "\n"))
            name, lines = line[6:].strip(), []
        elif name:
            lines.append(line)
    if name:
        parts.append((name, "\n".join(lines) + "\n"))
    return parts


def kernels_of(ir):
    """(name, [(param, type)], body) of every kernel of printed IR."""
    out = []
    # Parameters hold no parentheses; launch bounds and fp_contract may follow them.
    for m in re.finditer(r"^kernel @(\w+)\(([^)]*)\)[^{\n]*\{\n(.*?)^\}", ir, re.M | re.S):
        params = []
        for p in filter(None, (s.strip() for s in m.group(2).split(","))):
            name, ty = p.split(":", 1)
            params.append((name.strip().lstrip("%"), ty.strip()))
        out.append((m.group(1), params, m.group(3)))
    return out


def metadata_args(notes, kernel):
    """The .args entries of `kernel` in llvm-readobj's YAML, and its .wavefront_size."""
    blocks = re.split(r"\n  - \.", notes.split("amdhsa.kernels:", 1)[1])
    for block in blocks:
        if not re.search(r"^\s*\.name:\s+" + re.escape(kernel) + r"\s*$", block, re.M):
            continue
        if not re.search(r"^    \.name:\s+" + re.escape(kernel) + r"\s*$", block, re.M):
            continue
        args = []
        for a in re.split(r"\n      - ", block)[1:]:
            lines = a.split("\n")
            # The entry's first line, then its fields (8 spaces in); the kernel's own fields follow.
            fields = [lines[0]] + [l for l in lines[1:] if l.startswith("        .")]
            # A name YAML would read as another type (y, n) is tagged: `!str y`.
            args.append(dict(re.findall(r"\.(\w+):\s+(?:!str )?(\S+)", "\n".join(fields))))
        wave = re.search(r"^    \.wavefront_size:\s+(\d+)", block, re.M)
        return args, int(wave.group(1)) if wave else None
    return None, None


def check(kernel, params, body, args, wave, arch, problems):
    where = f"{kernel} ({arch})"
    explicit = [a for a in args if not a.get("value_kind", "").startswith("hidden_")]
    hidden = {a["value_kind"]: int(a["offset"]) for a in args if a.get("value_kind", "").startswith("hidden_")}
    if len(explicit) != len(params):
        problems.append(f"{where}: {len(explicit)} explicit arguments in the metadata, {len(params)} parameters")
        return
    offset = 0
    for (name, ty), a in zip(params, explicit):
        size = 8 if ty.startswith("ptr<") else SIZES.get(ty)
        if size is None:
            problems.append(f"{where}: parameter {name} has type {ty}, which this check does not know")
            return
        offset = (offset + size - 1) // size * size
        got = (a.get("name"), int(a.get("offset", -1)), int(a.get("size", -1)))
        if got != (name, offset, size):
            problems.append(f"{where}: parameter {name}: metadata says {got}, ember's layout {(name, offset, size)}")
        offset += size
    start = hidden.get("hidden_block_count_x")
    if start is None and not re.search(r"\b(block_dim|grid_dim|global_idx)\.", body):
        pass  # LLVM leaves out the hidden arguments of a kernel that reads none of them
    elif start != (offset + 7) // 8 * 8:
        problems.append(f"{where}: hidden arguments start at {start}, after the explicit ones at {(offset + 7) // 8 * 8}")
    elif hidden.get("hidden_group_size_x") != start + 12:
        problems.append(f"{where}: group size x at {hidden.get('hidden_group_size_x')}, ember reads {start + 12}")
    if wave != ARCHS[arch]:
        problems.append(f"{where}: wavefront size {wave}, want {ARCHS[arch]}")


def main():
    out_dir, files = sys.argv[1], sys.argv[2:]
    problems, kernels, objects, rejected = [], 0, 0, 0
    for path in files:
        for part, text in parts_of(path):
            src = os.path.join(out_dir, os.path.basename(path) + "." + part)
            open(src, "w").write(text)
            ir = run(["ember-compile", src, "--emit=ir"])
            if ir.returncode != 0:
                rejected += 1
                continue
            for kernel, params, body in kernels_of(ir.stdout):
                if run(["ember-compile", src, "--target=nvptx:sm_90", "--emit=asm", "--kernel=" + kernel]).returncode:
                    rejected += 1
                    continue
                # Hopper's mbarriers, tensor memory accelerator and clusters have no AMDGPU
                # counterpart: wgmma_tma.eir and clusters.eir check that AMDGPU refuses them.
                if any(op in body for op in ("mbarrier.", "tma_load(", "wgmma.", "fence.proxy.async",
                                             "cluster_barrier")):
                    rejected += 1
                    continue
                kernels += 1
                for arch in ARCHS:
                    obj = f"{src}.{kernel}.{arch}.hsaco"
                    r = run(["ember-compile", src, "--target=amdgpu:" + arch, "--emit=obj", "--kernel=" + kernel,
                             "-o", obj])
                    if r.returncode:
                        problems.append(f"{kernel} ({arch}) of {path}: ember-compile failed: "
                                        + (r.stderr.strip().splitlines() or ["?"])[0])
                        continue
                    objects += 1
                    notes = run(["llvm-readobj", "--notes", obj]).stdout
                    args, wave = metadata_args(notes, kernel)
                    if args is None:
                        problems.append(f"{kernel} ({arch}): no metadata for the kernel")
                        continue
                    check(kernel, params, body, args, wave, arch, problems)
    for p in problems:
        print("MISMATCH " + p)
    print(f"kernels: {kernels}, code objects: {objects}, inputs rejected on every target: {rejected}, "
          f"mismatches: {len(problems)}")


main()
