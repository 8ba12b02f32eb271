#!/usr/bin/env bash
# Checks the Markdown documentation against itself and against the code:
#   - every relative link and #anchor in README.md, CHANGELOG.md and
#     docs/**/*.md resolves (anchors by GitHub's heading slugs), and a link
#     into its own page names the file (Doxygen cannot resolve a bare #x);
#   - every field of the public option structs (ElectorOptions, RedisOptions
#     and the structs inside it) is in a table of docs/configuration.md with
#     the header's default, and every field those tables name exists;
#   - each block marked `<!-- snippet: PATH -->` equals the file PATH, README.md
#     shows examples/getting_started as such blocks, and docs/deployment.md
#     every file under deploy/ (the systemd unit, the Kubernetes manifests);
#   - each block marked `<!-- program -->` is a ```cpp block with a main()
#     (scripts/doc_programs.py; tests/consumer/run.sh compiles them);
#   - the ACL rules of operations.md, sentinel.md and cluster.md are one line
#     each, read and applied as written by tests/integration/acl_test.cpp, and
#     the Sentinel and Cluster rules are the one-server rule plus their words;
#   - code fences are balanced in every Markdown file.
# Prints each problem as file:line: message and exits 1 if there is any.
# Needs bash and python3 only; reads files, runs nothing else.
#
#   scripts/check-docs.sh [repository root]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 - "$root" <<'PYTHON'
import os
import re
import sys

root = sys.argv[1]
os.chdir(root)
problems = []


def problem(path, line, message):
    problems.append(f"{path}:{line}: {message}")


def markdown_files():
    files = [f for f in ("README.md", "CHANGELOG.md") if os.path.exists(f)]
    for base, dirs, names in os.walk("docs"):
        dirs.sort()
        files += [os.path.join(base, n) for n in sorted(names) if n.endswith(".md")]
    return files


def all_markdown_files():
    found = []
    for base, dirs, names in os.walk("."):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "build")
        found += [os.path.normpath(os.path.join(base, n)) for n in sorted(names) if n.endswith(".md")]
    return found


FENCE = re.compile(r"^ *(`{3,}|~{3,})(.*)$")


def scan_fences(path, lines, report=True):
    """Marks the lines inside fenced blocks (fences included); reports (when
    `report`) an unclosed block and a closing fence with text after it."""
    problem_here = problem if report else (lambda *args: None)
    inside = [False] * len(lines)
    opened = None  # (line index, fence)
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if opened is None:
            if m:
                fence, info = m.group(1), m.group(2)
                if fence[0] == "`" and "`" in info:
                    problem_here(path, i + 1, f"a fence followed by text with a backtick: {line.strip()[:60]!r}")
                    continue
                opened = (i, fence)
                inside[i] = True
            continue
        inside[i] = True
        start, fence = opened
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            if m.group(2).strip():
                problem_here(path, i + 1, f"text after the closing fence of the block opened on line {start + 1}")
            opened = None
    if opened is not None:
        problem_here(path, opened[0] + 1, "code fence never closed")
    return inside


def blank_code(text):
    """Inline code spans and HTML comments replaced by spaces (newlines kept)."""
    keep_newlines = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"<!--.*?-->", keep_newlines, text, flags=re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", keep_newlines, text, flags=re.S)


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


anchor_cache = {}


def anchors_of(path):
    if path not in anchor_cache:
        lines = open(path, encoding="utf-8").read().split("\n")
        inside = scan_fences(path, lines, report=False)  # problems are reported once, below
        seen, result = {}, set()
        for i, line in enumerate(lines):
            if inside[i]:
                continue
            m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
            for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                result.add(m.group(1))
        anchor_cache[path] = result
    return anchor_cache[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)


def check_links(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    inside = scan_fences(path, lines, report=False)
    text = "\n".join("" if inside[i] else line for i, line in enumerate(lines))
    text = blank_code(text)
    targets = [(m.start(1), m.group(1)) for m in LINK.finditer(text)]
    targets += [(m.start(1), m.group(1)) for m in REFDEF.finditer(text)]
    for offset, target in targets:
        line = text.count("\n", 0, offset) + 1
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        if file_part:
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                problem(path, line, f"broken link: {target} ({dest} does not exist)")
                continue
        else:
            # GitHub resolves a bare #anchor, Doxygen (the docs target) does not.
            problem(path, line, f"link to #{anchor} without the file name: write {os.path.basename(path)}#{anchor}")
            dest = path
        if anchor:
            if not dest.endswith(".md") or os.path.isdir(dest):
                continue  # anchors into source files are line numbers and the like
            if anchor not in anchors_of(dest):
                problem(path, line, f"broken anchor: {target} (no heading of {dest} has the slug '{anchor}')")


# ---------------------------------------------------------------- options

OPTION_HEADERS = ["include/leasehold/elector_options.hpp", "include/leasehold/redis_options.hpp"]
ROOT_STRUCTS = ["ElectorOptions", "RedisOptions"]
FIELD = re.compile(r"^\s*(?P<type>[A-Za-z_][\w:<>, ]*?[\w>])\s+(?P<name>[a-z_]\w*)\s*"
                   r"(?:=\s*(?P<eq>[^;{]+?)|\{(?P<brace>[^;]*)\})?\s*;\s*(?://.*)?$")


def parse_structs():
    """struct name -> {field: (type, initializer or '', header, line)}, from
    `type name = value;` and `type name{value};` lines at the struct's top level."""
    structs = {}
    for header in OPTION_HEADERS:
        lines = open(header, encoding="utf-8").read().split("\n")
        current, depth = None, 0
        for i, line in enumerate(lines):
            code = re.sub(r"//.*", "", line)
            if current is None:
                m = re.match(r"^struct\s+(\w+)\s*\{", code)
                if m:
                    current, depth = m.group(1), 1
                    structs[current] = {}
                continue
            if depth == 1 and "(" not in code and not code.strip().startswith(("using ", "static ", "friend ")):
                m = FIELD.match(line)
                if m:
                    init = (m.group("eq") if m.group("eq") is not None else m.group("brace") or "").strip()
                    structs[current][m.group("name")] = (m.group("type").strip(), init, header, i + 1)
                elif code.strip() and code.strip() not in ("};", "public:", "private:"):
                    problem(header, i + 1, f"cannot read this line of struct {current} as a field: {line.strip()}")
            depth += code.count("{") - code.count("}")
            if depth <= 0:
                current = None
    return structs


def element_type(type_):
    m = re.match(r"^std::(?:optional|vector)<(.*)>$", type_)
    return m.group(1).strip() if m else type_


def expected_defaults(type_, init, structs):
    """The spellings of the default that configuration.md may use; None for a
    nested struct (its own fields carry the defaults)."""
    if type_ in structs:
        return None
    if type_.startswith("std::optional<"):
        if init:
            return {"?unreadable"}
        return {"unset"}
    if type_ == "std::string":
        if not init:
            return {"empty"}
        return {init.strip('"')}
    if re.match(r"^std::(vector|map)<", type_):
        return {"empty", "none"} if not init else {"?unreadable"}
    if type_ == "bool":
        return {init}
    if type_ in ("int", "unsigned", "std::uint16_t", "std::uint32_t", "std::int64_t", "std::size_t"):
        return {init}
    if type_ == "std::chrono::milliseconds":
        if not re.fullmatch(r"\d+", init):
            return {"?unreadable"}
        ms = int(init)
        spellings = {f"{ms} ms"}
        if ms == 0:
            spellings.add("0")
        elif ms % 1000 == 0:
            spellings.add(f"{ms // 1000} s")
        return spellings
    return {"?unreadable"}


def normalise_default(cell):
    text = re.sub(r"\s*\(.*\)\s*$", "", cell)  # "0 (off)" -> "0"
    return text.replace("`", "").strip().lower()


def split_row(line):
    cells = line.strip().strip("|").split("|")
    return [c.strip() for c in cells]


def check_options():
    structs = parse_structs()
    for name in ROOT_STRUCTS:
        if name not in structs:
            problem(OPTION_HEADERS[0], 1, f"struct {name} not found in {', '.join(OPTION_HEADERS)}")
            return
    # The structs reachable from the roots are the ones to document.
    wanted, todo = set(), list(ROOT_STRUCTS)
    while todo:
        s = todo.pop()
        if s in wanted:
            continue
        wanted.add(s)
        for type_, *_ in structs[s].values():
            if element_type(type_) in structs:
                todo.append(element_type(type_))
    documented = set()  # (struct, field)
    for path in ["docs/configuration.md"] + [f for f in markdown_files() if f != "docs/configuration.md"]:
        is_reference = path == "docs/configuration.md"
        lines = open(path, encoding="utf-8").read().split("\n")
        inside = scan_fences(path, lines, report=False)
        heading, table_struct, in_table = "", None, False
        for i, line in enumerate(lines):
            if inside[i]:
                in_table = False
                continue
            m = re.match(r"^#{1,6}\s+(.*)", line)
            if m:
                heading = m.group(1)
                continue
            if not line.lstrip().startswith("|"):
                in_table = False
                continue
            cells = split_row(line)
            if not in_table:
                in_table = True
                table_struct = None
                if len(cells) >= 2 and cells[0].lower() == "field" and cells[1].lower() == "default":
                    named = [s for s in structs if re.search(rf"\b{s}\b", heading)]
                    if named:
                        table_struct = named[0]
                    elif is_reference:
                        problem(path, i + 1, f"a table of fields under the heading '{heading}', which names no option struct")
                continue
            if table_struct is None or re.match(r"^[\s|:-]+$", line):
                continue
            names = re.findall(r"`([^`]+)`", cells[0])
            if not names:
                problem(path, i + 1, f"a row of the {table_struct} table without a `field` name")
            for dotted in names:
                struct, parts = table_struct, dotted.split(".")
                for k, part in enumerate(parts):
                    part = part.removesuffix("[]")
                    fields = structs.get(struct, {})
                    if part not in fields:
                        problem(path, i + 1, f"`{dotted}`: {struct} has no field '{part}' (headers: {', '.join(OPTION_HEADERS)})")
                        break
                    documented.add((struct, part))
                    type_, init, header, hline = fields[part]
                    if k + 1 < len(parts):
                        struct = element_type(type_)
                        continue
                    expected = expected_defaults(type_, init, structs)
                    if expected is None:
                        break
                    if "?unreadable" in expected:
                        problem(header, hline, f"check-docs.sh cannot read the default of {struct}::{part} ({type_} = '{init}'): teach it")
                        break
                    got = normalise_default(cells[1]) if len(cells) > 1 else ""
                    if got not in {e.lower() for e in expected}:
                        want = " or ".join(sorted(expected))
                        problem(path, i + 1, f"`{dotted}`: default '{cells[1] if len(cells) > 1 else ''}', "
                                             f"but {header}:{hline} says {want}")
    for s in sorted(wanted):
        for field, (_, _, header, hline) in structs[s].items():
            if (s, field) not in documented:
                problem(header, hline, f"{s}::{field} is not in a field table of docs/configuration.md")


# ---------------------------------------------------------------- snippets

REQUIRED_SNIPPETS = {
    "README.md": ["examples/getting_started/main.cpp", "examples/getting_started/CMakeLists.txt"],
    "docs/deployment.md": sorted(os.path.join(base, n) for base, _, names in os.walk("deploy") for n in names),
}


def check_snippets(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    shown = set()
    for i, line in enumerate(lines):
        m = re.match(r"^<!--\s*snippet:\s*(\S+)\s*-->\s*$", line)
        if not m:
            continue
        source = m.group(1)
        shown.add(source)
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            problem(path, i + 1, f"snippet marker for {source} not followed by a code fence")
            continue
        fence = FENCE.match(lines[i + 1]).group(1)
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            continue  # reported by the fence check
        block = "\n".join(lines[i + 2:end]) + "\n"
        if not os.path.isfile(source):
            problem(path, i + 1, f"snippet of {source}, which does not exist")
            continue
        actual = open(source, encoding="utf-8").read()
        if block != actual:
            a, b = block.split("\n"), actual.split("\n")
            k = next((k for k in range(max(len(a), len(b))) if k >= len(a) or k >= len(b) or a[k] != b[k]), 0)
            problem(path, i + 3 + k, f"differs from {source}:{k + 1} (copy the file into the block)")
    for source in REQUIRED_SNIPPETS.get(path, []):
        if source not in shown:
            problem(path, 1, f"no `<!-- snippet: {source} -->` block")


# ---------------------------------------------------------------- programs

sys.path.insert(0, os.path.join(root, "scripts"))
import doc_programs  # noqa: E402  (tests/consumer/run.sh compiles the same blocks)


def check_programs():
    for path, line, message in doc_programs.problems(root):
        problem(path, line, message)


# ---------------------------------------------------------------- ACL rules

# The integration tests Acl.* read each topology's rule from its page (the
# one line starting with `ACL SETUSER <user> `) and apply it as written; the
# Sentinel and Cluster rules are the one-server rule plus their own words.
ACL_TEST = "tests/integration/acl_test.cpp"
ACL_RULES = [  # (page, user, page whose rule it extends, the words it adds)
    ("docs/operations.md", "leasehold", None, []),
    ("docs/sentinel.md", "leasehold", "docs/operations.md", ["+wait"]),
    ("docs/cluster.md", "leasehold", "docs/operations.md",
     ["+cluster|shards", "+cluster|slots", "+asking", "+spublish", "+ssubscribe", "+sunsubscribe"]),
    ("docs/sentinel.md", "leasehold-watch", None, []),
]


def acl_rule(path, user):
    """(line, words) of the one `ACL SETUSER <user> ` line of `path` (inline
    code spans count, as operations.md states the sentinels' rule in one)."""
    found = []
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n")):
        for m in re.finditer(rf"(?:^\s*|`)(ACL SETUSER {re.escape(user)} [^`]*)", line):
            found.append((i + 1, m.group(1).split()))
    if len(found) != 1:
        problem(path, found[1][0] if found else 1, f"{len(found)} `ACL SETUSER {user} ` lines: {ACL_TEST} needs exactly one")
        return None
    return found[0]


def check_acl_rules():
    test = open(ACL_TEST, encoding="utf-8").read()
    for path, user, base, extra in ACL_RULES:
        rule = acl_rule(path, user)
        if rule is None:
            continue
        line, words = rule
        for name in (os.path.basename(path), user):
            if f'"{name}"' not in test:
                problem(path, line, f"the ACL rule for {user} is applied by no test: {ACL_TEST} never names \"{name}\"")
        if base is not None:
            base_rule = acl_rule(base, user)
            if base_rule and words != base_rule[1] + extra:
                problem(path, line, f"the ACL rule differs from {base}:{base_rule[0]} followed by {' '.join(extra)}")
    # The sentinels' user is stated in operations.md too (inline), the same.
    ops = acl_rule("docs/operations.md", "leasehold-watch")
    sen = acl_rule("docs/sentinel.md", "leasehold-watch")
    if ops and sen and ops[1] != sen[1]:
        problem("docs/operations.md", ops[0], f"the leasehold-watch rule differs from docs/sentinel.md:{sen[0]}")


for path in all_markdown_files():
    scan_fences(path, open(path, encoding="utf-8").read().split("\n"))
for path in markdown_files():
    check_links(path)
    check_snippets(path)
check_options()
check_programs()
check_acl_rules()

for p in problems:
    print(p)
if problems:
    print(f"check-docs: {len(problems)} problem(s)")
    sys.exit(1)
print("check-docs: links, option tables, snippets, program blocks, ACL rules and code fences are consistent")
PYTHON
