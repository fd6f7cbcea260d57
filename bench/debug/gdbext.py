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

A ring holds records between tail (drained up to) and head (written up
to); those are `pending`. Records before tail were already sent, but the
bytes stay until overwritten: while the ring has not wrapped (head <= size)
they are walked from offset 0 and shown as `sent`. Under the shm channel
(the ring's writer `sb` is on: tracer/core/ring.h, include/shm.h) the same
memory is sub-buffers: each slot's header says its number and whether it
is committed, the table row how far the host has read (`consumed`), and
the writer how far the open one is written; records in the open one and
in committed ones the host has not read are `pending`, those in slots it
has read are `sent` (their bytes stay until the slot is reused).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import gdb  # noqa: F401  (only inside gdb)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import arches  # noqa: E402
from bench.trace.image import load_image  # noqa: E402
from bench.wire.shm import SUBBUF, SUBBUF_MAGIC, records_in  # noqa: E402
from bench.wire.records import (BRANCH, BRANCH_BITS, DROPS, ENTRY, EVENT,  # noqa: E402
                                K_BRANCH, K_DROPS, K_ENTRY, K_PAD, K_RETURN,
                                KIND_NAMES, RETURN, Event)


# ---- reading the guest ----

def _sym(name: str) -> gdb.Value:
    """A global or file-static variable of the guest."""
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError(f"no symbol {name!r} in the loaded ELF (is it the "
                           "guest's kernel.elf?)")
    return sym.value()


def _has_sym(name: str) -> bool:
    return bool(gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name))


def _enum_names(type_name: str) -> dict[int, str]:
    return {f.enumval: f.name for f in gdb.lookup_type(type_name).fields()}


def _string(v: gdb.Value) -> str:
    """A C string the guest points to, read as read_guest reads (a page no
    TLB holds at the stop is read as physical memory)."""
    addr = int(v)
    if not addr:
        return "?"
    try:
        raw = read_guest(addr, 64)
    except gdb.error:
        return "?"
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _fetched(v: gdb.Value) -> gdb.Value:
    """v with its bytes read now through read_guest, so reading its fields
    touches the guest no more (a lazy value reads through the TLBs)."""
    return gdb.Value(read_guest(int(v.address), v.type.sizeof), v.type)


def where(addr: int) -> str:
    """FUNCTION+0xOFF for a code address, else hex."""
    try:
        block = gdb.current_progspace().block_for_pc(addr)
    except RuntimeError:
        block = None
    while block is not None and block.function is None:
        block = block.superblock
    if block is None:
        sym = gdb.execute(f"info symbol {addr:#x}", to_string=True).strip()
        return sym.split(" in section")[0].replace(" + ", "+") \
            if "No symbol" not in sym else f"{addr:#x}"
    off = addr - block.start
    return block.function.name + (f"+{off:#x}" if off else "")


def read_guest(addr: int, length: int) -> bytes:
    """Guest memory at a kernel virtual address. QEMU's sparc64 stub
    translates only through the TLBs, so a page no TLB holds reads as an
    error; kernel RAM is identity-mapped on both arches (sparc64
    vmlayout.h, i386 paging.c), so such a read is retried as a physical
    one (QEMU's Qqemu.PhyMemMode)."""
    inf = gdb.selected_inferior()
    try:
        return bytes(inf.read_memory(addr, length))
    except gdb.MemoryError:
        if _physical_depth:
            raise
    gdb.execute("maint packet Qqemu.PhyMemMode:1", to_string=True)
    try:
        gdb.execute("flushregs", to_string=True)      # drop gdb's cached bytes
        return bytes(inf.read_memory(addr, length))
    finally:
        gdb.execute("maint packet Qqemu.PhyMemMode:0", to_string=True)


def byte_order() -> str:
    text = gdb.execute("show endian", to_string=True)
    return ">" if "big endian" in text else "<"


def word_bytes() -> int:
    return gdb.lookup_type("unsigned long").sizeof


def probe_table() -> list[dict]:
    """Every non-free probe, as a dict."""
    table = _sym("tracer_probes")
    table.fetch_lazy()
    states = _enum_names("enum probe_state")
    mechanisms = _sym("tarch_mechanisms")
    count = int(_sym("tarch_nmechanisms"))
    names = [_string(mechanisms[i]["name"]) for i in range(count)]
    lo, hi = table.type.range()
    # Hits: every CPU's row of tracer_hits plus the gate's shared count
    # (tracer/core/hits.c), summed as the guest's tracer_probe_hits does.
    # One read_guest each, not one per probe (and a page the guest's TLB
    # does not hold at the stop is read as physical memory there).
    rows, gates = _sym("tracer_hits"), _sym("probe_gates")
    order, wb = byte_order(), word_bytes()
    wfmt = {4: "I", 8: "Q"}[wb]
    ncpus = rows.type.range()[1] + 1
    nprobes = hi - lo + 1
    raw = read_guest(int(rows.address), ncpus * nprobes * wb)
    row = struct.unpack(f"{order}{ncpus * nprobes}{wfmt}", raw)
    gsize = gates.type.target().sizeof
    goff = next(f.bitpos // 8 for f in gates.type.target().fields() if f.name == "hits")
    graw = read_guest(int(gates.address), nprobes * gsize)
    out = []
    for i in range(lo, hi + 1):
        p = table[i]
        state = int(p["state"])
        if states.get(state) == "PROBE_FREE":
            continue
        m = int(p["mechanism"])
        out.append({
            "id": int(p["id"]), "addr": int(p["addr"]),
            "kind": KIND_NAMES.get(int(p["kind"]), str(int(p["kind"]))).lower(),
            "state": states.get(state, str(state)).removeprefix("PROBE_").lower(),
            "mechanism": names[m] if m < count else str(m),
            "nargs": int(p["nargs"]),
            "hits": struct.unpack_from(f"{order}{wfmt}", graw, i * gsize + goff)[0]
            + sum(row[c * nprobes + i] for c in range(ncpus)),
        })
    return out


def rings() -> list[tuple[int, gdb.Value]]:
    """(cpu, struct tracer_cpu) for every CPU with a ring."""
    tcpu = _sym("tcpu")
    lo, hi = tcpu.type.range()
    return [(c, tcpu[c]) for c in range(lo, hi + 1) if int(tcpu[c]["data"])]


def ring_records(t: gdb.Value) -> tuple[list[tuple[int, bool, Event]], str]:
    """(offset, pending, Event) of the records one ring still holds, and a
    note on what could not be walked."""
    data, size = int(t["data"]), int(t["size"])
    head, tail = int(t["head"]), int(t["tail"])
    order, wb = byte_order(), word_bytes()
    wfmt = {4: "I", 8: "Q"}[wb]
    # Only the bytes that hold records: [0, head) or [tail, head).
    if head <= size:
        ring = read_guest(data, head) + bytes(size - head)
    else:
        ring = bytearray(size)
        first = tail & (size - 1)
        n = (head - tail) & 0xFFFFFFFF
        part = min(n, size - first)
        ring[first:first + part] = read_guest(data + first, part)
        if n > part:
            ring[:n - part] = read_guest(data, n - part)
        ring = bytes(ring)
    u32 = 0xFFFFFFFF
    if head <= size:
        pos, note = 0, ""
    else:
        pos, note = tail, (f"the ring has wrapped: records before tail "
                           f"({tail:#x}) cannot be walked")
    out = []
    while pos != head:
        off = pos & (size - 1)
        if ring[off] == K_PAD:      # the record's kind byte
            pos = (pos + size - off) & u32
            continue
        if off + EVENT.size > size:
            note = f"a record header runs off the ring at {off:#x}"
            break
        e = EVENT.unpack(ring[off:off + EVENT.size], order)
        n = e["nwords"]
        end = off + EVENT.size + n * wb
        if end > size:
            note = f"a record at {off:#x} runs off the ring ({n} words)"
            break
        words = struct.unpack_from(f"{order}{n}{wfmt}", ring, off + EVENT.size)
        pending = ((pos - tail) & u32) < ((head - tail) & u32)
        out.append((off, pending, Event(-1, e["thread"], e["probe"],
                                        e["kind"], e["cycles"], words)))
        pos = (pos + end - off) & u32
    return out, note


def _events(body: bytes, order: str, wb: int) -> list[tuple[int, Event]]:
    """(offset, Event) of the whole records at the start of body."""
    wfmt = {4: "I", 8: "Q"}[wb]
    out = []
    for off, _kind, size in records_in(body, order, wb):
        if off + size > len(body):
            break
        e = EVENT.unpack(body[off:off + EVENT.size], order)
        words = struct.unpack_from(f"{order}{e['nwords']}{wfmt}", body, off + EVENT.size)
        out.append((off, Event(-1, e["thread"], e["probe"], e["kind"], e["cycles"], words)))
    return out


def subbuf_records(t: gdb.Value) -> tuple[list[tuple[int, bool, Event]], list[str]]:
    """Under shm: (offset in the ring, pending, Event) of every record the
    sub-buffers still hold, oldest sub-buffer first, and a line per
    sub-buffer (its number, slot, state and records)."""
    sb = t["sb"]
    order, wb = byte_order(), word_bytes()
    data, subbuf, nsub = int(t["data"]), int(sb["subbuf"]), int(sb["nsub"])
    w, is_open = int(sb["w"]), bool(sb["open"])
    consumed = int(_fetched(sb["ctl"].dereference())["consumed"])
    slots = []
    for i in range(nsub):
        raw = read_guest(data + i * subbuf, subbuf)
        h = SUBBUF.unpack(raw[:SUBBUF.size], order)
        n = h["seq"]
        if h["magic"] != SUBBUF_MAGIC or (w - n) & 0xFFFFFFFF >= 1 << 31:
            continue                    # never opened, or a stale number
        if n == w and is_open:
            state, content = "open (being written)", int(sb["off"]) - SUBBUF.size
        elif h["commit"] == (n + 1) & 0xFFFFFFFF:
            state, content = ("committed, read by the host"
                              if (consumed - n - 1) & 0xFFFFFFFF < 1 << 31
                              else "committed, not read yet"), h["content"]
        else:
            continue                    # opened and left empty
        slots.append((n, i, state, raw[SUBBUF.size:SUBBUF.size + content]))
    out, lines = [], []
    for n, i, state, body in sorted(slots, key=lambda x: (w - x[0]) & 0xFFFFFFFF,
                                    reverse=True):
        evs = _events(body, order, wb)
        pending = not state.endswith("read by the host")
        lines.append(f"  sub-buffer {n} (slot {i}): {state}, {len(evs)} records")
        out += [(i * subbuf + SUBBUF.size + off, pending, ev) for off, ev in evs]
    return out, lines


# ---- commands ----

_physical_depth = 0


def _tlb_free(invoke):
    """Run a command with every read physical where the stub translates
    only through the TLBs (sparc64): what the command reads lazily through
    gdb values (a trap frame, a table, a string) would otherwise fail on
    whichever page the guest's software-refilled TLBs do not hold at the
    stop. Kernel RAM is identity-mapped, so the addresses stay the same."""
    def run(self, arg, from_tty):
        global _physical_depth
        if "sparc" not in gdb.selected_inferior().architecture().name():
            return invoke(self, arg, from_tty)
        gdb.execute("maint packet Qqemu.PhyMemMode:1", to_string=True)
        gdb.execute("flushregs", to_string=True)
        _physical_depth += 1
        try:
            return invoke(self, arg, from_tty)
        finally:
            _physical_depth -= 1
            gdb.execute("maint packet Qqemu.PhyMemMode:0", to_string=True)
            gdb.execute("flushregs", to_string=True)
    run.__doc__ = invoke.__doc__
    return run


class TbPrefix(gdb.Command):
    """trapbench: tracer state of the stopped guest (tb probes | buffer | frame | returns)."""

    def __init__(self):
        super().__init__("tb", gdb.COMMAND_USER, prefix=True)


class TbProbes(gdb.Command):
    """List the guest's probes: id, site, kind, state, mechanism, hits.

Usage: tb probes"""

    def __init__(self):
        super().__init__("tb probes", gdb.COMMAND_USER)

    @_tlb_free
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

    @_tlb_free
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
            counters = (f"fired={int(_sym('tracer_fired')[cpu]['n'])} "
                        f"recorded={int(t['recorded'])} "
                        f"dropped={int(t['dropped'])} sent={int(t['sent'])}")
            size = int(t["size"])
            if bool(t["sb"]["on"]):
                sb = t["sb"]
                ctl = _fetched(sb["ctl"].dereference())
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
    if not _has_sym("vector_names"):
        return ""
    names = _sym("vector_names")
    lo, hi = names.type.range()
    if lo <= v <= hi and int(names[v]["mnemonic"]):
        return _string(names[v]["mnemonic"])
    return ""


def _trap_name(tf: gdb.Value) -> str:
    fields = {f.name for f in tf.type.fields()}
    if "vector" in fields and _has_sym("vector_names"):
        v = int(tf["vector"])
        names = _fetched(_sym("vector_names"))
        lo, hi = names.type.range()
        if lo <= v <= hi and int(names[v]["mnemonic"]):
            return f"vector {v} {_string(names[v]['mnemonic'])} " \
                   f"({_string(names[v]['description'])})"
        return f"vector {v}"
    if "tt" in fields and _has_sym("tt_names"):
        tt = int(tf["tt"])
        names = _fetched(_sym("tt_names"))
        lo, hi = names.type.range()
        for i in range(lo, hi + 1):
            e = names[i]
            if int(e["first"]) <= tt <= int(e["last"]):
                return f"tt {tt:#x} {_string(e['name'])}"
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

    @_tlb_free
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

    @_tlb_free
    def invoke(self, arg, from_tty):
        if not _has_sym("ret_stacks"):
            print("no return trampolines on this arch")
            return
        stacks = _sym("ret_stacks")
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
