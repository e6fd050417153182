"""The shell commands the user docs show (README.md and docs/*.md): every line of a fenced
bash/sh/console/unmarked code block that starts with a program or path a user would type,
continuation lines (trailing backslash) joined, a leading "$ " prompt dropped. Shared by
tests/docs/doc_commands.py and `python3 tests/docs/extract_commands.py` (prints them)."""
import glob
import os
import re

STARTS = re.compile(r"^(mpirun|build/|tools/|srun|sbatch|qsub|bsub|python3|/usr/bin/python3|cmake|ctest|trainer|"
                    r"hpctrain-data|\./|git |apt|sudo|spack|docker|apptainer|singularity|ninja|PYTHONPATH=|"
                    r"HPCTRAIN_|OMPI_|kill|tensorboard|cat |h5dump|h5ls|npm|jobscripts/)")


def doc_files(root):
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def commands(root):
    """[(file relative to root, command)] in document order."""
    out = []
    for path in doc_files(root):
        fence, cur = None, ""  # fence: the open code block's language, None outside one
        for line in open(path).read().split("\n"):
            s = line.strip()
            if s.startswith("```"):
                fence = None if fence is not None else s[3:].strip()
                continue
            if fence not in ("bash", "sh", "console", "shell", ""):
                continue
            if s.startswith("$ "):
                s = s[2:]
            if not cur and not STARTS.match(s):
                continue
            cur = (cur + " " + s).strip() if cur else s
            if cur.endswith("\\"):
                cur = cur[:-1].rstrip()
                continue
            out.append((os.path.relpath(path, root), re.sub(r"\s+", " ", cur)))
            cur = ""
    return out


if __name__ == "__main__":
    for f, c in commands(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")):
        print(f + "\t" + c)
