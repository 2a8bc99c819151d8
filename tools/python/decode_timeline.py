#!/usr/bin/env python3
"""Where a decode call's time goes, block by block: every block of one eager paged call
(decode-mma, bf16, GQA 32/8, D=128, shuffled 16-key pages) stamps the GPU's global timer
at each phase, and the summary gives per phase the earliest, median and latest block, in
microseconds from the first block's start.

    python3 tools/python/decode_timeline.py run --library build/src/libfajit.so > timeline.txt
    python3 tools/python/decode_timeline.py summarize timeline.txt

The stamps go into a copy of the kernel templates made in a temporary folder and loaded
through FAJIT_TEMPLATE_DIR, so the library's own kernels are never instrumented. The copy
is written by `instrument`, which `run` calls, and which can be run alone to look at it or
compile it (`fa-jit compile --isa` with FAJIT_TEMPLATE_DIR). Device printf goes straight
to the process's standard output, which is why `run` writes lines for `summarize` to read
rather than summarizing itself. A mark whose anchor is gone from the templates stops the
script and names it, so it never reports a kernel it did not mark.

Phases: entry (the block starts, before it waits on the kernel before), q (Q has landed),
loop (the block's keys are done), warps (its warps' partials merged), published (its
partial is in the workspace; L2 merge only), arrived (its arrival counted), merged (the
last block's first thread has merged and stored its part of the rows) and end (every
thread of the block has stored its part). Before the timed call, a
512 MiB fill evicts the inputs from L2, so the call reads from memory as a cold decode
step would.
"""
import argparse
import ctypes
import os
import shutil
import statistics
import sys
import tempfile

# Beside the other scripts, whose helpers run and its shapes take.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PHASES = ["entry", "q", "loop", "warps", "published", "arrived", "merged", "end"]
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernel_templates")

# The stamp store and the clock, declared before the split-KV part's first definition.
STAMPS = """__device__ unsigned long long fa_timeline[4096][8];
FAJIT_DEVICE unsigned long long fa_timeline_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
FAJIT_DEVICE unsigned long long* fa_timeline_row() {
    return fa_timeline[(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) % 4096];
}
#define FA_STAMP(phase) do { if (threadIdx.x == 0) fa_timeline_row()[phase] = fa_timeline_now(); } while (0)
"""

# (file, anchor, text put before the anchor, text put after it); each anchor must occur once.
MARKS = [
    ("prelude_split_kv.h", "struct fa_split_block {", STAMPS, ""),
    ("fa_decode_mma.h", "    fa_wait_for_prior_kernels();\n",
     "    const unsigned long long timeline_entry = fa_timeline_now();\n",
     "    if (threadIdx.x == 0)\n"
     "        for (int i = 0; i < 8; ++i) fa_timeline_row()[i] = i == 0 ? timeline_entry : 0;\n"),
    ("fa_decode_mma.h", "    __syncthreads();                    // and every thread's part of it\n", "",
     "    FA_STAMP(1);\n"),
    ("fa_decode_mma.h", "    __syncthreads();           // and no warp still reads them\n", "", "    FA_STAMP(2);\n"),
    ("fa_decode_mma.h",
     "    fa_split_finish<Spec, merge_chunk>(p, sequence, kv_head, packed_rows, merged, block_frame, block_sum,\n"
     "                                       merges_splits);\n",
     "    FA_STAMP(3);\n",
     "    __syncthreads();\n"
     "    FA_STAMP(7);\n"
     "    if (threadIdx.x == 0) {\n"
     "        const unsigned long long* t = fa_timeline_row();\n"
     "        printf(\"TL %d %d %d %d %llu %llu %llu %llu %llu %llu %llu %llu\\n\", (int)blockIdx.x, (int)blockIdx.y,\n"
     "               (int)blockIdx.z, (int)merges_splits, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]);\n"
     "    }\n"),
    ("prelude_split_kv.h",
     "        if (!fa_block_arrives_last(p.split_arrivals + pair_of_heads, static_cast<unsigned int>(p.num_splits),\n"
     "                                   merges_splits))\n            return;\n",
     "        FA_STAMP(4);\n", "        FA_STAMP(5);\n"),
    ("prelude_split_kv.h",
     "        if (threadIdx.x == 0) p.split_arrivals[pair_of_heads] = 0u;  // ready for the next launch\n",
     "        FA_STAMP(6);\n", ""),
]


def instrument(source, target):
    """Copies the templates in `source` to `target` with the stamps in."""
    shutil.copytree(source, target, dirs_exist_ok=True)
    for name, anchor, before, after in MARKS:
        path = os.path.join(target, name)
        with open(path) as file:
            text = file.read()
        if text.count(anchor) != 1:
            sys.exit(f"decode_timeline: {name} has {text.count(anchor)} copies of the anchor {anchor.strip()!r}, not 1")
        with open(path, "w") as file:
            file.write(text.replace(anchor, before + anchor + after))


def run(args):
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryDirectory(prefix="fajit-timeline-") as templates:
        instrument(args.template_dir, templates)
        stamped_calls(args, libc, templates)


def stamped_calls(args, libc, templates):
    import torch
    import fajit
    from compare_batched import paged_inputs

    settings = {"FAJIT_LOG_LEVEL": "warn", "FAJIT_CHECK_INDICES": "0", "FAJIT_TEMPLATE_DIR": templates}
    if args.cluster_merge is not None:
        settings["FAJIT_CLUSTER_MERGE"] = args.cluster_merge
    runtime = fajit.Runtime(args.library or fajit.default_library_path(), **settings)
    for batch, len_k in args.shapes:
        shape = argparse.Namespace(batch=batch, len_k=len_k, len_q=1, page_size=16, heads_q=32, heads_kv=8,
                                   head_dim=128, heads_first=False, in_order=False)
        inputs = paged_inputs(shape, torch.bfloat16, torch.Generator("cuda").manual_seed(1))
        kv_lens = torch.full((batch,), len_k, dtype=torch.int32, device="cuda")
        cu_q = torch.arange(0, batch + 1, dtype=torch.int32, device="cuda")

        def call():
            runtime.attention_paged(inputs["q"], inputs["k_cache"], inputs["v_cache"], cu_q, inputs["table"],
                                    kv_lens, 1, causal="bottom-right", out=inputs["out"])
            torch.cuda.synchronize()
            libc.fflush(None)  # the device's lines, in order with this script's

        call()  # compiles, and its stamps fall outside the SHAPE ... END lines
        torch.empty(512 << 20, dtype=torch.uint8, device="cuda").fill_(1)
        torch.cuda.synchronize()
        print(f"SHAPE {batch}x{len_k}", flush=True)
        call()
        print("END", flush=True)


def summarize(args):
    with open(args.lines) as file:
        lines = file.read().splitlines()
    shape, blocks = None, []
    for line in lines:
        if line.startswith("SHAPE"):
            shape, blocks = line.split()[1], []
        elif line.startswith("TL") and shape:
            blocks.append([int(x) for x in line.split()[1:]])
        elif line.startswith("END") and shape:
            start = min(block[4] for block in blocks)
            print(f"{shape}: {len(blocks)} blocks, microseconds from the first block's start")
            for i, phase in enumerate(PHASES):
                times = [(block[4 + i] - start) / 1000 for block in blocks if block[4 + i]]
                if times:
                    print(f"  {phase:10s} earliest {min(times):7.2f}  median {statistics.median(times):7.2f}  "
                          f"latest {max(times):7.2f}  ({len(times)} blocks)")
            shape = None


def shape_argument(text):
    """BATCHxKEYS, parsed as ab_decode.py parses it (which imports torch, as only `run` needs)."""
    from ab_decode import parse_shape
    return parse_shape(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="one stamped call per shape; prints lines for summarize")
    run_parser.add_argument("--library", help="libfajit.so (default: fajit.py's, FAJIT_LIBRARY or the build's)")
    run_parser.add_argument("--template-dir", default=TEMPLATES, help="the templates to stamp (default: the tree's)")
    run_parser.add_argument("--shapes", type=shape_argument, nargs="+", default=[(1, 2048), (1, 32768), (16, 8192)],
                            help="BATCHxKEYS ... (default: 1x2048 1x32768 16x8192)")
    run_parser.add_argument("--cluster-merge", choices=["0", "1"], help="FAJIT_CLUSTER_MERGE for the call")
    instrument_parser = commands.add_parser("instrument", help="write the stamped templates to a folder")
    instrument_parser.add_argument("target")
    instrument_parser.add_argument("--template-dir", default=TEMPLATES)
    summarize_parser = commands.add_parser("summarize", help="per phase, the earliest, median and latest block")
    summarize_parser.add_argument("lines")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    elif args.command == "instrument":
        instrument(args.template_dir, args.target)
    else:
        summarize(args)


if __name__ == "__main__":
    main()
