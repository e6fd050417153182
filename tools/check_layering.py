#!/usr/bin/env python3
"""check_layering.py [SOURCE_DIR]: the layering rules the build relies on (docs/contributing.md).

- No MPI outside comm, runtime, io, app and core: src/{train,parallel,checkpoint,model,layers,optim,data,tensor,
  backend,config} and their headers use communicators (comm/communicator.hpp), never MPI calls,
  MPI types or <mpi.h>, so the watchdog sees every collective they make.
- The HDF5 MPI-IO calls (H5Pset_fapl_mpio, H5Pset_dxpl_mpio) stay in src/io.
- core may only ask for the rank and gather log lines: MPI appears only in core/log.cpp,
  core/error.cpp and the CHECK macros' header (core/error.hpp).
- A file includes headers of its own area and of the areas its area depends on (transitively),
  as src/CMakeLists.txt's hpctrain_area(NAME SOURCES ... DEPS ...) calls declare them: the same
  table the build links by. A source file's area is the library it is built into; a header's
  is that of its source file of the same name, else its folder (HEADER_AREA overrides).
Prints one line per violation (file:line: what) and exits 1 when there is any.
"""
import pathlib
import re
import sys

NO_MPI_AREAS = ["train", "parallel", "checkpoint", "model", "layers", "optim", "data", "tensor", "backend", "config"]
CORE_MPI_ALLOWED = {"src/core/log.cpp", "src/core/error.cpp", "include/hpctrain/core/error.hpp",
                    "include/hpctrain/core/log.hpp"}
# (also the process mesh's MPI handles, mesh().comm(dim): code above the runtime must not take them)
MPI = re.compile(r"\bMPI_[A-Za-z_]+\b|<mpi\.h>|\bCHECK_MPI\b|\bMPIX_[A-Za-z_]+\b|\bmesh\(\)\s*\.\s*comm\(")
MPIO = re.compile(r"\bH5Pset_(fapl|dxpl)_mpio\b")
INCLUDE = re.compile(r'#include "hpctrain/([\w/]+\.(?:hpp|inc|cuh))"')
# Header-only headers of the device runtime that live beside the backend's.
HEADER_AREA = {"include/hpctrain/backend/cuda/context.hpp": "device"}


def cmake_areas(root):
    """({area: set of direct dependencies}, {source path: area}) from src/CMakeLists.txt."""
    text = re.sub(r"#.*", "", (root / "src" / "CMakeLists.txt").read_text())
    deps, files = {}, {}
    for name, body in re.findall(r"hpctrain_area\((\w+)(.*?)\)", text, flags=re.S):
        words, key = body.split(), None
        deps[name] = set()
        for w in words:
            if w in ("SOURCES", "DEPS", "LIBS", "PRIVATE_LIBS"):
                key = w
            elif key == "SOURCES":
                files["src/" + w] = name
            elif key == "DEPS":
                deps[name].add(w)
    for name, body in re.findall(r"target_sources\(hpctrain_(\w+) PRIVATE(.*?)\)", text, flags=re.S):
        for w in body.split():
            files["src/" + w] = name
    return deps, files


def closure(deps):
    out = {}
    for a in deps:
        seen, todo = set(), list(deps[a])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(deps.get(d, ()))
        out[a] = seen | {a}
    return out


def area_of(rel, files):
    if rel in HEADER_AREA:
        return HEADER_AREA[rel]
    if rel in files:
        return files[rel]
    if rel.startswith("include/hpctrain/"):
        stem = rel[len("include/hpctrain/"):].rsplit(".", 1)[0]
        for ext in (".cpp", ".cu"):
            if "src/" + stem + ext in files:
                return files["src/" + stem + ext]
        return rel.split("/")[2]
    return None


def include_problems(root):
    deps, files = cmake_areas(root)
    allowed = closure(deps)
    problems = []
    for base in (root / "src", root / "include" / "hpctrain"):
        for p in sorted(base.rglob("*")):
            if not p.is_file() or p.suffix not in (".cpp", ".hpp", ".cu", ".cuh", ".inc"):
                continue
            rel = p.relative_to(root).as_posix()
            mine = area_of(rel, files)
            if mine not in allowed:
                continue  # main.cpp, or a file no library builds (a stub of the other configuration)
            for n, line in enumerate(p.read_text(errors="replace").split("\n"), 1):
                m = INCLUDE.search(line)
                if not m:
                    continue
                theirs = area_of("include/hpctrain/" + m.group(1), files)
                if theirs not in allowed[mine]:
                    problems.append(f"{rel}:{n}: includes hpctrain/{m.group(1)} ({theirs}), "
                                    f"but {mine} may use only {', '.join(sorted(allowed[mine]))}")
    return problems


def code_lines(path):
    """(line number, code) with comments and string literals blanked."""
    text = path.read_text(errors="replace")
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for n, line in enumerate(text.split("\n"), 1):
        line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
        yield n, line.split("//")[0]


def sources(root, area):
    for base in (root / "src" / area, root / "include" / "hpctrain" / area):
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.suffix in (".cpp", ".hpp", ".cu", ".inc", ".h"):
                    yield p


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    for area in NO_MPI_AREAS + ["core"]:
        for p in sources(root, area):
            rel = p.relative_to(root).as_posix()
            if area == "core" and rel in CORE_MPI_ALLOWED:
                continue
            for n, code in code_lines(p):
                m = MPI.search(code)
                if m:
                    problems.append(f"{rel}:{n}: {m.group(0)}: no MPI in {area}/ (use a Communicator)")
    for p in sorted((root / "src").rglob("*")) + sorted((root / "include").rglob("*")):
        if p.is_file() and p.suffix in (".cpp", ".hpp", ".cu"):
            rel = p.relative_to(root).as_posix()
            if rel.startswith("src/io/") or rel.startswith("include/hpctrain/io/"):
                continue
            for n, code in code_lines(p):
                m = MPIO.search(code)
                if m:
                    problems.append(f"{rel}:{n}: {m.group(0)}: MPI-IO belongs in io/")
    problems += include_problems(root)
    for line in problems:
        print(line)
    print(f"layering: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
