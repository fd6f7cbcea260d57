"""The live guest under random and mutated input (`bench fuzz-guest`): one
booted guest gets COUNT command lines — random bytes and frames, lines
mutated from tests/fuzz/seeds/command/ and from the tracer's own words (the
libFuzzer dictionary, bench/check/libfuzz.py), `probe add` on the workloads' real
functions and instructions, and probe programs: bench/programs/ assembled,
with bits flipped or bytes changed, sent as `program load` + `program
check` and attached to probes — then fires what is armed (`run fib n=5`)
every so often, so that accepted programs run in the trap path.

Never sent: what stops or stalls the guest by design (exit, hang, crash,
selftest, start, wait, and run other than that fib). Checked: every line
answered by its own REPLY (Conversation.command), the guest alive
throughout; at the end `probe list` holds only probes whose `probe add`
was answered OK, and each enabled one was named by an enable answered OK
(or `enable all`); then `probe clear`, `program clear` and `run fib
n=15` answered OK, with the workload's own result right — a trap left in
fib's text with no probe behind it would crash the guest there.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field

from .. import arches
from ..check import libfuzz
from ..errors import BenchError
from ..guest import build
from ..guest.backend import open_guest
from ..program import asm
from ..trace.image import load_image
from ..wire.frames import WIRE, encode

NEVER = {"exit", "hang", "crash", "selftest", "start", "wait", "run", "timer"}
MAX_LINE = WIRE.const("WIRE_MAX_COMMAND")


@dataclass
class Stress:
    arch: str
    sent: int = 0
    answered: dict = field(default_factory=dict)      # status name -> count
    fired: int = 0
    programs_sent: int = 0
    programs_accepted: int = 0
    problems: list = field(default_factory=list)
    seconds: float = 0.0


def _first_word(line: str) -> str:
    words = re.split(r"[ \t]+", line.strip(" \t"))
    return words[0] if words else ""


class _Lines:
    """The line generator: random, mutated, structured."""

    def __init__(self, arch: arches.Arch, rng: random.Random):
        self.rng = rng
        img = load_image(arch.elf())
        funcs = img.workload_functions() or list(img.functions.values())
        self.addrs = []
        for f in funcs[:40]:
            self.addrs += [f.addr] + [i.addr for i in f.insns[:6]] + [f.addr + 1]
        self.words = libfuzz.command_words()
        self.seeds = [l for p in sorted((libfuzz.ROOM / "seeds" / "command").iterdir())
                      for l in p.read_text().splitlines() if l]
        self.programs = []
        for rpn in sorted(libfuzz.REPO.joinpath("bench", "programs").glob("*.rpn")):
            if rpn.name.count(".") == 2 and not rpn.name.endswith(f".{arch.name}.rpn"):
                continue
            self.programs.append(asm.assemble(rpn.read_text(), arch, str(rpn)))
        self.order = "<"            # the guest's, from its HELLO (run())

    def number(self) -> str:
        r = self.rng
        return r.choice([str(r.randrange(8)), str(r.randrange(4097)),
                         hex(r.choice(self.addrs) + r.choice([0, 0, 0, 1, 2, 4])),
                         str(r.getrandbits(r.choice([8, 16, 32, 64, 65]))), "all", "none",
                         "-1", "0x", r.choice(["on", "off", "record", "null"])])

    def structured(self) -> list[str]:
        r = self.rng
        pid = r.randrange(1, 40)
        kind = r.choice(["entry", "return", "branch", "insn", "bogus"])
        choices = [
            [f"probe add {pid} {hex(r.choice(self.addrs))} {kind}"
             + (f" {r.randrange(8)}" if r.random() < 0.3 else "")],
            [f"probe {r.choice(['enable', 'disable'])} "
             + " ".join(str(r.randrange(1, 40)) for _ in range(r.randrange(1, 4)))],
            [f"probe {r.choice(['enable', 'disable'])} all"],
            [f"probe {r.choice(['action', 'pass', 'maxhits', 'program'])} {pid} {self.number()}"],
            [f"watch add {pid} {r.choice(['w', 'rw', 'r', 'x', 'io'])} "
             f"{self.number()} {r.choice([1, 2, 4, 8, 3])}"],
            [f"watch remove {pid}"],
            [f"trace {r.choice(['stats', 'flush', 'aggregations', 'kick on', 'kick off'])}"],
            ["probe list"], ["program list"], ["watch list"],
        ]
        return r.choice(choices)

    def program(self) -> list[str]:
        """A program mutated from an example, loaded, checked, attached."""
        r = self.rng
        p = bytearray(r.choice(self.programs).image(self.order))
        for _ in range(r.choice([0, 1, 1, 2, 4])):
            if r.random() < 0.7:
                i = r.randrange(len(p) * 8)
                p[i // 8] ^= 1 << (i % 8)
            else:
                p[r.randrange(len(p))] = r.randrange(256)
        slot = r.randrange(16)
        hexs = p.hex()
        lines = []
        chunk = 96
        for off in range(0, len(hexs), chunk):
            lines.append(f"program load {slot} {off // 2} {hexs[off:off + chunk]}")
        lines.append(f"program check {slot} {len(p)}")
        lines.append(f"probe program {r.randrange(1, 40)} {slot}")
        return lines

    def mutated(self) -> str:
        r = self.rng
        line = r.choice(self.seeds + [" ".join(r.choice(self.words) for _ in range(r.randrange(1, 6)))])
        b = bytearray(line.encode())
        for _ in range(r.randrange(1, 5)):
            op = r.randrange(4)
            if op == 0 and b:
                b[r.randrange(len(b))] = r.randrange(1, 256)
            elif op == 1:
                b[r.randrange(len(b) + 1):0] = r.choice(self.words).encode() + b" "
            elif op == 2 and b:
                del b[r.randrange(len(b))]
            else:
                b[r.randrange(len(b) + 1):0] = self.number().encode()
        return bytes(b).replace(b"\n", b" ").decode("utf-8", "surrogateescape")

    def random_bytes(self) -> str:
        """Random bytes, or a frame as the guest sends them (the host never
        sends frames: the guest must take one for a line and refuse it)."""
        r = self.rng
        n = r.choice([0, 1, 5, 40, MAX_LINE, MAX_LINE + 1, 400])
        b = bytes(r.randrange(1, 256) for _ in range(n))
        if r.random() < 0.3:
            b = encode(r.randrange(256), r.getrandbits(32), b[:r.randrange(64)])
        b = b.replace(b"\n", b"\r")
        return b.decode("utf-8", "surrogateescape")

    def batch(self) -> list[str]:
        k = self.rng.random()
        if k < 0.25:
            return self.structured()
        if k < 0.45:
            return self.program()
        if k < 0.85:
            return [self.mutated()]
        return [self.random_bytes()]


def check_listing(text, added_ok, enabled_ok, enable_all) -> list[str]:
    """`probe list`'s lines against what was accepted: a probe listed whose
    add was refused, or enabled by no accepted enable, is a problem."""
    problems = []
    for l in text:
        m = re.match(r"probe (\d+) 0x[0-9a-f]+ \S+ (\S+)", l)
        if not m:
            continue
        pid, state = int(m.group(1)), m.group(2)
        if pid not in added_ok:
            problems.append(f"probe {pid} listed but its add was refused: {l}")
        if state == "enabled" and pid not in enabled_ok and not enable_all:
            problems.append(f"probe {pid} enabled by no accepted enable: {l}")
    return problems


def guest_number(word: str):
    """A word read as the guest's parse_u64 reads it (string.c): hex after
    0x or 0X, else decimal, leading zeros and all, ASCII digits only; None
    where the guest refuses it. Python's int(w, 0) refuses "01", and
    str.isdigit() passes digits such as "\u00b2" that int() then refuses."""
    m = re.fullmatch(r"0[xX]([0-9a-fA-F]+)|([0-9]+)", word)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1) else int(m.group(2), 10)


def _ids(words) -> set:
    return {n for n in map(guest_number, words) if n is not None}


def _allowed(line: str) -> bool:
    return _first_word(line) not in NEVER


def run(arch_name: str, count: int, seed: int = 0, smp: int = 1, echo=None) -> Stress:
    arch = arches.get(arch_name)
    build.ensure_image(arch)
    rng = random.Random(seed)
    gen = _Lines(arch, rng)
    st = Stress(arch_name)
    added_ok: set[int] = set()
    enabled_ok: set[int] = set()
    enable_all = False
    t0 = time.monotonic()
    with open_guest(arch, label=f"fuzz-guest-{arch_name}", smp=smp,
                    command_timeout=30) as g:
        gen.order = g.byte_order
        while st.sent < count:
            lines = gen.batch()
            if rng.random() < 0.02:
                lines = lines + ["run fib n=5"]
            for line in lines:
                if st.sent >= count:
                    break
                if not _allowed(line) and line != "run fib n=5":
                    continue
                st.sent += 1
                try:
                    r = g.command(line)
                except BenchError as e:
                    st.problems.append(f"command {st.sent} {line!r}: {e}")
                    st.seconds = time.monotonic() - t0
                    return st
                st.answered[r.status_name] = st.answered.get(r.status_name, 0) + 1
                w = re.split(r"[ \t]+", line.strip(" \t"))
                if line == "run fib n=5":
                    st.fired += 1
                    if not r.ok:
                        st.problems.append(f"run fib n=5 with the probes armed: "
                                           f"{r.status_name}: {r.message}")
                if w[:2] == ["program", "check"]:
                    st.programs_sent += 1
                    st.programs_accepted += r.ok
                if r.ok and w[:2] in (["probe", "add"], ["watch", "add"]):
                    added_ok |= _ids(w[2:3])
                if w[:2] == ["probe", "enable"]:
                    if w[2:] == ["all"]:
                        enable_all = True
                    elif r.ok:
                        enabled_ok |= _ids(w[2:])
                if echo and st.sent % 1000 == 0:
                    echo(f"fuzz-guest {arch_name}: {st.sent} sent, {st.answered}")
        # The end: what is armed was accepted; the text is whole.
        st.problems += check_listing(g.command("probe list").text, added_ok,
                                     enabled_ok, enable_all)
        for line in ("probe clear", "watch clear", "program clear", "run fib n=15",
                     "echo alive"):
            r = g.command(line)
            if not r.ok:
                st.problems.append(f"{line!r} at the end: {r.status_name}: {r.message}")
        g.exit(0)
    st.seconds = time.monotonic() - t0
    return st
