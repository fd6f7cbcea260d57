"""Reading a stopped guest's tracer state through gdb: the probe table, the
per-CPU rings and their records, for the `tb` commands (bench/debug/gdbext.py).

Guest structures are read with their DWARF types, so a field added or moved
in C needs no change here; memory a TLB does not map is read as physical
(kernel RAM is identity-mapped on both arches). Imported only inside gdb.

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

import gdb  # noqa: F401  (only inside gdb)

from bench.wire.shm import SUBBUF, SUBBUF_MAGIC, records_in
from bench.wire.records import EVENT, K_PAD, KIND_NAMES, Event


def guest_var(name: str) -> gdb.Value:
    """A global or file-static variable of the guest."""
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError(f"no symbol {name!r} in the loaded ELF (is it the "
                           "guest's kernel.elf?)")
    return sym.value()


def has_sym(name: str) -> bool:
    return bool(gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name))


def _enum_names(type_name: str) -> dict[int, str]:
    return {f.enumval: f.name for f in gdb.lookup_type(type_name).fields()}


def c_string(v: gdb.Value) -> str:
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


def fetched(v: gdb.Value) -> gdb.Value:
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
    table = guest_var("tracer_probes")
    table.fetch_lazy()
    states = _enum_names("enum probe_state")
    mechanisms = guest_var("tarch_mechanisms")
    count = int(guest_var("tarch_nmechanisms"))
    names = [c_string(mechanisms[i]["name"]) for i in range(count)]
    lo, hi = table.type.range()
    # Hits: every CPU's row of tracer_hits plus the gate's shared count
    # (tracer/core/hits.c), summed as the guest's tracer_probe_hits does.
    # One read_guest each, not one per probe (and a page the guest's TLB
    # does not hold at the stop is read as physical memory there).
    rows, gates = guest_var("tracer_hits"), guest_var("probe_gates")
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
    tcpu = guest_var("tcpu")
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
    consumed = int(fetched(sb["ctl"].dereference())["consumed"])
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



_physical_depth = 0


def tlb_free(invoke):
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
