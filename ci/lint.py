#!/usr/bin/python3
"""lint.py — the house rules a machine can check (make lint; make check).

Four rules, one function each, over the files of a tree (git's list of
tracked and untracked-but-not-ignored files when the root is a git
checkout, a plain walk otherwise; tests/lint_fixtures/ is always left out,
since its files break the rules on purpose):

  pyflakes    pyflakes (Debian: pyflakes3) over the .py files in bench/ and tests/
  shellcheck  shellcheck over every shell script (*.sh, *.bash, or a #! line
              naming sh, bash, dash or ksh)
  arch-ifdef  no #if/#ifdef/#ifndef/#elif in the arch-neutral C directories
              (NEUTRAL_DIRS) tests an arch by name (__i386__, ARCH_SPARC64...)
  paths       every repository path named in Markdown and in comments
              (C, assembly, linker scripts, Python comments and docstrings,
              Makefiles, shell, config files) exists; see check_paths

Each finding prints as FILE:LINE: message; the last line is the summary
`lint: N rules, N findings`, and the exit status is 1 when there is any
finding (2 for bad usage). --root runs the rules on another tree, which is
how tests/test_lint.py tries each rule on a broken fixture.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXCLUDED = ("tests/lint_fixtures/",)


def tree_files(root: Path, excluded=EXCLUDED) -> list[str]:
    """The tree's files, relative to root, with '/' separators, sorted,
    but those under the excluded directories."""
    if (root / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f and (root / f).is_file()]
    else:
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames
                           if d not in (".git", "__pycache__", "build")]
            rel = Path(dirpath).relative_to(root).as_posix()
            files += [f if rel == "." else f"{rel}/{f}" for f in filenames
                      if not f.endswith(".pyc")]
    return sorted(f for f in files if not (excluded and f.startswith(excluded)))


# --- pyflakes -----------------------------------------------------------

PYFLAKES_DIRS = ("bench/", "tests/")


def check_pyflakes(root: Path, files: list[str]) -> list[str]:
    """pyflakes's own messages, in process (the module pyflakes3 runs)."""
    try:
        from pyflakes import api, reporter
    except ImportError:
        return ["lint: pyflakes is not installed for this python "
                f"({sys.executable}); make deps installs pyflakes3"]
    out, err = io.StringIO(), io.StringIO()
    report = reporter.Reporter(out, err)
    for f in files:
        if f.startswith(PYFLAKES_DIRS) and f.endswith(".py"):
            # named as relative to root in its messages
            api.check((root / f).read_text(errors="replace"), f, report)
    return [line for line in (out.getvalue() + err.getvalue()).splitlines()
            if line.strip()]


# --- shellcheck ---------------------------------------------------------

SHELL_SUFFIXES = (".sh", ".bash")
SHELL_SHEBANG = re.compile(rb"^#!\s*\S*?(?:/env\s+)?\b(?:ba|da|k)?sh\b")


def shell_scripts(root: Path, files: list[str]) -> list[str]:
    scripts = []
    for f in files:
        if f.endswith(SHELL_SUFFIXES):
            scripts.append(f)
            continue
        with open(root / f, "rb") as fh:
            if SHELL_SHEBANG.match(fh.readline(200)):
                scripts.append(f)
    return scripts


def check_shellcheck(root: Path, files: list[str]) -> list[str]:
    scripts = shell_scripts(root, files)
    if not scripts:
        return []
    if not shutil.which("shellcheck"):
        return ["lint: shellcheck is not installed; make deps installs it"]
    res = subprocess.run(["shellcheck", "--format=gcc", *scripts], cwd=root,
                         capture_output=True, text=True)
    found = [line for line in res.stdout.splitlines() if line.strip()]
    if res.returncode not in (0, 1) or (res.returncode and not found):
        found.append(f"lint: shellcheck failed (exit {res.returncode}): "
                     f"{res.stderr.strip()}")
    return found


# --- arch-ifdef ---------------------------------------------------------

# The arch-neutral code: it reaches an arch only through tracer_arch.h,
# arch.h and the tarch/ headers, never by testing which arch it is built for.
NEUTRAL_DIRS = ("tracer/core/", "tracer/include/", "guest-kernel/core/",
                "guest-kernel/include/", "include/")
C_SUFFIXES = (".c", ".h", ".S", ".inc")
# Compilers' predefined arch macros, and the words that name an arch inside
# a macro of our own (ARCH_I386, CONFIG_SPARC64, TARGET_X86...). A bare
# ARCH_ prefix is not enough: ARCH_H and ARCH_TRAP_VECTORS are neutral.
ARCH_MACROS = {
    "i386", "__i386", "__i386__", "__i486__", "__i586__", "__i686__",
    "__x86_64", "__x86_64__", "__amd64", "__amd64__", "_M_IX86", "_M_X64",
    "sparc", "__sparc", "__sparc__", "__sparc_v8__", "__sparc_v9__",
    "__sparcv8", "__sparcv9", "__sparc64__", "__arch64__",
    "__arm__", "__aarch64__", "__riscv", "__powerpc__", "__powerpc64__",
    "__mips__", "__s390__",
}
ARCH_WORDS = {"i386", "i486", "i586", "i686", "ia32", "x86", "x86_64", "amd64",
              "sparc", "sparc32", "sparc64", "sparcv8", "sparcv9", "v9",
              "aarch64", "riscv", "powerpc", "ppc", "mips", "s390"}
CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b(.*)$")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def arch_words(root: Path) -> set[str]:
    """ARCH_WORDS and the tree's own arch directories' names."""
    words = set(ARCH_WORDS)
    for parent in ("tracer/arch", "guest-kernel/arch", "firmware"):
        if (root / parent).is_dir():
            words |= {p.name.lower() for p in (root / parent).iterdir() if p.is_dir()}
    return words


def names_an_arch(ident: str, words: set[str]) -> bool:
    if ident in ARCH_MACROS:
        return True
    parts = [p for p in ident.lower().split("_") if p]
    joined = {"_".join(parts[i:i + 2]) for i in range(len(parts) - 1)}
    return any(p in words for p in parts) or any(j in words for j in joined)


def directives(text: str):
    """(line number, keyword, condition) of each conditional directive, its
    continuation lines joined and its comments removed."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        m = CONDITIONAL.match(line)
        if m:
            cond = re.sub(r"/\*.*?(\*/|$)|//.*$", " ", m.group(2))
            yield start, m.group(1), cond


def check_arch_ifdef(root: Path, files: list[str]) -> list[str]:
    words = arch_words(root)
    found = []
    for f in files:
        if not (f.startswith(NEUTRAL_DIRS) and f.endswith(C_SUFFIXES)):
            continue
        text = (root / f).read_text(errors="replace")
        for line, keyword, cond in directives(text):
            named = [w for w in IDENTIFIER.findall(cond)
                     if w != "defined" and names_an_arch(w, words)]
            if named:
                found.append(
                    f"{f}:{line}: #{keyword} tests an arch by name ({', '.join(named)}); "
                    "arch-neutral code asks the arch's interface instead")
    return found


# --- paths --------------------------------------------------------------

# Top-level directories a path may start with even before they exist, so a
# page naming a file under docs/ or include/ is checked on a tree without them.
EXPECTED_TOP_DIRS = ("docs", "include")
# Never repository paths: build output, and whatever .gitignore names.
NOT_REPOSITORY = ("build",)
# Placeholders stand for one path component (or part of one): <arch> and
# {arch} for each arch, so tracer/arch/<arch>/fbt.c must exist for every
# arch; any other <name> or {name} for anything; {a,b} for a, then b.
PLACEHOLDER = re.compile(r"<([A-Za-z_][\w-]*)>|\{([A-Za-z_][\w.,*-]*)\}")
SEGMENT = r"(?:[\w.*?+-]|<[A-Za-z_][\w-]*>|\{[A-Za-z_][\w.,*-]*\})"
MD_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def path_pattern(top_dirs) -> re.Pattern:
    """A token that starts with a top-level directory and a '/', not glued to
    a longer path or a variable before it (/work/x/bench/, $(BUILD)/tracer/,
    https://host/tests/ are not ours)."""
    tops = "|".join(re.escape(d) for d in sorted(top_dirs, key=len, reverse=True))
    return re.compile(rf"(?<![\w./$)}}~@:-])(?:{tops})/(?:{SEGMENT}|/)*")


def comment_lines(path: str, text: str) -> list[tuple[int, str]]:
    """(line number, text) of the parts of a file that are prose: all of a
    Markdown file; the comments (and Python's docstrings) of code."""
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".md"):
        return list(enumerate(text.split("\n"), 1))
    if name.endswith(".py"):
        return python_prose(text)
    if name.endswith((".c", ".h", ".S", ".ld", ".tmpl", ".inc")):
        return c_comments(text)
    if name.endswith(".xml"):
        return block_comments(text, "<!--", "-->")
    if (name == "Makefile" or name.endswith((".mk", ".sh", ".bash", ".cfg", ".txt",
                                             ".rpn", ".conf", ".toml", ".ini"))
            or text.startswith("#!")):
        return hash_comments(text)
    return []


def python_prose(text: str) -> list[tuple[int, str]]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        return out              # pyflakes reports the file itself
    lines = text.split("\n")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                for n in range(first.lineno, first.end_lineno + 1):
                    out.append((n, lines[n - 1]))
    return sorted(out)


def c_comments(text: str) -> list[tuple[int, str]]:
    """/* */ and // comments, past string and character literals."""
    out, i, line, n = [], 0, 1, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k, part in enumerate(text[i:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] not in (c, "\n"):
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            line += text.count("\n", i - 1, min(i, n))
        else:
            line += c == "\n"
            i += 1
    return out


def block_comments(text: str, open_: str, close: str) -> list[tuple[int, str]]:
    out = []
    for m in re.finditer(re.escape(open_) + r".*?" + re.escape(close), text, re.S):
        first = text.count("\n", 0, m.start()) + 1
        out += [(first + k, part) for k, part in enumerate(m.group().split("\n"))]
    return out


def hash_comments(text: str) -> list[tuple[int, str]]:
    """From a '#' at the start of a line or after a blank to the end of the
    line (so ${#a[@]} and $# are code, not comments)."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        m = re.search(r"(?:^|\s)#", line)
        if m:
            out.append((n, line[m.end() - 1:]))
    return out


class Tree:
    """What exists in the tree: files, the directories that hold them, the
    .gitignore patterns that say what is generated, and the arches."""

    def __init__(self, root: Path, files: list[str]):
        self.files = set(files)
        self.dirs = {f.rsplit("/", k)[0] for f in files for k in range(1, f.count("/") + 1)}
        self.by_depth: dict[int, list[list[str]]] = {}
        for p in self.files | self.dirs:
            self.by_depth.setdefault(p.count("/"), []).append(p.split("/"))
        self.suffixes = {f.rsplit(".", 1)[1] for f in files if "." in f.rsplit("/", 1)[-1]}
        self.ignored = gitignore_patterns(root)
        arch_dirs = [d for d in self.dirs
                     if re.fullmatch(r"(tracer/arch|guest-kernel/arch)/[^/]+", d)]
        self.arches = sorted({d.rsplit("/", 1)[1] for d in arch_dirs})

    def exists(self, path: str) -> bool:
        want_dir = path.endswith("/")
        path = path.rstrip("/")
        if not any(ch in path for ch in "*?"):
            return path in self.dirs or (not want_dir and path in self.files)
        parts = path.split("/")
        for cand in self.by_depth.get(len(parts) - 1, []):
            if all(fnmatch.fnmatchcase(c, p) for c, p in zip(cand, parts)):
                if not want_dir or "/".join(cand) in self.dirs:
                    return True
        return False

    def python_object(self, path: str) -> bool:
        """bench/guest/qemu.Guest, bench/program/asm.Program.image: a module
        (or package) of the tree and a dotted name inside it."""
        head, _, last = path.rpartition("/")
        module, dot, attrs = last.partition(".")
        if (not dot or attrs.rsplit(".", 1)[-1] in self.suffixes
                or not all(a.isidentifier() for a in attrs.split("."))):
            return False            # rsp.py names a file, not an object
        base = f"{head}/{module}"
        return f"{base}.py" in self.files or f"{base}/__init__.py" in self.files

    def generated(self, path: str) -> bool:
        """Build output, or a path .gitignore matches (images/i386.elf)."""
        parts = path.rstrip("/").split("/")
        if parts[0] in NOT_REPOSITORY:
            return True
        for pat, anchored, dir_only in self.ignored:
            if anchored:
                for k in range(1, len(parts) + 1):
                    if fnmatch.fnmatchcase("/".join(parts[:k]), pat) and \
                            (k < len(parts) or not dir_only):
                        return True
            elif any(fnmatch.fnmatchcase(p, pat) for p in parts[:len(parts) - dir_only]):
                return True
        return False

    def expand(self, path: str) -> list[str]:
        """The concrete paths (or globs) a path with placeholders stands for."""
        m = PLACEHOLDER.search(path)
        if not m:
            return [path]
        word = m.group(1) or m.group(2)
        if "," in word:
            choices = word.split(",")
        elif word == "arch":
            choices = self.arches or ["*"]
        else:
            choices = ["*"]
        return [e for c in choices
                for e in self.expand(path[:m.start()] + c + path[m.end():])]


def gitignore_patterns(root: Path) -> list[tuple[str, bool, bool]]:
    pats = []
    gi = root / ".gitignore"
    for line in gi.read_text().splitlines() if gi.is_file() else []:
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        pats.append((line.lstrip("/"), anchored, dir_only))
    return pats


def check_paths(root: Path, files: list[str]) -> list[str]:
    """Every repository path named in prose exists.

    Prose is all of a Markdown file and the comments (and Python docstrings)
    of code. A repository path is a token that starts with a top-level
    directory of the tree (or docs/, include/) and a '/', and is not glued to
    something before it: /abs/bench/x, $(BUILD)/tracer/x and URLs are not.
    Trailing sentence punctuation is not part of it. It may be a glob
    (bench/programs/*.rpn: at least one match), a directory (a trailing '/':
    it must be one), or hold placeholders (<arch> or {arch}: every arch
    under tracer/arch and guest-kernel/arch; <other> or {other}: any one
    name; {a,b}: each of a and b). build/ and what .gitignore names are
    generated, never repository paths. In Markdown, a link's target that is
    not a URL or an #anchor is resolved against the page's directory.
    """
    tree = Tree(root, tree_files(root, excluded=()))   # the fixtures exist too
    tops = {d for d in tree.dirs if "/" not in d} | set(EXPECTED_TOP_DIRS)
    tops -= set(NOT_REPOSITORY)
    pattern = path_pattern(tops)
    found = []
    for f in files:
        try:
            text = (root / f).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        prose = comment_lines(f, text)
        for line, part in prose:
            for m in pattern.finditer(part):
                named = m.group().rstrip(".,:;!?")
                if named.split("/", 1)[1] in ("", "*") or tree.generated(named):
                    continue        # the bare directory: a layout tree's row
                missing = [p for p in tree.expand(named)
                           if not tree.exists(p) and not tree.python_object(p)]
                if missing:
                    found.append(f"{f}:{line}: names {named}, which does not exist"
                                 + (f" ({', '.join(missing)})"
                                    if missing != [named] else ""))
        if f.endswith(".md"):
            base = f.rsplit("/", 1)[0] + "/" if "/" in f else ""
            for line, part in prose:
                for m in MD_LINK.finditer(part):
                    target = m.group(1).split("#", 1)[0]
                    if not target or URL_SCHEME.match(target) or target.startswith("/"):
                        continue
                    resolved = os.path.normpath(base + target).replace(os.sep, "/")
                    if resolved == "." or resolved.startswith("../") or \
                            tree.generated(resolved):
                        continue
                    if not tree.exists(resolved + ("/" if target.endswith("/") else "")):
                        found.append(f"{f}:{line}: links to {target}, which does "
                                     f"not exist ({resolved})")
    return found


RULES = {
    "pyflakes": check_pyflakes,
    "shellcheck": check_shellcheck,
    "arch-ifdef": check_arch_ifdef,
    "paths": check_paths,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=REPO,
                    help="the tree to check (default: this repository)")
    ap.add_argument("--rule", action="append", choices=sorted(RULES),
                    help="run only this rule (repeatable; default: every rule)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    if not root.is_dir():
        ap.error(f"--root {args.root}: not a directory")
    files = tree_files(root)
    names = args.rule or list(RULES)
    total = 0
    for name in names:
        found = RULES[name](root, files)
        for line in found:
            print(line)
        print(f"lint: rule {name}: {len(found)} findings", flush=True)
        total += len(found)
    print(f"lint: {len(names)} rules, {total} findings")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
