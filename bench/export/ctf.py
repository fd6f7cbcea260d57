"""A traced run as a CTF 1.8 trace, written through python3-bt2 (babeltrace2).

    python3 -m bench run ... --ctf DIR         this run
    python3 -m bench export --ctf DIR LOG      a saved run (bench/export/logs.py)
    babeltrace2 DIR                            read it back; Trace Compass opens DIR

Theory of operation. An in-process bt2.Graph connects a Python source
component, which turns a decoded Capture into babeltrace2 messages, to
the `ctf` plugin's `sink.ctf.fs`, which writes DIR/metadata (TSDL) and one
stream file per CPU. What goes in:

  clock      `cycles`, the guest's cycle counter (TSC, %tick) at the rate
             the HELLO frame announced; timestamps are raw cycles.
  streams    one per guest CPU (cpuN), in the order the CPU wrote its
             records; packet context `cpu_id`, event context `tid`.
  events     one event class per probed function and kind, named as the
             probe spec names it — fbt:FUNC:entry, fbt:FUNC:return,
             branch:FUNC — with the record's words as fields named from
             wire.h's tables (probe, pc, sp, target, taken, annulled), and
             the function's parameters and return value by name and C type
             from DWARF (bench/trace/types.py): signed or unsigned integers
             of their width, enums with their enumerators, pointers in hex.
             A parameter the record does not carry is not a field (no
             zeros); a return of a non-void function has `value_known`,
             0 where the guest could not compute the value. CHECK records
             are `check` events (probe, nwords, words[]).
  losses     every loss the guest marked (a DROPS record) ends a packet,
             and a discarded-events message carries its count; losses at
             the end of a CPU's stream end it with an empty packet. CTF
             1.8 counts discarded events per packet, so a loss is dated
             from the end of the packet before it to the end of the one
             after it (sink.ctf.fs requires exactly that range).
  metadata   the trace's environment: the tracer, arch, CPUs, cycle rate,
             mechanism, workload, each CPU's STATS counters and the
             workload's own call counts (expect_FUNC).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import BenchError
from ..trace.image import Image
from ..trace.sites import Probe
from ..wire.records import (BRANCH, BRANCH_BITS, ENTRY, INSN, K_BRANCH, K_CHECK,
                            K_ENTRY, K_INSN, RETURN, STATS, Capture, Event, Loss)


class CtfError(BenchError):
    """The trace could not be written (python3-bt2 missing, or refused it)."""


@dataclass
class Written:
    path: Path
    events: int
    discarded: int
    streams: int


def _ident(name: str, taken: set) -> str:
    """A CTF field name from a C name: unique within its event class."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name) or "arg"
    if ident[0].isdigit():
        ident = "_" + ident
    while ident in taken:
        ident = "arg_" + ident
    taken.add(ident)
    return ident


class _Classes:
    """Event classes and their field layouts, made once per (function, kind)."""

    def __init__(self, tc, sc, image: Image, word_bytes: int):
        self.tc, self.sc, self.image, self.wb = tc, sc, image, word_bytes
        self.classes: dict = {}

    def _uint(self, bits, hexa=False):
        import bt2
        return self.tc.create_unsigned_integer_field_class(
            bits, bt2.IntegerDisplayBase.HEXADECIMAL if hexa else None)

    def _typed(self, ct):
        """The field class of a C type, or None if CTF 1.8 cannot hold it."""
        bits = 8 * ct.size
        if ct.kind == "pointer":
            return self._uint(8 * self.wb, hexa=True)
        if ct.kind == "bool":
            return self._uint(8)
        if ct.kind == "int" and bits:
            return (self.tc.create_signed_integer_field_class(bits) if ct.signed
                    else self._uint(bits))
        if ct.kind == "enum" and bits:
            fc = (self.tc.create_signed_enumeration_field_class(bits) if ct.signed
                  else self.tc.create_unsigned_enumeration_field_class(bits))
            import bt2
            ranges = (bt2.SignedIntegerRangeSet if ct.signed
                      else bt2.UnsignedIntegerRangeSet)
            for value, label in ct.enumerators:
                if label not in fc:
                    fc.add_mapping(label, ranges([(value, value)]))
            return fc
        return None

    def get(self, probe: Probe, kind: int):
        key = ("check",) if kind == K_CHECK else (probe.function, probe.kind, kind)
        if key not in self.classes:
            self.classes[key] = self._make(probe, kind)
        return self.classes[key]

    def _make(self, probe: Probe, kind: int):
        """(event class, [(field name, how to get its value)])."""
        payload = self.tc.create_structure_field_class()
        taken: set = set()
        fields = []

        def add(name, fc, getter):
            ident = _ident(name, taken)
            payload.append_member(ident, fc)
            fields.append((ident, getter))

        add("probe", self._uint(32), lambda ev: ev.probe)
        sig = self.image.signature_of(probe.function)
        w = 8 * self.wb
        if kind == K_CHECK:
            length = self._uint(32)
            add("nwords", length, lambda ev: len(ev.words))
            arr = self.tc.create_dynamic_array_field_class(self._uint(w, True), length)
            add("words", arr, lambda ev: list(ev.words))
            name = "check"
        elif kind == K_BRANCH:
            add("pc", self._uint(w, True), lambda ev: ev.words[BRANCH.PC])
            add("target", self._uint(w, True), lambda ev: ev.words[BRANCH.TARGET])
            add("taken", self._uint(8), lambda ev: int(bool(
                ev.words[BRANCH.FLAGS] & BRANCH_BITS.TAKEN)))
            add("annulled", self._uint(8), lambda ev: int(bool(
                ev.words[BRANCH.FLAGS] & BRANCH_BITS.ANNULLED)))
            name = f"branch:{probe.function}"
        elif kind == K_INSN:
            add("pc", self._uint(w, True), lambda ev: ev.words[INSN.PC])
            add("sp", self._uint(w, True), lambda ev: ev.words[INSN.SP])
            name = f"insn:{probe.function}"
        elif kind == K_ENTRY:
            add("pc", self._uint(w, True), lambda ev: ev.words[ENTRY.PC])
            add("sp", self._uint(w, True), lambda ev: ev.words[ENTRY.SP])
            if sig is not None:
                for p in sig.params:
                    fc = self._typed(p.type)
                    if fc is None or p.word is None:
                        continue            # not carried: no field, no zero
                    add(p.name, fc, self._param_getter(p))
            else:
                for i in range(probe.nargs):
                    add(f"arg{i}", self._uint(w, True),
                        lambda ev, i=i: ev.words[ENTRY.ARG0 + i])
            name = f"fbt:{probe.function}:entry"
        else:
            add("pc", self._uint(w, True), lambda ev: ev.words[RETURN.PC])
            add("sp", self._uint(w, True), lambda ev: ev.words[RETURN.SP])
            ret = sig.ret if sig is not None else None
            fc = self._typed(ret) if ret is not None else self._uint(w)
            if ret is None or ret.kind != "void":
                if fc is not None:
                    need = max(1, -(-(ret.size if ret else self.wb) // self.wb))
                    add("value_known", self._uint(8),
                        lambda ev, need=need: int(len(ev.words) >= RETURN.VALUE + need))
                    add("value", fc, self._value_getter(ret, need))
            name = f"fbt:{probe.function}:return"
        return self.sc.create_event_class(name=name, payload_field_class=payload), fields

    def _param_getter(self, p):
        wb = self.wb

        def get(ev):
            args = ev.words[ENTRY.ARG0:]
            if p.word + p.words > len(args):
                return 0                       # the class says what it holds
            raw = 0
            for i in range(p.words):
                raw |= args[p.word + i] << (8 * wb * i)
            return p.type.value(raw)
        return get

    def _value_getter(self, ret, need):
        wb = self.wb

        def get(ev):
            vals = ev.words[RETURN.VALUE:RETURN.VALUE + need]
            if len(vals) < need:
                return 0                       # value_known says 0
            raw = 0
            for i, v in enumerate(vals):
                raw |= v << (8 * wb * i)
            return ret.value(raw) if ret is not None else raw
        return get


def _per_cpu(cap: Capture) -> dict[int, list]:
    """Each CPU's records and marked losses, in the order the CPU wrote them."""
    out: dict[int, list] = {}
    for ev in (*cap.events, *cap.checks):
        out.setdefault(ev.cpu, []).append((ev.index, 1, ev))
    for loss in cap.marked:
        out.setdefault(loss.cpu, []).append((loss.index, 0, loss))
    for cpu in cap.stats:
        out.setdefault(cpu, [])
    return {cpu: [x for _, _, x in sorted(items, key=lambda t: (t[0], t[1]))]
            for cpu, items in sorted(out.items())}


def _environment(cap: Capture, hello: dict, environment: dict | None) -> dict:
    """The trace's environment: the tracer, arch, CPUs, cycle rate, what the
    caller adds (mechanism, workload, ...), each CPU's STATS counters and
    the workload's own call counts."""
    env = {"tracer_name": "trapbench", "arch": hello.get("arch_name", ""),
           "ncpus": int(hello.get("ncpus", 0)), "cycles_hz": int(hello["cycles_hz"]),
           "word_bytes": int(hello["word_bytes"])}
    env.update({k: v for k, v in (environment or {}).items() if v is not None})
    for cpu, s in sorted(cap.stats.items()):
        for f in STATS.fields:
            if f.name not in ("cpu", "reserved"):
                env[f"cpu{cpu}_{f.name}"] = int(s[f.name])
    for fn, calls in sorted(cap.expects.items()):
        env[f"expect_{fn}"] = int(calls)
    return env


def _packets(items: list, tail: Loss | None) -> tuple[list, list, int]:
    """A CPU's records cut into packets at its losses: (parts, each packet's
    end time, the stream's start time). A part is a list of records (a
    packet) or a Loss between two packets; a loss at the stream's end
    (tail) is followed by an empty packet."""
    parts = [[]]
    for x in items:
        if isinstance(x, Loss):
            parts.append(x)
            parts.append([])
        else:
            parts[-1].append(x)
    if tail is not None:
        parts += [tail, []]
    start = items[0].cycles if items and isinstance(items[0], Event) else 0
    ends = []
    t = start
    for part in parts:
        if isinstance(part, list):
            t = max([t] + [ev.cycles for ev in part])
            ends.append(t)
    return parts, ends, start


def _iterator_class(bt2, env: dict, per_cpu: dict, tails: dict, by_id: dict,
                    counts: dict):
    """The source's message iterator: per CPU, a stream of packets and
    discarded-events messages (bt2 is imported by write() alone)."""

    class Iterator(bt2._UserMessageIterator):
        def __init__(self, config, port):
            self._messages = self._all(port.user_data)

        def __next__(self):
            return next(self._messages)

        def _all(self, src):
            trace = src.tc(environment={k: (v if isinstance(v, str) else int(v))
                                        for k, v in env.items()})
            for cpu, items in per_cpu.items():
                yield from self._stream(src, trace, cpu, items)

        def _stream(self, src, trace, cpu, items):
            stream = trace.create_stream(src.sc, name=f"cpu{cpu}")
            yield self._create_stream_beginning_message(stream)
            parts, ends, start = _packets(items, tails.get(cpu))
            k = 0
            prev_end = start
            for part in parts:
                if isinstance(part, Loss):
                    counts["discarded"] += part.count
                    yield self._create_discarded_events_message(
                        stream, part.count, prev_end, ends[k])
                    continue
                begin = min([prev_end] + [ev.cycles for ev in part[:1]]) \
                    if k == 0 else prev_end
                yield from self._packet(src, stream, cpu, part, begin, ends[k])
                prev_end = ends[k]
                k += 1
            yield self._create_stream_end_message(stream)

        def _packet(self, src, stream, cpu, part, begin, end):
            packet = stream.create_packet()
            packet.context_field["cpu_id"] = cpu
            yield self._create_packet_beginning_message(packet, begin)
            for ev in part:
                ec, fields = src.classes.get(by_id[ev.probe], ev.kind) \
                    if ev.probe in by_id else src.unknown(ev)
                msg = self._create_event_message(ec, packet, ev.cycles)
                msg.event.common_context_field["tid"] = ev.thread
                for name, get in fields:
                    msg.event.payload_field[name] = get(ev)
                counts["events"] += 1
                yield msg
            yield self._create_packet_end_message(packet, end)

    return Iterator


def _source_class(bt2, iterator, image: Image, hello: dict):
    """The source component: the trace class, the `cycles` clock, the
    stream class (packets, cpu_id, tid, discarded events) and the event
    classes."""

    class Source(bt2._UserSourceComponent, message_iterator_class=iterator):
        def __init__(self, config, params, obj):
            self.tc = self._create_trace_class()
            clock = self._create_clock_class(
                frequency=int(hello["cycles_hz"]), name="cycles",
                description="the guest's cycle counter (TSC, %tick)",
                origin_is_unix_epoch=False)
            pc = self.tc.create_structure_field_class()
            pc.append_member("cpu_id", self.tc.create_unsigned_integer_field_class(32))
            cc = self.tc.create_structure_field_class()
            cc.append_member("tid", self.tc.create_unsigned_integer_field_class(16))
            self.sc = self.tc.create_stream_class(
                default_clock_class=clock, packet_context_field_class=pc,
                event_common_context_field_class=cc, supports_packets=True,
                packets_have_beginning_default_clock_snapshot=True,
                packets_have_end_default_clock_snapshot=True,
                supports_discarded_events=True,
                discarded_events_have_default_clock_snapshots=True)
            self.classes = _Classes(self.tc, self.sc, image, int(hello["word_bytes"]))
            self._unknown = None
            self._add_output_port("out", self)

        def unknown(self, ev):
            """A record of a probe the run did not declare: its raw words."""
            if self._unknown is None:
                self._unknown = self.classes._make(
                    Probe(-1, "unknown", "check", 0), K_CHECK)
            return self._unknown

    return Source


def write(path, cap: Capture, probes: list[Probe], image: Image, hello: dict,
          environment: dict | None = None) -> Written:
    """Write the capture as a CTF trace in directory `path` (replaced)."""
    try:
        import bt2
    except ImportError:
        raise CtfError("CTF export needs python3-bt2 (make deps installs it)") from None
    path = Path(path)
    per_cpu = _per_cpu(cap)
    tails = {l.cpu: l for l in cap.losses() if l.at is None}
    counts = {"events": 0, "discarded": 0}
    iterator = _iterator_class(bt2, _environment(cap, hello, environment), per_cpu,
                               tails, {p.id: p for p in probes}, counts)
    source = _source_class(bt2, iterator, image, hello)
    if path.exists():
        shutil.rmtree(path)
    graph = bt2.Graph()
    src = graph.add_component(source, "trapbench")
    sink = graph.add_component(
        bt2.find_plugin("ctf").sink_component_classes["fs"], "ctf-fs",
        params={"path": str(path), "assume-single-trace": True, "quiet": True},
        logging_level=bt2.LoggingLevel.ERROR)
    graph.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    try:
        graph.run()
    except bt2._Error as e:
        raise CtfError(f"writing the CTF trace to {path} failed: {e}") from None
    return Written(path, counts["events"], counts["discarded"], len(per_cpu))
