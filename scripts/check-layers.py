#!/usr/bin/env python3
"""Checks that every include points down the layers of include/leasehold/impl/.

The layers, bottom first, are the order <leasehold/src.hpp> includes them in.
A file of a layer may include its own layer's headers and those of the layers
below it, never one above; a public header (include/leasehold/*.hpp,
detail/) includes no impl/ header at all, and src.hpp includes every .ipp
file once. Prints each violation as file:line and exits 1 if there is any.

    scripts/check-layers.py [repository root]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
include = os.path.join(root, "include")
impl = os.path.join(include, "leasehold", "impl")
src_hpp = os.path.join(include, "leasehold", "src.hpp")
include_re = re.compile(r'^\s*#\s*include\s*[<"]leasehold/impl/([a-z_]+)/([^>"]+)[>"]')

# The layer order is src.hpp's: the first .ipp of each layer gives its rank.
layers = []
listed = []
for line in open(src_hpp):
    m = include_re.match(line)
    if m:
        listed.append(f"{m.group(1)}/{m.group(2)}")
        if m.group(1) not in layers:
            layers.append(m.group(1))
rank = {layer: i for i, layer in enumerate(layers)}
# Public headers that belong to a layer too: the classes the layer implements.
public_layer = {
    "redis/client.hpp": "redis",
    "elector.hpp": "elector",
    "leader_only.hpp": "work",
    "run_while_leader.hpp": "work",
    "scheduler.hpp": "work",
    "leasehold.hpp": "work",
}
public_re = re.compile(r'^\s*#\s*include\s*[<"]leasehold/([a-z_/]+\.hpp)[>"]')
problems = []

on_disk = sorted(os.path.relpath(os.path.join(d, n), impl)
                 for d, _, names in os.walk(impl) for n in names)
for folder in sorted({f.split("/")[0] for f in on_disk}):
    if folder not in rank:
        problems.append(f"include/leasehold/impl/{folder}/: a folder that src.hpp includes nothing of")
for f in on_disk:
    if f.endswith(".ipp") and listed.count(f) != 1:
        problems.append(f"include/leasehold/src.hpp: includes impl/{f} {listed.count(f)} times, not once")

for base, _, names in os.walk(os.path.join(include, "leasehold")):
    for name in sorted(names):
        path = os.path.join(base, name)
        rel = os.path.relpath(path, root)
        inside = os.path.relpath(path, impl)
        own = None if inside.startswith("..") else inside.split("/")[0]
        for number, line in enumerate(open(path), 1):
            p = public_re.match(line)
            if own is not None and p and p.group(1) in public_layer and rank[public_layer[p.group(1)]] > rank[own]:
                problems.append(f"{rel}:{number}: layer {own} includes <leasehold/{p.group(1)}>, "
                                f"of layer {public_layer[p.group(1)]} above it")
            m = include_re.match(line)
            if not m or path == src_hpp:
                continue
            target = m.group(1)
            if own is None:
                problems.append(f"{rel}:{number}: a public header includes impl/{target}/{m.group(2)}")
            elif target not in rank:
                problems.append(f"{rel}:{number}: includes impl/{target}/, which is not a layer")
            elif rank[target] > rank[own]:
                problems.append(f"{rel}:{number}: layer {own} includes {target}/{m.group(2)}, a layer above it")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"check-layers: {len(on_disk)} files in {len(layers)} layers ({' < '.join(layers)}); every include points down")
