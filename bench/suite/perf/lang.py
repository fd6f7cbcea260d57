"""D against hand-written RPN: what compiling costs per firing, and what a
thread-local costs.

One run of the dprobes workload (bench/suite/perf/dprobes.py) under the
arch's first mechanism, its program slots holding four programs instead
of DProbes' handlers, so each is measured on the same probe of the same
loop, against the same repetition's base loop:

  hand      RPN written by hand: `cpu, jnz, timens, thread, quantize, abort`
  compiled  the D one-liner that asks the same, `/cpu == 0/ { @[tid] =
            quantize(timestamp); }`, as bench/lang/ compiles it
  self      `@ = sum(timestamp - self->ts); self->ts = timestamp;`
  global    the same with a global: what self-> adds is self - global

Figures: lang_hand, lang_compiled, lang_self, lang_global (guest cycles per
firing over the unprobed loop), the ratio compiled / hand per repetition
(target ≤ 1.2), and lang_self_storage (self - global, cycles per firing:
two thread-local accesses).
"""

from __future__ import annotations

from ...guest.qemu import Guest
from ...lang import runner
from ...program import asm, load
from ...trace.session import TraceError
from .core import Bench

HAND = "cpu\njnz out\ntimens\nthread\nquantize @q, 1\nout: abort\n"
COMPILED = "fbt::fib:entry /cpu == 0/ { @[tid] = quantize(timestamp); }"
SELF = "fbt::fib:entry { @ = sum(timestamp - self->ts); self->ts = timestamp; }"
GLOBAL = "fbt::fib:entry { @ = sum(timestamp - ts); ts = timestamp; }"
# The dprobes workload's program parameters, each given one of ours.
# Loops per measurement, the fastest kept: the four differ by a few
# instructions, less than a timer tick's noise in one try.
TRIES = 9
SLOTS = {"abort": "hand", "push": "compiled", "ops8": "self", "ops32": "global"}


def programs(arch) -> dict:
    m = arch.default_mechanism
    out = {"hand": asm.assemble(HAND, arch, "hand.rpn")}
    for name, text in (("compiled", COMPILED), ("self", SELF), ("global", GLOBAL)):
        out[name] = runner.compile_text(text, arch, m).groups[0].program
    return out


def lang(b: Bench, g: Guest) -> None:
    arch = b.arch
    mech = arch.default_mechanism
    progs = programs(arch)
    g.command("program clear")
    params = []
    for slot, (param, name) in enumerate(SLOTS.items(), start=1):
        load.load(g, progs[name], slot)
        params.append(f"{param}={slot}")
    bit = 1 << arch.mechanisms.index(mech)
    per: dict[str, list] = {n: [] for n in SLOTS.values()}
    # One run thrown away: the first program measured would otherwise pay
    # for QEMU translating the interpreter's paths (i386: ~1.5x).
    g.command(f"run dprobes n={b.sizes.dp_n} base={b.sizes.dp_base} "
              f"mechanisms={bit} tries=1 " + " ".join(params))
    for i in range(b.reps):
        r = g.command(f"run dprobes n={b.sizes.dp_n} base={b.sizes.dp_base} "
                      f"mechanisms={bit} tries={TRIES} " + " ".join(params))
        got, fired = {}, {}
        for line in r.text:
            w = line.split()
            if w[:1] == ["dp"] and len(w) == 5:
                got[w[1]] = int(w[2]) / int(w[3])
                fired[w[1]] = int(w[4])
        if not r.ok or "base" not in got:
            raise TraceError(f"dprobes (lang) failed: {r.message}: {r.text[-5:]}")
        for param, name in SLOTS.items():
            key = f"{mech}.{param}"
            fpi = fired.get(key, 0) / b.sizes.dp_n
            per[name].append((got[key] - got["base"]) / fpi if key in got and fpi
                             else None)
        b.say(f"  lang {i + 1}/{b.reps}: " + ", ".join(
            f"{n} {v[-1]:,.0f}" for n, v in per.items() if v[-1] is not None))
    g.command("program clear")
    for name, vals in per.items():
        b.put(f"lang_{name}", vals, "guest cycles per probe firing",
              what=f"{mech}: {name} program, overhead per firing")
    pairs = list(zip(per["compiled"], per["hand"]))
    b.put("lang_compiled_over_hand", [c / h for c, h in pairs if c and h], "ratio",
          target="compiled_over_hand",
          what="a compiled D one-liner / the same program in RPN by hand, per firing")
    b.put("lang_self_storage", [s - q for s, q in zip(per["self"], per["global"])
                                if s is not None and q is not None],
          "guest cycles per probe firing",
          what="self-> storage: a thread-local read and write, against a global's")
