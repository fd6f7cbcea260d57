"""A compiled program into a running guest, and onto probes.

    load(guest, program, slot)          program load ... / program check
    attach(guest, slot, probe_ids)      probe program ID... SLOT

The program's bytes (bench/program/asm.Program.image, in the guest's byte
order from HELLO) go in hex, a command line at a time, into the slot's
staging area; `program check` then has the guest validate them whole (it
trusts nothing the wire brings) and install them. A refusal raises
ProgramRefused with the guest's words, and nothing is attached.
"""

from __future__ import annotations

from ..errors import BenchError
from ..wire.frames import MAX_COMMAND

ATTACH_IDS = 12          # probe ids per `probe program` line (16 words at most)


class ProgramRefused(BenchError):
    """The guest refused a program or its attachment."""


def _must(guest, line: str):
    r = guest.command(line)
    if not r.ok:
        raise ProgramRefused(f"the guest refused {line[:60]!r}...: {r.status_name}: "
                             f"{r.message}", cmdline=guest.cmdline,
                             log=str(guest.log_path))
    return r


def load(guest, program, slot: int) -> str:
    """Load and check the program in slot; the guest's reply."""
    image = program.image(guest.byte_order)
    head = f"program load {slot} {len(image)} "
    per_line = (MAX_COMMAND - len(head)) // 2
    for off in range(0, len(image), per_line):
        _must(guest, f"program load {slot} {off} {image[off:off + per_line].hex()}")
    return _must(guest, f"program check {slot} {len(image)}").message


def attach(guest, slot: int | None, probe_ids: list[int]) -> None:
    """Run the slot's program at these probes (None: no program)."""
    what = "none" if slot is None else str(slot)
    for i in range(0, len(probe_ids), ATTACH_IDS):
        ids = " ".join(str(p) for p in probe_ids[i:i + ATTACH_IDS])
        _must(guest, f"probe program {ids} {what}")


def limits(guest, probe_ids: list[int], pass_count: int | None,
           maxhits: int | None) -> None:
    """DProbes' pass count and maximum hit count for these probes."""
    for word, value in (("pass", pass_count), ("maxhits", maxhits)):
        if value is None:
            continue
        for i in range(0, len(probe_ids), ATTACH_IDS):
            ids = " ".join(str(p) for p in probe_ids[i:i + ATTACH_IDS])
            _must(guest, f"probe {word} {ids} {value}")
