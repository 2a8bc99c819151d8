#!/usr/bin/env python3
"""Checks the layering rules of DESIGN.md section 2 on the source tree.

 1. cache/ includes no GPU toolkit header, and nothing from src/: it knows nothing of GPUs
    or attention.
 2. Only src/backend/ touches HIP or CUDA: no GPU toolkit header, and no hip*/cu*/nvrtc*/
    hiprtc* API name (called, or looked up by name) in any other C or C++ file of cache/,
    src/, tools/ or tests/. Tests and tools reach devices through the Backend interface.
 3. The folders of src/ depend on each other without a cycle, judged by their
    #include "folder/file" lines.
 4. The fleet cache's client libraries stay behind cache/'s interfaces: hiredis is included
    only by cache/redis_storage.cpp (behind RemoteStorage), OpenSSL only by
    cache/remote_value.cpp, libarchive only by cache/cache_archive.cpp.

Prints every violation and exits 1 when there is one.  Usage: check_layering.py SOURCE_ROOT
"""
import pathlib
import re
import sys

CODE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp"}
GPU_HEADER = re.compile(r'#\s*include\s*[<"]\s*(hip/|hsa/|amd_comgr|cuda[\w.]*\.h|cudaTypedefs\.h|'
                        r'nvrtc\.h|hiprtc\.h|nvPTXCompiler\.h|nvJitLink\.h)')
# An API name: the toolkits' prefixes followed by a capital, e.g. hipMalloc, cuLaunchKernel.
GPU_API_NAME = re.compile(r'\b(hip|hiprtc|cu|nvrtc)[A-Z]\w*')
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/', re.DOTALL)


def code_files(root, folder):
    return sorted(p for p in (root / folder).rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file())


def without_comments(text):
    # Comments may name an API to explain it; only code and its strings count.
    return COMMENTS.sub("", text)


def lines_matching(pattern, text):
    """(line number, what matched) for each match; a match at the start of a line gives the whole line."""
    found = []
    for match in pattern.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.start())
        whole_line = text[line_start:line_end if line_end >= 0 else len(text)].strip()
        what = whole_line if whole_line.startswith(match.group(0)) else match.group(0)
        found.append((text.count("\n", 0, match.start()) + 1, what))
    return found


def check_cache(root):
    problems = []
    for path in code_files(root, "cache"):
        text = without_comments(path.read_text())
        for line, match in lines_matching(GPU_HEADER, text):
            problems.append(f"{path.relative_to(root)}:{line}: cache/ includes a GPU header: {match}")
        for include in QUOTED_INCLUDE.findall(text):
            if (root / "src" / include).exists():
                problems.append(f"{path.relative_to(root)}: cache/ includes src/{include}")
    return problems


def check_gpu_apis(root):
    problems = []
    for folder in ("cache", "src", "tools", "tests"):
        for path in code_files(root, folder):
            relative = path.relative_to(root)
            if relative.parts[:2] == ("src", "backend"):
                continue
            text = without_comments(path.read_text())
            for line, match in lines_matching(GPU_HEADER, text):
                problems.append(f"{relative}:{line}: a GPU header outside src/backend/: {match}")
            for line, match in lines_matching(GPU_API_NAME, text):
                problems.append(f"{relative}:{line}: a GPU API outside src/backend/: {match}")
    return problems


CLIENT_HEADERS = {
    re.compile(r'#\s*include\s*[<"]hiredis/'): "cache/redis_storage.cpp",
    re.compile(r'#\s*include\s*[<"]openssl/'): "cache/remote_value.cpp",
    re.compile(r'#\s*include\s*[<"]archive(_entry)?\.h'): "cache/cache_archive.cpp",
}


def check_client_libraries(root):
    problems = []
    for folder in ("cache", "src", "tools", "tests"):
        for path in code_files(root, folder):
            relative = path.relative_to(root).as_posix()
            text = without_comments(path.read_text())
            for pattern, owner in CLIENT_HEADERS.items():
                if relative == owner:
                    continue
                for line, match in lines_matching(pattern, text):
                    problems.append(f"{relative}:{line}: only {owner} includes this client library: {match}")
    return problems


def folder_graph(root):
    """Edges between src/ folders, each with the include lines that make it."""
    src = root / "src"
    edges = {}
    for path in code_files(root, "src"):
        here = path.relative_to(src).parts[0]
        for include in QUOTED_INCLUDE.findall(path.read_text()):
            target = src / include
            if (path.parent / include).exists() or not target.exists() or len(pathlib.Path(include).parts) < 2:
                continue  # beside the includer, or not a file of another src/ folder
            there = pathlib.Path(include).parts[0]
            if there != here:
                edges.setdefault(here, {}).setdefault(there, []).append(f"{path.relative_to(root)} -> {include}")
    return edges


def find_cycles(edges):
    """Every elementary cycle found by depth-first search, each once, as a list of folders."""
    cycles, seen = [], set()

    def visit(node, path):
        for successor in sorted(edges.get(node, {})):
            if successor in path:
                cycle = path[path.index(successor):]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    cycles.append(cycle)
            else:
                visit(successor, path + [successor])

    for start in sorted(edges):
        visit(start, [start])
    return cycles


def check_folder_cycles(root):
    edges = folder_graph(root)
    problems = []
    for cycle in find_cycles(edges):
        ring = cycle + [cycle[0]]
        reasons = [edges[a][b][0] for a, b in zip(ring, ring[1:])]
        problems.append("include cycle between src/ folders " + " -> ".join(ring) + ":\n    " + "\n    ".join(reasons))
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[1]).resolve()
    checks = [("cache/ knows no GPU and no src/", check_cache),
              ("only src/backend/ touches HIP or CUDA", check_gpu_apis),
              ("no include cycle between src/ folders", check_folder_cycles),
              ("each fleet cache client library behind its one file", check_client_libraries)]
    failed = 0
    for title, check in checks:
        problems = check(root)
        print(f"{'ok    ' if not problems else 'FAILED'} {title}")
        for problem in problems:
            print("  " + problem)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
