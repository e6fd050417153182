"""doc_commands.py SOURCE_DIR BUILD_DIR: runs or checks every command README.md and docs/*.md show,
as tests/docs/commands.list says (its header explains the modes). Prints one line per command
and a PASS/FAIL footer; exit 1 on any failure, or when the list and the docs disagree."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_commands  # noqa: E402

src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
MPIRUN_VALUE = {"-np", "-n", "--bind-to", "--host", "--map-by", "-x", "--hostfile"}


def listed():
    out = []
    for line in open(os.path.join(src, "tests", "docs", "commands.list")):
        if line.startswith("#") or not line.strip():
            continue
        mode, file, command = line.rstrip("\n").split("\t", 2)
        out.append((mode, file, command))
    return out


def trainer_help():
    text = subprocess.run([os.path.join(build, "trainer"), "--help"], capture_output=True, text=True).stdout
    options = set(re.findall(r"^  (--[a-z-]+)", text, re.M)) | {"-h"}
    keys, section = set(), ""
    for line in text.splitlines():
        if re.match(r"^  \[[a-z]+\]$", line):
            section = line.strip()[1:-1]
        elif re.match(r"^    [a-z_0-9]+ = ", line) and section:
            keys.add(section + "." + line.split("=")[0].strip())
    return options, keys


TRAINER_OPTIONS, CONFIG_KEYS = trainer_help()


def check_trainer_args(args):
    """Problems with a trainer's arguments: unknown options, --set keys no section has."""
    bad = []
    for i, a in enumerate(args):
        if a.startswith("--") and a.split("=")[0] not in TRAINER_OPTIONS:
            bad.append("unknown trainer option " + a)
        if a == "--set" and i + 1 < len(args):
            key = args[i + 1].split("=")[0]
            if key not in CONFIG_KEYS:
                bad.append("--set " + key + ": no such configuration key")
    return bad


def words(command):
    w = shlex.split(command, comments=True)
    w = [x[1:-1] if x.startswith("[") and x.endswith("]") else x for x in w]  # "[--flag]": an optional flag
    while w and re.match(r"^[A-Z_]+=", w[0]):  # VAR=value prefixes
        w = w[1:]
    return w


def parse(command):
    """Problems of a command checked without running it."""
    w = words(command)
    if w and w[0] in ("sbatch", "qsub", "bsub", "srun"):
        scripts = [x for x in w if x.startswith("jobscripts/")]
        if not scripts:
            return ["no job script in the command"]
        if not os.path.isfile(os.path.join(src, scripts[0])):
            return ["no job script " + scripts[0]]
        return check_trainer_args(w[w.index(scripts[0]) + 2:])
    if w and w[0] in ("mpirun", "tools/launch.sh"):  # (launch.sh passes its options to mpirun)
        i = 1
        while i < len(w) and w[i].startswith("-"):
            i += 3 if w[i] == "--mca" else 2 if w[i] in MPIRUN_VALUE else 1
        w = w[i:]
    if not w:
        return ["no program"]
    prog = w[0]
    if prog in ("trainer", "build/trainer"):
        return check_trainer_args(w[1:])
    if prog in ("hpctrain-data", "build/hpctrain-data"):
        usage = subprocess.run([os.path.join(build, "hpctrain-data"), "--help"], capture_output=True, text=True).stdout
        bad = [] if re.search(r"hpctrain-data " + re.escape(w[1]) + r"\b", usage) else ["no command " + w[1]]
        return bad + ["unknown option " + a for a in w[2:] if a.startswith("--") and a not in usage]
    path = os.path.join(build, prog[len("build/"):]) if prog.startswith("build/") else os.path.join(src, prog)
    if not os.path.isfile(path):
        return ["no program " + prog]
    source = path
    if prog.startswith("build/"):  # a benchmark: its options are in its source
        name = prog[len("build/"):].replace("-", "_") + ".cpp"
        found = [os.path.join(d, name) for d in (os.path.join(src, "tools", "bench"),) if os.path.isfile(os.path.join(d, name))]
        source = found[0] if found else path
    text = open(source, errors="replace").read()
    return ["unknown option " + a for a in w[1:] if a.startswith("--") and a.split("=")[0] not in text]


def sandbox():
    d = tempfile.mkdtemp(prefix="hpct_docs_")
    for name in ("inputs", "tools", "jobscripts", "packaging"):
        os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.symlink(build, os.path.join(d, "build"))
    shutil.copy(os.path.join(src, "README.md"), d)
    shutil.copytree(os.path.join(src, "docs"), os.path.join(d, "docs"))
    text = open(os.path.join(src, "README.md")).read() + "".join(
        open(os.path.join(src, "docs", f)).read() for f in sorted(os.listdir(os.path.join(src, "docs"))))
    # (the docs' input.txt is tiny Shakespeare: its 65 characters, which inputs/shakespeare_gpt.ini expects)
    chars = "\n !$&',-.3:;?" + "".join(map(chr, range(65, 91))) + "".join(map(chr, range(97, 123)))
    open(os.path.join(d, "input.txt"), "w").write("".join(c for c in text if c in chars) + chars)
    return d


def run(command, cwd, mode):
    """Problems running a command: exit code and the last line of its output."""
    line = command + (" --set train.steps=2" if mode == "short" else "")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="0")
    try:
        r = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, errors="replace",
                           timeout=180, env=env)
    except subprocess.TimeoutExpired:
        return ["did not finish in 180 s"]
    want = 2 if mode == "fails" else 0
    if r.returncode != want:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or [""]
        return ["exit %d (expected %d): %s" % (r.returncode, want, tail[0][:300])]
    return []


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links():
    """Links between the docs to a file or a heading that is not there."""
    files = extract_commands.doc_files(src)
    heads = {os.path.basename(f): {slug(h) for h in re.findall(r"^#+ (.*)$", open(f).read(), re.M)} for f in files}
    bad = []
    for f in files:
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)(?:#([^)]+))?\)", open(f).read()):
            name = os.path.basename(target)
            if not os.path.isfile(os.path.join(os.path.dirname(f), target)):
                bad.append("%s: link to %s: no such file" % (os.path.relpath(f, src), target))
            elif anchor and name in heads and anchor not in heads[name]:
                bad.append("%s: link to %s#%s: no such heading" % (os.path.relpath(f, src), target, anchor))
    return bad


def main():
    docs = extract_commands.commands(src)
    entries = listed()
    problems = []
    # The checks can fail (negative controls): a misspelt option, key, command and program.
    for wrong in ("build/trainer inputs/mnist_mlp.ini --stepz 3", "mpirun -np 2 build/trainer x.ini --set train.stepz=1",
                  "build/hpctrain-data import-jpeg --input x", "build/hpctrain-data import-csv --lable y",
                  "tools/plot_metrics.py m.csv --outt x", "sbatch jobscripts/slurm/nothing.sbatch x.ini"):
        if not parse(wrong):
            problems.append("the parse check passes a wrong command: " + wrong)
    if not run("exit 3", src, "run"):
        problems.append("the run check passes a failing command")
    problems += broken_links()
    if slug("Generation with a key/value cache (issue 34)") != "generation-with-a-keyvalue-cache-issue-34":
        problems.append("slug() is not GitHub's")
    if [(f, c) for _, f, c in entries] != docs:
        have = set((f, c) for _, f, c in entries)
        want = set(docs)
        for f, c in sorted(want - have):
            problems.append("not in tests/docs/commands.list: %s\t%s" % (f, c))
        for f, c in sorted(have - want):
            problems.append("in tests/docs/commands.list, no longer in the docs: %s\t%s" % (f, c))
        if not problems:
            problems.append("tests/docs/commands.list is not in the docs' order")
    counts = {}
    boxes = {}
    for mode, file, command in entries:
        kind = mode.split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "skip":
            print("skip   %-22s %s (%s)" % (file, command[:90], mode[5:].strip()))
            continue
        if kind == "parse":
            bad = parse(command)
        else:
            if file not in boxes:  # (setdefault would build a sandbox for every command and leak it)
                boxes[file] = sandbox()
            box = boxes[file]
            t0 = time.time()
            bad = run(command, box, kind)
            command = "(%.1f s) %s" % (time.time() - t0, command)
        print("%-6s %-22s %s%s" % ("ok" if not bad else "FAIL", file, command[:110], "" if not bad else "\n       " + "; ".join(bad)))
        if bad:
            problems.append("%s: %s: %s" % (file, command, "; ".join(bad)))
    for b in boxes.values():
        shutil.rmtree(b, ignore_errors=True)
    print("\n%d commands: %s" % (len(entries), ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))))
    for p in problems:
        print("FAIL " + p)
    print("PASS" if not problems else "FAILED")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
