"""A saved run read back: build/logs/NAME.serial (every byte of the serial
line) and NAME.log (the transcript) into what the exporters need.

The serial bytes are deframed again (HELLO, the trace frames), and so is
NAME.virtio, the trace channel's stream, when the run had one (its own
deframer and seq, as live; its frames follow the serial line's, each
stream in its own order, which is all a run on one channel needs), and
NAME.shm, the EVENTS frames read out of guest RAM under the shm channel
(bench/guest/shm_consumer.py writes it as it reads); the
transcript gives the ELF (`# elf: PATH`, written when the guest started)
and the probes: every `>> probe add ID ADDR KIND [NARGS]` that the guest
answered OK, forgotten again at an OK `probe clear`, with its function
named from the ELF, and the mechanism of the last `probe mechanism`. A
log missing any of these, or whose serial stream holds no HELLO, is an
error that says which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..trace.image import Image, load_image
from ..trace.sites import Probe
from ..wire import frames as wire
from ..wire import records
from ..wire.shm import ShmError, read_log

_CMD = re.compile(r"^>> (.*)$")
_REPLY = re.compile(r"^<< (\w+) #(\d+): ?(.*)$")


@dataclass
class SavedRun:
    name: str
    hello: dict
    capture: records.Capture
    probes: list[Probe]
    image: Image
    mechanism: str | None
    link_errors: list


def _paths(log: Path) -> tuple[Path, Path]:
    base = log.with_suffix("") if log.suffix in (".log", ".serial") else log
    serial, text = base.with_suffix(".serial"), base.with_suffix(".log")
    for p in (serial, text):
        if not p.is_file():
            raise UsageError(f"{log}: no {p.name} beside it (a run's logs are "
                             "build/logs/NAME.serial and NAME.log)")
    return serial, text


def load(log) -> SavedRun:
    serial, text = _paths(Path(log))
    deframer = wire.Deframer()
    items = deframer.feed(serial.read_bytes()) + deframer.finish()
    errors = list(deframer.errors)
    channel = serial.with_suffix(".virtio")
    if channel.is_file():
        on_channel = wire.Deframer(stream="virtio", next_seq=0)
        items += on_channel.feed(channel.read_bytes()) + on_channel.finish()
        errors += on_channel.errors
    shm_log = serial.with_suffix(".shm")
    if shm_log.is_file():
        try:
            payloads = read_log(shm_log.read_bytes())
        except ShmError as e:
            raise UsageError(f"{shm_log}: {e}") from None
        items += [wire.Frame(wire.T_EVENTS, n, p, -1) for n, p in enumerate(payloads)]
    got = [i for i in items if isinstance(i, wire.Frame)]
    hellos = [f for f in got if f.type == wire.T_HELLO]
    if not hellos:
        raise UsageError(f"{serial}: no HELLO frame: the guest never came up")
    hello = wire.decode_hello(hellos[0].payload)
    order = wire.byte_order_of(hellos[0].payload)
    cap = records.decode([f for f in got if f.type in wire.TRACE_TYPES], order,
                         hello["word_bytes"])

    elf, mechanism, sent, adds = None, None, {}, {}
    n = 0
    for line in text.read_text(errors="replace").splitlines():
        if line.startswith("# elf: "):
            elf = Path(line[len("# elf: "):])
        m = _CMD.match(line)
        if m:
            n += 1
            sent[n] = m.group(1).split()
            continue
        m = _REPLY.match(line)
        if not m or m.group(1) != "OK":
            continue
        words = sent.get(int(m.group(2)), [])
        if words[:2] == ["probe", "add"] and len(words) >= 5:
            adds[int(words[2])] = (int(words[3], 0), words[4],
                                   int(words[5]) if len(words) > 5 else 0)
        elif words[:2] == ["probe", "clear"]:
            adds = {}
        elif words[:2] in (["probe", "mechanism"], ["probe", "mode"]) and len(words) == 3:
            mechanism = words[2]
    if elf is None:
        raise UsageError(f"{text}: no `# elf:` line: a log from before the "
                         "harness recorded its ELF cannot be exported")
    image = load_image(elf)
    probes = []
    for pid, (addr, kind, nargs) in sorted(adds.items()):
        f = image.function_at(addr)
        probes.append(Probe(pid, f.name if f else f"{addr:#x}", kind, addr, nargs))
    return SavedRun(serial.stem, hello, cap, probes, image, mechanism, errors)
