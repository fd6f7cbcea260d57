"""trapbench's gdb extension: tracer state of a stopped guest, decoded.

    (gdb) source bench/debug/gdbext.py    (`make debug` does this)
    (gdb) tb probes                       the probe table: site, kind, state,
                                          mechanism, hits
    (gdb) tb buffer [CPU]                 a CPU's trace ring: counters and
                                          its records, decoded
    (gdb) tb frame [EXPR]                 the trap frame (EXPR, or the `tf`
                                          of the nearest frame that has one)
    (gdb) tb returns                      the return addresses behind return
                                          trampolines: every thread's shadow
                                          stack (i386 opt, opt_return.c)

Theory of operation. gdb runs this file in its embedded Python (Debian's
python3, so the repo's bench package imports: the wire format comes from
include/wire.h through bench/wire/, never a second copy). Guest
structures are read through gdb with their DWARF types — tracer_probes[]
(tracer/include/tracer.h), the per-CPU rings `tcpu` (tracer/core/buffer.c),
struct trapframe (guest-kernel/arch/<arch>/trapframe.h) — so a field added
or moved in C needs no change here. Names come from the guest's own
tables: probe states from enum probe_state, mechanisms from tarch_mechanisms[],
trap names from the kernel's vector_names[] (i386) or tt_names[]
(sparc64). Only the record format is decoded on the host side, with
bench/wire/records.py's structs and slot names (the same code that decodes
EVENTS frames).
The guest is read through bench/debug/gdbread.py; this file holds the commands.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gdb  # noqa: F401  (only inside gdb)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import arches  # noqa: E402
from bench.debug.gdbread import (c_string, fetched, guest_var, has_sym,  # noqa: E402
                                 probe_table, read_guest, ring_records, rings,
                                 subbuf_records, tlb_free, where)
from bench.trace.image import load_image  # noqa: E402
from bench.wire.records import (BRANCH, BRANCH_BITS, DROPS, ENTRY,  # noqa: E402
                                K_BRANCH, K_DROPS, K_ENTRY, K_RETURN,
                                KIND_NAMES, RETURN, Event)


class TbPrefix(gdb.Command):
    """trapbench: tracer state of the stopped guest (tb probes | buffer | frame | returns)."""

    def __init__(self):
        super().__init__("tb", gdb.COMMAND_USER, prefix=True)


class TbProbes(gdb.Command):
    """List the guest's probes: id, site, kind, state, mechanism, hits.

Usage: tb probes"""

    def __init__(self):
        super().__init__("tb probes", gdb.COMMAND_USER)

    @tlb_free
    def invoke(self, arg, from_tty):
        probes = probe_table()
        print(f"{'id':>4}  {'site':<28} {'kind':<7} {'state':<9} {'mechanism':<10} "
              f"{'nargs':>5} {'hits':>10}")
        for p in probes:
            site = f"{p['addr']:#x} <{where(p['addr'])}>"
            print(f"{p['id']:>4}  {site:<28} {p['kind']:<7} {p['state']:<9} "
                  f"{p['mechanism']:<10} {p['nargs']:>5} {p['hits']:>10}")
        enabled = sum(p["state"] == "enabled" for p in probes)
        print(f"{len(probes)} probes, {enabled} enabled, "
              f"{sum(p['hits'] for p in probes)} hits")


def _image():
    """The loaded ELF as the harness reads it (signatures from its DWARF),
    or None if gdb's file is not one the harness reads."""
    try:
        return load_image(Path(gdb.current_progspace().filename))
    except Exception:                  # noqa: BLE001 — no types, raw words
        return None


def _format_record(ev: Event, names: dict[int, str], image=None) -> str:
    """One record as the text trace prints it: arguments and values by their
    C types when the ELF has DWARF (bench/trace/types.py), else raw."""
    kind = KIND_NAMES.get(ev.kind, str(ev.kind)).lower()
    w = ev.words
    fn = names.get(ev.probe, f"probe{ev.probe}")
    sig = image.signature_of(fn) if image is not None else None
    if ev.kind == K_ENTRY and len(w) > ENTRY.SP:
        args = (sig.format_args(w[ENTRY.ARG0:], image.word_bytes) if sig else
                ", ".join(str(x) for x in w[ENTRY.ARG0:]))
        what = f"-> {fn}({args}) sp={w[ENTRY.SP]:#x}"
    elif ev.kind == K_RETURN and len(w) > RETURN.SP:
        if sig:
            value = sig.format_return(w[RETURN.VALUE:], image.word_bytes)
        else:
            value = f" = {w[RETURN.VALUE] if len(w) > RETURN.VALUE else '?'}"
        what = f"<- {fn}{value} sp={w[RETURN.SP]:#x}"
    elif ev.kind == K_BRANCH and len(w) > BRANCH.FLAGS:
        f = w[BRANCH.FLAGS]
        how = (("taken" if f & BRANCH_BITS.TAKEN else "not taken")
               + (", annulled" if f & BRANCH_BITS.ANNULLED else ""))
        what = f"~ {where(w[BRANCH.PC])} -> {where(w[BRANCH.TARGET])} {how}"
    elif ev.kind == K_DROPS and len(w) > DROPS.THREADS:
        what = (f"!! {w[DROPS.COUNT]} records lost before this point (threads "
                f"mask {w[DROPS.THREADS]:#x})")
    else:
        what = " ".join(f"{x:#x}" for x in w)
    return f"t{ev.thread} probe {ev.probe} {kind} cycles={ev.cycles} {what}"


class TbBuffer(gdb.Command):
    """Show a CPU's trace ring decoded: counters, then each record it holds.

Usage: tb buffer [CPU]     (default: every CPU with a ring)"""

    def __init__(self):
        super().__init__("tb buffer", gdb.COMMAND_USER)

    @tlb_free
    def invoke(self, arg, from_tty):
        arg = arg.strip()
        all_rings = rings()
        if arg:
            try:
                want = int(arg, 0)
            except ValueError:
                raise gdb.GdbError(f"tb buffer: {arg!r} is not a CPU number") from None
            all_rings = [(c, t) for c, t in all_rings if c == want]
            if not all_rings:
                raise gdb.GdbError(f"tb buffer: cpu {want} has no trace ring")
        names = {p["id"]: where(p["addr"]).split("+")[0] for p in probe_table()}
        image = _image()
        for cpu, t in all_rings:
            counters = (f"fired={int(guest_var('tracer_fired')[cpu]['n'])} "
                        f"recorded={int(t['recorded'])} "
                        f"dropped={int(t['dropped'])} sent={int(t['sent'])}")
            size = int(t["size"])
            if bool(t["sb"]["on"]):
                sb = t["sb"]
                ctl = fetched(sb["ctl"].dereference())
                print(f"cpu{cpu}: ring {size} bytes at {int(t['data']):#x} as "
                      f"{int(sb['nsub'])} sub-buffers of {int(sb['subbuf'])} bytes "
                      f"(shm), write={int(sb['w'])} consumed={int(ctl['consumed'])} "
                      f"discarded={int(ctl['discarded'])}; {counters}")
                records, lines = subbuf_records(t)
                print("\n".join(lines))
                note = ""
            else:
                head, tail = int(t["head"]), int(t["tail"])
                print(f"cpu{cpu}: ring {size} bytes at {int(t['data']):#x}, "
                      f"head={head:#x} tail={tail:#x} pending="
                      f"{(head - tail) & 0xFFFFFFFF} bytes; {counters}")
                records, note = ring_records(t)
            for off, pending, ev in records:
                print(f"  {off:#08x} {'pending' if pending else 'sent   '} "
                      + _format_record(ev, names, image))
            npend = sum(1 for r in records if r[1])
            print(f"  {len(records)} records: {npend} pending, "
                  f"{len(records) - npend} sent")
            if note:
                print(f"  note: {note}")


def _find_trapframe() -> gdb.Value:
    frame = gdb.selected_frame()
    while frame is not None:
        try:
            tf = frame.read_var("tf")
            t = tf.type.strip_typedefs()
            if t.code == gdb.TYPE_CODE_PTR and \
                    t.target().strip_typedefs().tag == "trapframe":
                if int(tf):
                    return tf
        except (ValueError, gdb.error):
            pass
        frame = frame.older()
    raise gdb.GdbError("tb frame: no frame here or above has a `tf` "
                       "(struct trapframe *); stop in the trap path "
                       f"(e.g. `break {_fire_path()}`) or give an expression")


def _fire_path() -> str:
    """The loaded guest's fire path (arches.Arch.fire_path)."""
    for a in arches.ARCHES.values():
        name = a.fire_path
        if name and (gdb.lookup_global_symbol(name) or gdb.lookup_symbol(name)[0]):
            return name
    return "the fire path"


def _vector_mnemonic(v: int) -> str:
    """The i386 kernel's own name of vector v (vector_names[]), or ''."""
    if not has_sym("vector_names"):
        return ""
    names = guest_var("vector_names")
    lo, hi = names.type.range()
    if lo <= v <= hi and int(names[v]["mnemonic"]):
        return c_string(names[v]["mnemonic"])
    return ""


def _trap_name(tf: gdb.Value) -> str:
    fields = {f.name for f in tf.type.fields()}
    if "vector" in fields and has_sym("vector_names"):
        v = int(tf["vector"])
        names = fetched(guest_var("vector_names"))
        lo, hi = names.type.range()
        if lo <= v <= hi and int(names[v]["mnemonic"]):
            return f"vector {v} {c_string(names[v]['mnemonic'])} " \
                   f"({c_string(names[v]['description'])})"
        return f"vector {v}"
    if "tt" in fields and has_sym("tt_names"):
        tt = int(tf["tt"])
        names = fetched(guest_var("tt_names"))
        lo, hi = names.type.range()
        for i in range(lo, hi + 1):
            e = names[i]
            if int(e["first"]) <= tt <= int(e["last"]):
                return f"tt {tt:#x} {c_string(e['name'])}"
        return f"tt {tt:#x}"
    return ""


def _probe_at(addr: int) -> dict | None:
    for p in probe_table():
        if p["addr"] == addr:
            return p
    return None


class TbFrame(gdb.Command):
    """Show the current trap frame decoded: registers, trap, the interrupted
PC and the probe it belongs to.

Usage: tb frame [EXPR]   (EXPR: a struct trapframe *; default: the `tf` of
                          the selected frame or the nearest caller with one)"""

    def __init__(self):
        super().__init__("tb frame", gdb.COMMAND_USER)

    @tlb_free
    def invoke(self, arg, from_tty):
        tf = gdb.parse_and_eval(arg) if arg.strip() else _find_trapframe()
        t = tf.type.strip_typedefs()
        if t.code != gdb.TYPE_CODE_PTR or t.target().strip_typedefs().tag != "trapframe":
            raise gdb.GdbError(f"tb frame: {arg!r} is a {tf.type}, not a "
                               "struct trapframe *")
        frame = tf.dereference()
        frame.fetch_lazy()
        print(f"trap frame at {int(tf):#x} ({frame.type.sizeof} bytes): "
              + _trap_name(frame))
        fields = [f.name for f in frame.type.fields()]
        for name in fields:
            v = frame[name]
            vt = v.type.strip_typedefs()
            if vt.code == gdb.TYPE_CODE_ARRAY:
                lo, hi = vt.range()
                vals = " ".join(f"{int(v[i]):#x}" for i in range(lo, hi + 1))
                print(f"  {name:<10} {vals}")
            else:
                x = int(v)
                extra = ""
                if name in ("eip", "tpc", "tnpc"):
                    extra = f" <{where(x)}>"
                print(f"  {name:<10} {x:#x}{extra}")
        if "eip" in fields:
            self._i386(tf, frame)
        elif "tpc" in fields:
            self._sparc64(frame)

    @staticmethod
    def _report_probe(site: int) -> None:
        p = _probe_at(site)
        if p:
            print(f"  probe {p['id']}: {p['kind']} of {where(p['addr'])}, {p['state']}, "
                  f"mechanism {p['mechanism']}, {p['hits']} hits")
        else:
            print(f"  no probe at {site:#x} <{where(site)}>")

    def _i386(self, tf, frame) -> None:
        # A ring-0 trap pushes no ESP: the interrupted one is just past eflags.
        esp = int(tf) + frame.type.sizeof
        eflags = int(frame["eflags"])
        bits = [n for b, n in ((0, "CF"), (2, "PF"), (4, "AF"), (6, "ZF"), (7, "SF"),
                               (8, "TF"), (9, "IF"), (10, "DF"), (11, "OF"))
                if eflags >> b & 1]
        print(f"  interrupted esp {esp:#x}, eflags [{' '.join(bits)}]")
        # #BP leaves EIP past the int3, #UD at the ud2 (the kernel's names).
        mnemonic = _vector_mnemonic(int(frame["vector"]))
        if mnemonic in ("#BP", "#UD"):
            site = int(frame["eip"]) - (1 if mnemonic == "#BP" else 0)
            print(f"  site {site:#x} <{where(site)}> "
                  f"({'int3' if mnemonic == '#BP' else 'ud2'})")
            self._report_probe(site)

    def _sparc64(self, frame) -> None:
        ts = int(frame["tstate"])
        ccr, asi, pstate, cwp = ts >> 32 & 0xFF, ts >> 24 & 0xFF, ts >> 8 & 0xFFF, ts & 0x1F
        icc, xcc = ccr & 0xF, ccr >> 4
        flags = lambda c: "".join(n for b, n in ((3, "N"), (2, "Z"), (1, "V"), (0, "C"))
                                  if c >> b & 1) or "-"
        print(f"  tstate: ccr {ccr:#04x} (xcc {flags(xcc)}, icc {flags(icc)}) "
              f"asi {asi:#x} pstate {pstate:#x} cwp {cwp}")
        tpc = int(frame["tpc"])
        try:
            word = int.from_bytes(read_guest(tpc, 4), "big")
        except gdb.error:
            print("  word at tpc: unreadable")
            return
        if word >> 22 == 0:
            print(f"  word at tpc {word:#010x}: illtrap {word & 0x3FFFFF}")
        else:
            print(f"  word at tpc {word:#010x}")
        self._report_probe(tpc)


class TbReturns(gdb.Command):
    """Show the real return addresses a return trampoline stands in for:
each thread's shadow stack, innermost call first — the stack slot that
holds the trampoline's address, the real return address, the return probe
that records it. gdb's own backtrace shows the trampoline in those frames;
this is what it means (retaddr.h's return_address_real, read from here).

Usage: tb returns"""

    def __init__(self):
        super().__init__("tb returns", gdb.COMMAND_USER)

    @tlb_free
    def invoke(self, arg, from_tty):
        if not has_sym("ret_stacks"):
            print("no return trampolines on this arch")
            return
        stacks = guest_var("ret_stacks")
        tramp = int(gdb.parse_and_eval("(unsigned long)&opt_return_trampoline"))
        lo, hi = stacks.type.strip_typedefs().range()
        shown = 0
        for i in range(lo, hi + 1):
            s = stacks[i]
            ulong = gdb.lookup_type("unsigned long")
            owner, depth = int(s["owner"].cast(ulong)), int(s["depth"])
            if not owner or not depth:
                continue
            t = s["owner"].dereference()
            name = t["name"].string(length=t["name"].type.sizeof).split("\0")[0]
            print(f"thread {int(t['id'])} ({name}): {depth} calls "
                  f"through the trampoline at {tramp:#x}")
            for k in range(depth - 1, -1, -1):
                f = s["f"][k]
                real = int(f["real"])
                print(f"  slot {int(f['slot']):#x}  real {real:#x} <{where(real)}>  "
                      f"return probe {int(f['ret']['id'])}")
            shown += 1
        if not shown:
            print("no calls in flight through the return trampoline")


# The probe table is one value of ~100 KiB; gdb's default limit is 64 KiB.
gdb.execute("set max-value-size unlimited")
TbPrefix()
TbProbes()
TbBuffer()
TbFrame()
TbReturns()
print("trapbench gdb extension loaded: tb probes | tb buffer [CPU] | tb frame [EXPR] "
      "| tb returns")
