"""check-doc-commands.py DOC.md DIR: runs every `$ ` command of DOC's code
blocks in DIR (a scratch mirror of the repository) and compares what it
prints with what the document shows below it.  Ends with one line
"N commands, M mismatches"; test/lit/docs/ runs it on docs/tutorial.md so
the tutorial's outputs can never silently go stale.

check-doc-commands.py --section "TITLE" DOC.md DIR: runs, in order, every
line of the indented code blocks under DOC's `## TITLE` that starts with
`bin/` (README.md's "Using it"), and checks its exit status: 0, or N when
its comment says `status N`.  Ends with "N commands, M failures"."""
import os, re, subprocess, sys, shutil


def check_section(title, doc, root):
    """The indented commands under `## title` run with the status they promise."""
    inside, cmds = False, []
    for ln in open(doc).read().split("\n"):
        if ln.startswith("## "):
            inside = ln[3:].strip() == title
        elif inside and ln.startswith("    bin/"):
            cmds.append(ln.strip())
    bad = 0
    for cmd in cmds:
        m = re.search(r"#.*\bstatus (\d+)", cmd)
        want = int(m.group(1)) if m else 0
        r = subprocess.run(["bash", "-c", cmd], cwd=root, capture_output=True, text=True)
        if r.returncode != want:
            bad += 1
            print(f"=== STATUS {r.returncode}, not {want}: {cmd}")
            print((r.stdout + r.stderr).rstrip("\n")[-2000:])
    print(f"{len(cmds)} commands, {bad} failures")


if sys.argv[1] == "--section":
    check_section(sys.argv[2], sys.argv[3], sys.argv[4])
    sys.exit(0)
doc, root = sys.argv[1], sys.argv[2]
lines = open(doc).read().split("\n")
blocks, cur, inblock = [], None, False
for ln in lines:
    if ln.startswith("```"):
        if inblock:
            blocks.append(cur); inblock = False
        else:
            cur = []; inblock = True
        continue
    if inblock:
        cur.append(ln)
steps = []
for b in blocks:
    if not b or not b[0].startswith("$ "):
        continue
    i = 0
    while i < len(b):
        assert b[i].startswith("$ "), b[i]
        cmd = b[i][2:]; i += 1
        if "<<'EOF'" in cmd:
            while b[i] != "EOF":
                cmd += "\n" + b[i]; i += 1
            cmd += "\nEOF"; i += 1
        out = []
        while i < len(b) and not b[i].startswith("$ "):
            out.append(b[i]); i += 1
        steps.append((cmd, "\n".join(out)))
bad = 0
for cmd, want in steps:
    r = subprocess.run(["bash", "-c", cmd], cwd=root, capture_output=True, text=True)
    got = (r.stdout + r.stderr).rstrip("\n")
    if got != want.rstrip("\n"):
        bad += 1
        print("=== MISMATCH:", cmd.split("\n")[0])
        import difflib
        for d in difflib.unified_diff(want.split("\n"), got.split("\n"), "doc", "real", lineterm=""):
            print(d)
print(f"{len(steps)} commands, {bad} mismatches")
