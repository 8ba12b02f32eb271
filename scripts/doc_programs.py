#!/usr/bin/env python3
"""The C++ blocks of the Markdown docs that are complete programs.

A block is one when the line before its fence is `<!-- program -->` (a
`<!-- snippet: PATH -->` line may come between the two). scripts/check-docs.sh
imports this module to check the markers (a ```cpp fence whose code has a
`main(`); tests/consumer/run.sh runs it to compile every marked block:

  scripts/doc_programs.py extract ROOT OUTDIR

writes OUTDIR/CMakeLists.txt, a project with one executable per block that
finds leasehold with find_package, and one .cpp per block whose #line
directive makes a compiler error name the Markdown file and line. Prints
"TARGET FILE:LINE" per block.
"""
import os
import re
import sys

PROGRAM = re.compile(r"^<!--\s*program\s*-->\s*$")
SNIPPET = re.compile(r"^<!--\s*snippet:\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^ *(`{3,}|~{3,})(.*)$")


def markdown_files(root):
    files = [f for f in ("README.md", "CHANGELOG.md") if os.path.exists(os.path.join(root, f))]
    for base, dirs, names in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        files += [os.path.relpath(os.path.join(base, n), root) for n in sorted(names) if n.endswith(".md")]
    return files


def program_blocks(root, path):
    """[(marker line, info string, code, first code line)] of one file, lines
    1-based; info is None when no fence follows the marker."""
    lines = open(os.path.join(root, path), encoding="utf-8").read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        if not PROGRAM.match(line):
            continue
        j = i + 1
        if j < len(lines) and SNIPPET.match(lines[j]):
            j += 1
        m = FENCE.match(lines[j]) if j < len(lines) else None
        if not m:
            blocks.append((i + 1, None, "", 0))
            continue
        fence = m.group(1)
        end = next((k for k in range(j + 1, len(lines)) if lines[k].strip() == fence), len(lines))
        blocks.append((i + 1, m.group(2).strip(), "\n".join(lines[j + 1:end]) + "\n", j + 2))
    return blocks


def problems(root):
    """(path, line, message) for every marker that is not on a C++ program."""
    found = []
    for path in markdown_files(root):
        for marker, info, code, _ in program_blocks(root, path):
            if info is None:
                found.append((path, marker, "`<!-- program -->` not followed by a code fence"))
            elif info != "cpp":
                found.append((path, marker, f"`<!-- program -->` on a ```{info} block: programs are ```cpp"))
            elif not re.search(r"\bmain\s*\(", code):
                found.append((path, marker, "`<!-- program -->` on a block without main(): mark complete programs only"))
    return found


def extract(root, out):
    os.makedirs(out, exist_ok=True)
    cmake = ["cmake_minimum_required(VERSION 3.25)", "project(doc_programs LANGUAGES CXX)",
             "find_package(leasehold CONFIG REQUIRED)"]
    listing = []
    for path in markdown_files(root):
        for marker, info, code, first in program_blocks(root, path):
            if info != "cpp":
                continue
            name = re.sub(r"\W", "_", f"{path}_{marker}")
            source = os.path.join(out, name + ".cpp")
            with open(source, "w", encoding="utf-8") as f:
                f.write(f'#line {first} "{os.path.join(root, path)}"\n{code}')
            cmake += [f"add_executable({name} {name}.cpp)",
                      f"target_compile_features({name} PRIVATE cxx_std_20)",
                      f"target_link_libraries({name} PRIVATE leasehold::leasehold)",
                      # Warning-clean, as users who build with -Werror need. Under
                      # #line, GCC takes the block for a header and warns of a
                      # coroutine frame holding a lambda (-Wsubobject-linkage).
                      f"target_compile_options({name} PRIVATE -Wall -Wextra -Wpedantic -Werror "
                      f"$<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)"]
            listing.append(f"{name} {path}:{marker}")
    with open(os.path.join(out, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(cmake) + "\n")
    print("\n".join(listing))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "extract":
        sys.exit("usage: doc_programs.py extract ROOT OUTDIR")
    extract(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]))
