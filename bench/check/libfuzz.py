"""libFuzzer targets over the guest's own C, built for the host (tests/fuzz/,
whose README says what each target checks): the command loop and the
tracer's commands, the probe/watch/program arguments, the program
validator, the interpreter and the framing. This module builds them with
clang-14 (-fsanitize=fuzzer,address,undefined) into build/host/fuzz/,
writes their dictionary from the tables the C itself reads (wire.h, the
command and subcommand tables), seeds their corpora (tests/fuzz/seeds/,
bench/programs/*.rpn assembled, tests/fuzz/regressions/) and runs them:

    build() -> {target: executable}
    run(target, seconds=S | runs=N) -> Campaign (execs, cov, ft, crashes)
    replay(target, paths) -> list of (path, ok, output tail)

A crash libFuzzer finds is written to build/host/fuzz/<target>/crashes/;
kept in tests/fuzz/regressions/<target>/ it is replayed by every test run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BuildError
from ..paths import BUILD, REPO
from ..wire.frames import WIRE

OUT = BUILD / "host" / "fuzz"
ROOM = REPO / "tests" / "fuzz"
CLANG = "clang-14"
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
INCLUDES = ["tests/fuzz", "tests/fuzz/host", "include", "guest-kernel/include",
            "tracer/include", "tracer/core"]

# The guest's C every tracer target links (stubs.c stands in for the rest).
GUEST = [
    "tracer/core/aggregate.c", "tracer/core/args.c", "tracer/core/buffer.c",
    "tracer/core/drain.c", "tracer/core/stacks.c", "tracer/core/commands.c",
    "tracer/core/commands_probe.c", "tracer/core/commands_program.c",
    "tracer/core/commands_trace.c", "tracer/core/frame.c", "tracer/core/gate.c",
    "tracer/core/hits.c", "tracer/core/hooks.c", "tracer/core/itrace.c",
    "tracer/core/peek.c", "tracer/core/probe.c", "tracer/core/program.c",
    "tracer/core/program_check.c", "tracer/core/program_run.c",
    "tracer/core/program_tls.c", "tracer/core/ring.c", "tracer/core/watch.c", "tracer/core/stamp.c",
    "guest-kernel/core/command.c", "guest-kernel/core/printf.c",
    "guest-kernel/core/link.c", "guest-kernel/core/string.c", "guest-kernel/core/div64.c",
    "tests/fuzz/stubs.c",
    "tests/fuzz/dirty.c",
]

# Per-file flags. peek.c loads from whatever address a program names, on
# purpose, and faults are its business (stubs.c's trap_try): ASan must not
# check those loads. string.c defines the C library's own names (memcpy,
# strlen, ...) for the freestanding guest: renamed here, so that the host's
# (and ASan's) stay in charge and its parse_u64 still links.
LIBC_NAMES = ("memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp",
              "strncmp", "strchr")
FILE_FLAGS = {
    "tracer/core/peek.c": ["-fno-sanitize=address"],
    "guest-kernel/core/string.c": [f"-D{n}=guest_{n}" for n in LIBC_NAMES]
    + ["-Wno-unknown-attributes"],
}


@dataclass(frozen=True)
class Target:
    name: str
    main: str             # tests/fuzz/<main>
    sources: tuple        # the guest's files it links
    what: str
    link: tuple = ()      # more linker flags


TARGETS = {t.name: t for t in (
    Target("command", "fuzz_command.c", tuple(GUEST),
           "bytes on the serial line: command loop, every command, replies",
           ("-Wl,--wrap=program_load",)),
    Target("args", "fuzz_args.c", tuple(GUEST),
           "probe/watch/program/trace lines built from the command tables",
           ("-Wl,--wrap=program_load",)),
    Target("validate", "fuzz_validate.c",
           ("tracer/core/program_check.c", "guest-kernel/core/printf.c",
            "guest-kernel/core/string.c"),
           "any bytes as a probe program: the validator"),
    Target("run", "fuzz_run.c", tuple(GUEST),
           "accepted programs run on random registers and faulting memory"),
    Target("frame", "fuzz_frame.c", tuple(GUEST),
           "frames the guest builds (link.c, frame.c) read back"),
)}


def _obj(src: str) -> Path:
    return OUT / "obj" / (src.replace("/", "__") + ".o")


def _headers_mtime() -> float:
    """The newest header anything includes: a change rebuilds every object."""
    newest = 0.0
    for d in INCLUDES + ["tracer/arch/sparc64"]:
        for h in (REPO / d).glob("*.h"):
            newest = max(newest, h.stat().st_mtime)
    for h in (ROOM / "host").glob("*/*.h"):
        newest = max(newest, h.stat().st_mtime)
    return newest


# What no object is instrumented for: globals ASan must not pad, and the
# whole-table walks libFuzzer's coverage callbacks made most of an
# execution (each file says why).
LISTS = [f"-fsanitize-ignorelist={ROOM / 'ignorelist.txt'}",
         f"-fsanitize-coverage-ignorelist={ROOM / 'coverage_ignore.txt'}"]


def _compile(srcs: list[str]) -> None:
    flags = ["-std=gnu11", "-g", "-O1", "-fsanitize=fuzzer-no-link", *SAN, *LISTS,
             *(f"-I{REPO / d}" for d in INCLUDES)]
    hdr = max(_headers_mtime(), *((ROOM / f).stat().st_mtime for f in
                                  ("ignorelist.txt", "coverage_ignore.txt")))
    todo = []
    for s in srcs:
        o = _obj(s)
        if o.exists() and o.stat().st_mtime >= max(hdr, (REPO / s).stat().st_mtime):
            continue
        todo.append((s, o))
    jobs = max(1, min(len(todo), os.cpu_count() or 1))
    running = []
    for s, o in todo:
        o.parent.mkdir(parents=True, exist_ok=True)
        cmd = [CLANG, *flags, *FILE_FLAGS.get(s, []), "-c", "-o", str(o), str(REPO / s)]
        running.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, text=True)))
        if len(running) >= jobs:
            _reap(running.pop(0))
    while running:
        _reap(running.pop(0))


def _reap(job) -> None:
    cmd, proc = job
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise BuildError(f"compiling a fuzz target's object failed: {' '.join(cmd)}",
                         tail=out.strip())


def build(names=None) -> dict[str, Path]:
    """Build the targets (all by default); returns their executables."""
    if not shutil.which(CLANG):
        raise BuildError(f"{CLANG} is not installed (make deps: ci/packages.txt "
                         "lists clang-14 and libclang-rt-14-dev)")
    names = list(names or TARGETS)
    srcs = sorted({s for n in names for s in TARGETS[n].sources} |
                  {f"tests/fuzz/{TARGETS[n].main}" for n in names})
    _compile(srcs)
    exes = {}
    for n in names:
        t = TARGETS[n]
        objs = [_obj(s) for s in (*t.sources, f"tests/fuzz/{t.main}")]
        exe = OUT / n / n
        exe.parent.mkdir(parents=True, exist_ok=True)
        if not exe.exists() or any(o.stat().st_mtime > exe.stat().st_mtime for o in objs):
            cmd = [CLANG, "-fsanitize=fuzzer", *SAN, f"-Wl,-T,{ROOM / 'host.ld'}",
                   *t.link, "-o", str(exe), *map(str, objs)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise BuildError(f"linking the fuzz target {n} failed: {' '.join(cmd)}",
                                 tail=(proc.stdout + proc.stderr).strip())
        exes[n] = exe
    return exes


# ---- the dictionary: words the C reads, from the C's own tables ----

_ROW = re.compile(r'^\s*\{\s*"([a-z][a-z0-9_-]*)",', re.M)
_COMMAND = re.compile(r'COMMAND\(\w+\)\s*=\s*\{\s*"([a-z]+)"')


def command_words() -> list[str]:
    """Every command and subcommand word: command.c's table, COMMAND()
    entries and the subcommand tables (commands_*.c), plus wire.h's words
    (probe kinds, channels, watch types) and the mechanism."""
    words = set()
    for f in ["guest-kernel/core/command.c", *sorted(
            str(p.relative_to(REPO)) for p in (REPO / "tracer/core").glob("*.c")
            if not p.name.startswith("selftest"))]:
        text = (REPO / f).read_text()
        words |= set(_ROW.findall(text)) | set(_COMMAND.findall(text))
    for table in ("WIRE_PROBE_KINDS", "WIRE_CHANNELS", "WIRE_WATCH_TYPES",
                  "WIRE_ITRACE_METHODS"):
        try:
            entries = WIRE.table(table)
        except Exception:       # a table another version of wire.h lacks
            continue
        for e in entries:
            words |= {w for w in (*e.more, e.meaning) if re.fullmatch(r"[a-z][a-z0-9_]*", w)}
    return sorted(words | {"all", "none", "on", "off", "host"})


def opcodes() -> list[int]:
    return sorted(e.value for e in WIRE.table("WIRE_RPN_OPS"))


def dictionary() -> Path:
    """build/host/fuzz/dict: libFuzzer's dictionary, one quoted token a line."""
    OUT.mkdir(parents=True, exist_ok=True)
    lines = [f'"{w}"' for w in command_words()]
    lines += [f'"{w} "' for w in command_words()]
    lines += ['"0x10000100"', '"0x10003000"', '"0x10004000"', '"0x20000000"', '"\\x0a"']
    lines += [f'"\\x{op:02x}"' for op in opcodes()]
    d = OUT / "dict"
    d.write_text("\n".join(lines) + "\n")
    return d


# ---- seeds ----

def seeds(name: str) -> Path:
    """build/host/fuzz/<name>/seeds: tests/fuzz/seeds/<name>/, the kept
    regressions, and for the program targets every bench/programs/*.rpn
    assembled for sparc64 (the host build's registers)."""
    d = OUT / name / "seeds"
    d.mkdir(parents=True, exist_ok=True)
    for src in (ROOM / "seeds" / name, ROOM / "regressions" / name):
        if src.is_dir():
            for f in src.iterdir():
                if f.is_file() and f.name != "README":
                    shutil.copyfile(f, d / f.name)
    if name in ("validate", "run", "args"):
        from ..program import asm
        from .. import arches
        arch = arches.get("sparc64")
        for rpn in sorted((REPO / "bench" / "programs").glob("*.rpn")):
            if rpn.name.endswith(".i386.rpn"):
                continue
            img = asm.assemble(rpn.read_text(), arch, str(rpn)).image("<")
            if name == "validate":
                (d / rpn.stem).write_bytes(img)
            elif name == "run":
                (d / rpn.stem).write_bytes(bytes(range(8)) + b"\x01" + img)
            else:
                (d / rpn.stem).write_bytes(img)
    return d


# ---- running ----

@dataclass
class Campaign:
    target: str
    execs: int = 0
    seconds: float = 0.0
    cov: int = 0
    ft: int = 0
    corpus: int = 0
    crashes: list = field(default_factory=list)
    returncode: int = 0
    tail: str = ""

    @property
    def rate(self) -> float:
        return self.execs / self.seconds if self.seconds else 0.0


_STAT = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")
_DONE = re.compile(r"Done (\d+) runs in (\d+) second")


def run(name: str, seconds: int = 0, runs: int = 0, exe: Path | None = None,
        jobs: int = 1) -> Campaign:
    """One campaign of target name: for seconds, or runs executions."""
    exe = exe or build([name])[name]
    corpus = OUT / name / "corpus"
    crashes = exe.parent / "crashes"        # a broken build's apart
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    cmd = [str(exe), f"-dict={dictionary()}", f"-artifact_prefix={crashes}/",
           "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
           "-max_len=4096"]
    if seconds:
        cmd.append(f"-max_total_time={seconds}")
    if runs:
        cmd.append(f"-runs={runs}")
    cmd += [str(corpus), str(seeds(name))]
    env = dict(os.environ, ASAN_OPTIONS="allow_user_segv_handler=1:detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          errors="replace")
    c = Campaign(name, returncode=proc.returncode)
    for m in _STAT.finditer(proc.stderr):
        c.execs, c.cov, c.ft, c.corpus = map(int, m.groups())
    m = _DONE.search(proc.stderr)
    if m:
        c.execs, c.seconds = int(m.group(1)), float(m.group(2))
    m = re.search(r"stat::number_of_executed_units: (\d+)", proc.stderr)
    if m:
        c.execs = int(m.group(1))
    # The inputs this campaign wrote (named by their hash: one found
    # before has the same name, so the directory's new files would miss it).
    c.crashes = sorted({Path(p) for p in re.findall(r"Test unit written to (\S+)",
                                                     proc.stderr)})
    c.tail = "\n".join(proc.stderr.splitlines()[-40:])
    return c


def replay(name: str, paths, exe: Path | None = None) -> list[tuple]:
    """Run the target once on each input: (path, passed, what it said, stack
    frames left out)."""
    exe = exe or build([name])[name]
    env = dict(os.environ, ASAN_OPTIONS="allow_user_segv_handler=1:detect_leaks=0")
    out = []
    for p in paths:
        proc = subprocess.run([str(exe), str(p)], capture_output=True, text=True,
                              env=env, errors="replace")
        said = [l for l in proc.stderr.splitlines() if not l.startswith("    #")]
        out.append((p, proc.returncode == 0, "\n".join(said[-40:])))
    return out


def regressions(name: str) -> list[Path]:
    d = ROOM / "regressions" / name
    return sorted(p for p in d.iterdir() if p.is_file() and p.name != "README") \
        if d.is_dir() else []


def build_broken(name: str, source: str, old: str, new: str) -> Path:
    """Target name built with one guest file changed (old -> new once), for
    the tests that show a target catches a broken guest: its executable."""
    text = (REPO / source).read_text()
    if old not in text:
        raise BuildError(f"{source} no longer holds {old!r}: the broken "
                         "variant needs a new edit")
    d = OUT / "broken" / name
    d.mkdir(parents=True, exist_ok=True)
    mutated = d / Path(source).name
    mutated.write_text(text.replace(old, new, 1))
    t = TARGETS[name]
    build([name])
    objs = [_obj(s) for s in (*t.sources, f"tests/fuzz/{t.main}") if s != source]
    obj = d / (Path(source).stem + ".o")
    flags = ["-std=gnu11", "-g", "-O1", "-fsanitize=fuzzer-no-link", *SAN, *LISTS,
             f"-I{REPO / Path(source).parent}",
             *(f"-I{REPO / i}" for i in INCLUDES), *FILE_FLAGS.get(source, [])]
    exe = d / f"{name}-broken"
    for cmd in ([CLANG, *flags, "-c", "-o", str(obj), str(mutated)],
                [CLANG, "-fsanitize=fuzzer", *SAN, f"-Wl,-T,{ROOM / 'host.ld'}",
                 *t.link, "-o", str(exe), *map(str, objs), str(obj)]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"building the broken {name} failed: {' '.join(cmd)}",
                             tail=(proc.stdout + proc.stderr).strip())
    return exe


def tool(name: str, main: str, sources) -> Path:
    """A plain host program (no libFuzzer) over the same objects, with the
    sanitizers: e.g. tests/fuzz/validator_cli.c, the validator as a filter."""
    srcs = [*sources, main]
    _compile(srcs)
    exe = OUT / "tools" / name
    exe.parent.mkdir(parents=True, exist_ok=True)
    objs = [_obj(s) for s in srcs]
    if not exe.exists() or any(o.stat().st_mtime > exe.stat().st_mtime for o in objs):
        cmd = [CLANG, *SAN, "-fsanitize=fuzzer-no-link", "-o", str(exe), *map(str, objs)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"linking the host tool {name} failed: {' '.join(cmd)}",
                             tail=(proc.stdout + proc.stderr).strip())
    return exe


def validator() -> Path:
    return tool("validator", "tests/fuzz/validator_cli.c", TARGETS["validate"].sources)
