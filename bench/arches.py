"""What the harness knows per architecture, in one table.

Everything arch-specific on the host lives here: the QEMU binary and
machine, how the image boots, which devices carry the exit status, the
ELF machine and objdump, libvirt's name for the arch, where probes go
(trace/rules.py), the probe mechanisms (read from the guest's own
tracer/arch/<arch>/mechanisms.h: names, the default, which are lossy), the
checker, the debugger's view, and which deliberate crashes end in which
exit status. The rest of bench/ is arch-neutral and only reads these
fields: no other module asks which arch it is on. An arch exists when it
has both an entry here and guest-kernel/arch/<name>/arch.mk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .paths import REPO
from .trace import rules
from .wire import cdefs


def _mechanisms(arch: str) -> dict:
    """Arch's mechanisms, lossy, return_trampolines and trap_free fields
    from the arch's TARCH_MECHANISMS table: the names in order (the first
    is the default), the lossy ones (MECHANISM_LOSSY), those whose return
    probes ride on their entry (MECHANISM_RETURN_TRAMPOLINE) and those
    whose entry and return sites take no trap (MECHANISM_NO_TRAP)."""
    h = cdefs.load(f"tracer/arch/{arch}/mechanisms.h")
    rows, lossy_bit = h.table("TARCH_MECHANISMS"), h.const("MECHANISM_LOSSY")
    ride_bit = h.const("MECHANISM_RETURN_TRAMPOLINE")
    free_bit = h.const("MECHANISM_NO_TRAP")
    return {"mechanisms": tuple(r.meaning for r in rows),
            "lossy": frozenset(r.meaning for r in rows if r.value & lossy_bit),
            "return_trampolines": frozenset(r.meaning for r in rows
                                            if r.value & ride_bit),
            "trap_free": frozenset(r.meaning for r in rows if r.value & free_bit)}


@dataclass(frozen=True)
class Arch:
    name: str
    qemu: str
    machine: tuple[str, ...]
    # Image files built by guest-kernel/image.mk, relative to build/<arch>/.
    boot_image: str                 # what QEMU boots
    symbols: str                    # ELF with symbols, for the host
    boot_args: tuple[str, ...]      # how QEMU boots it; {image} is replaced
    exit_device: tuple[str, ...]    # what turns the exit status into rc
    max_smp: int = 1
    # CPU counts `make check` runs the self-tests with.
    check_smp: tuple[int, ...] = (1,)
    # Registers that hold code addresses in trap dumps (symbolized).
    pc_registers: tuple[str, ...] = ()
    # `crash KIND` kinds whose exit status is not UNEXPECTED_TRAP.
    crash_status: dict = field(default_factory=dict)
    # Probe mechanisms (the guest's `probe mechanism` names), the default
    # first, and the lossy baselines among them: from mechanisms.h.
    mechanisms: tuple[str, ...] = ()
    lossy: frozenset = frozenset()
    # Mechanisms whose return probes ride on their function's entry probe
    # (`probe ride`: a trampoline records the return, no trap).
    return_trampolines: frozenset = frozenset()
    # Mechanisms whose entry and return sites branch to a trampoline and
    # take no trap at all (MECHANISM_NO_TRAP).
    trap_free: frozenset = frozenset()
    # The ELF's e_machine, and the binutils that disassemble it.
    elf_machine: str = ""
    objdump: str = ""
    # libvirt's <type arch=...> for it.
    libvirt_arch: str = ""
    # How a caller passes arguments (bench/trace/types.py): in this many
    # registers, one per parameter (the rest on the stack), or, if 0, all
    # in stack words.
    arg_registers: int = 0
    # Where a parameter's DWARF location at a function's entry (one
    # operation: name, args) is in the trapped state (bench/trace/
    # locations.py): ("word", k), the convention's argument word k, or
    # ("reg", r), register r as probe programs number it; else why not.
    arg_location: object = None
    # Registers a return value may take (i386: eax and edx for 64 bits).
    return_registers: int = 1
    # RPN that pushes an entry probe's caller, the address the function
    # returns to (D's `caller`; bench/lang/codegen.py).
    caller_rpn: tuple[str, ...] = ()
    # Bytes in a machine word: a record word, a probe program's stack item.
    word_bytes: int = 4
    # The guest's byte order, "<" little or ">" big (struct's letters): how
    # a string's bytes make a word (D's string compare, bench/lang/expr.py).
    byte_order: str = "<"
    # What a call stack's frame (`stack`, bench/trace/stacks.py) is: "after"
    # the call instruction (a return address, i386) or "at" it (the
    # address a SPARC call leaves in %o7).
    frame_address: str = "after"
    # The frame of a stack that is an interrupt's caller: the walk hops from
    # it to the interrupted code, whose PC is the next frame (no call site).
    interrupt_frame: str = "trap_dispatch"
    # Whether a frame is a call site judged from the text bytes alone, for
    # code that objdump's function listing lacks (an assembly label):
    # called with the 8 bytes that end at (i386) or start at (sparc64) it.
    call_site: object = None
    # Mnemonics that give a function its own frame (a SPARC `save`): a
    # sampled PC past one in its function has its caller in that frame,
    # before any the caller is still in a register, marked as a candidate
    # by the walk (bench/trace/stacks.py settle_leaf_callers).
    frame_builders: tuple[str, ...] = ()
    # Where fbt and branch probes go (bench/trace/rules.py).
    sites: rules.SiteRules = field(default_factory=rules.SiteRules)
    # The guest has the branch provider (a probe on any control transfer).
    branch_provider: bool = False
    # How `bench itrace` traces instructions (bench/trace/itrace_run.py):
    # "step" (the guest single-steps: ITRACE records) or "branches" (branch
    # probes on every CTI; the host rebuilds the rest from the ELF); and
    # whether a control transfer has a delay slot (the instruction after it
    # runs before the transfer lands, unless annulled).
    itrace: str = "step"
    delay_slots: bool = False
    # capstone's arch and mode constants for the listing's disassembly.
    capstone: tuple[str, ...] = ("CS_ARCH_X86", "CS_MODE_32")
    # The host half of check mode: the module whose verify(checks, sites)
    # re-executes the CHECK records in unicorn (imported when needed), and
    # the module that fuzzes the emulator against unicorn (bench/check/fuzz.py).
    checker: str = ""
    fuzzer: str = ""
    # RAM for runs that need much of it (trace buffers).
    max_memory_mb: int = 256
    # bench/trace/execcount.py: whether a block QEMU logged at pc (given the
    # ELF's symbols) is the entry of a synchronous trap, which means the
    # instruction logged before it on that CPU trapped instead of running
    # (it runs again after the handler's retry); None: none to tell apart.
    exec_trap_entry: object = None
    # An instruction the exec log cannot count (its first bytes, as the
    # ELF has them): the reason, else "". i386: a REP prefix, which
    # singlestep runs one iteration at a time.
    exec_uncounted: object = None
    # Debugging through QEMU's GDB stub (bench/debug/debugger.py, bench/debug/rsp.py): the
    # gdb commands that select the architecture and byte order, the layout
    # of the stub's `g` reply (struct format of one register, names in
    # order), the probe fire path's C function, and the bytes an armed
    # probe shows at its site per mode (hex; {id:...} is the probe's id).
    gdb_setup: tuple[str, ...] = ()
    gdb_registers: tuple = ("", ())
    fire_path: str = ""
    probe_trap: dict = field(default_factory=dict)
    # Watchpoints (bench/trace/watch.py): the types `--watch` takes here,
    # the lengths, the slots, and the console's data port (an I/O watch on
    # it counts the serial line's bytes).
    watch_types: tuple[str, ...] = ()
    watch_lengths: tuple[int, ...] = ()
    watch_slots: int = 0
    console_port: int | None = None
    # The module that re-executes watched accesses (run --watch --check),
    # or "" where the hardware makes the access and nothing is emulated.
    watch_checker: str = ""
    # The trace channel (guest-kernel/core/link.c): where the virtio-serial
    # controller goes on this machine (QEMU -device properties), and the
    # channel a guest gets unless asked (`--channel`): virtio only where the
    # guest drives the device.
    virtio_serial_bus: str = ""
    default_channel: str = "serial"
    # The shm channel reads the guest's RAM (bench/guest/shm_channel.py):
    # from a file QEMU maps shared where the machine takes `-machine
    # memory-backend=` for its RAM, else from QEMU's own memory
    # (/proc/PID/mem). QEMU 7.2's sun4u accepts the option and ignores it:
    # its RAM is a device of its own (`info mtree`: sun4u.ram).
    ram_backend: bool = True

    @property
    def build_dir(self) -> Path:
        return REPO / "build" / self.name

    def image(self) -> Path:
        return self.build_dir / self.boot_image

    def elf(self) -> Path:
        return self.build_dir / self.symbols

    @property
    def default_mechanism(self) -> str:
        return self.mechanisms[0]

    def check_mechanism(self, name: str) -> str:
        """name, or UsageError listing the arch's mechanisms."""
        if name not in self.mechanisms:
            raise UsageError(f"mechanism {name!r}: {self.name} has "
                             f"{', '.join(self.mechanisms)}")
        return name



def _sparc64_sync_trap(pc: int, symbols: dict) -> bool:
    """A block at a TL=0 or TL>0 trap table entry (32 bytes per trap type)
    that is no interrupt (interrupt_level_1..15, interrupt_vector): a
    window spill/fill or MMU miss the instruction before it took."""
    base = symbols.get("trap_table")
    if base is None or not base <= pc < base + 0x8000:
        return False
    tt = ((pc - base) % 0x4000) // 32
    return not (0x41 <= tt <= 0x4f or tt == 0x60)

def _dwarf_register(op: str) -> int | None:
    """N of DW_OP_regN (0..31), else None."""
    if op.startswith("DW_OP_reg") and op[9:].isdigit():
        return int(op[9:])
    return None


def _i386_arg_location(op: str, args) -> tuple[str, int] | str:
    """i386 at entry: [esp] is the return address and the CFA esp + 4 (gcc's
    frame base is DW_OP_call_frame_cfa), so fbreg N is stack word N / 4;
    DWARF numbers eax ecx edx ebx esp ebp esi edi 0..7, as `reg` does."""
    r = _dwarf_register(op)
    if r is not None and r < 8:
        return ("reg", r)
    if op == "DW_OP_fbreg" and args[0] >= 0 and args[0] % 4 == 0:
        return ("word", args[0] // 4)
    return f"at entry in {op}{''.join(f' {a}' for a in args)}, which the record does not hold"


def _sparc64_arg_location(op: str, args) -> tuple[str, int] | str:
    """sparc64 at entry: %o0..%o5 (DWARF 8..13) are the convention's words;
    DWARF numbers %g %o %l %i 0..31, as `reg` does."""
    r = _dwarf_register(op)
    if r is not None and 8 <= r <= 13:
        return ("word", r - 8)
    if r is not None and r < 32:
        return ("reg", r)
    if op == "DW_OP_fbreg":                 # a seventh parameter onwards
        return "passed on the stack"
    return f"at entry in {op}{''.join(f' {a}' for a in args)}, which the record does not hold"


def _i386_call_before(code: bytes) -> bool:
    """8 bytes ending at a return address: a call rel32 (e8), or an
    indirect call through a register (ff d0+r) just before it."""
    return code[-5] == 0xE8 or (code[-2] == 0xFF and code[-1] & 0xF8 == 0xD0)


def _sparc64_call_at(code: bytes) -> bool:
    """The word at a frame: call (op 1), or jmpl that links %o7."""
    w = int.from_bytes(code[:4], "big")
    return w >> 30 == 1 or (w >> 30 == 2 and (w >> 19) & 0x3F == 0x38
                            and (w >> 25) & 0x1F == 15)


def _i386_rep_prefixed(code: bytes) -> str:
    """A REP/REPNE prefix (f3/f2): logged once per iteration under singlestep."""
    if code[:1] in (b"\xf2", b"\xf3"):
        return (f"REP-prefixed (0x{code[0]:02x}): singlestep logs each iteration, "
                "not each execution")
    return ""


ARCHES: dict[str, Arch] = {
    "i386": Arch(
        name="i386",
        qemu="qemu-system-i386",
        machine=("-M", "pc"),
        boot_image="kernel.elf",
        symbols="kernel.elf",
        boot_args=("-kernel", "{image}"),
        exit_device=("-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"),
        max_smp=8,
        check_smp=(1, 2, 4),
        pc_registers=("EIP",),
        crash_status={"df": "DOUBLE_FAULT"},
        **_mechanisms("i386"),
        elf_machine="EM_386",
        objdump="i686-linux-gnu-objdump",
        libvirt_arch="i686",
        return_registers=2,              # eax, edx
        caller_rpn=("reg esp", "load 4"),    # [esp]: the return address
        arg_location=_i386_arg_location,
        exec_uncounted=_i386_rep_prefixed,
        call_site=_i386_call_before,
        sites=rules.I386Rules(),
        checker="bench.check.i386",
        fuzzer="bench.check.fuzz_i386",
        gdb_setup=("set architecture i386", "set endian little"),
        gdb_registers=("<I", ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
                              "eip", "eflags", "cs", "ss", "ds", "es", "fs", "gs")),
        fire_path="i386_probe_trap",
        probe_trap={"int3": "cc", "ud": "0f0b", "step": "cc"},
        watch_types=("x", "w", "rw", "io"),        # DR7 types 00, 01, 11, 10
        watch_lengths=(1, 2, 4),
        watch_slots=4,                             # DR0-DR3
        console_port=0x3f8,
        # More RAM would put the ACPI tables above the 256 MiB the kernel maps.
        max_memory_mb=256,
        default_channel="virtio",
    ),
    "sparc64": Arch(
        name="sparc64",
        qemu="qemu-system-sparc64",
        machine=("-M", "sun4u"),
        boot_image="prom.bin",
        symbols="kernel.elf",
        boot_args=("-bios", "{image}"),
        # COM2 is QEMU's testdev: the guest writes "<n>q" to exit with n.
        exit_device=("-chardev", "testdev,id=exitdev", "-serial", "chardev:exitdev"),
        pc_registers=("TPC", "TNPC"),
        # A spill onto an unmapped stack faults at TL 2 (arch/sparc64/arch.c).
        crash_status={"df": "DOUBLE_FAULT"},
        **_mechanisms("sparc64"),
        elf_machine="EM_SPARCV9",
        objdump="sparc64-linux-gnu-objdump",
        libvirt_arch="sparc64",
        arg_registers=6,                 # %o0..%o5
        caller_rpn=("reg o7",),          # the call's address, before save
        arg_location=_sparc64_arg_location,
        word_bytes=8,
        byte_order=">",
        frame_address="at",
        call_site=_sparc64_call_at,
        frame_builders=("save",),
        sites=rules.Sparc64Rules(),
        checker="bench.check.sparc64",
        fuzzer="bench.check.fuzz_sparc64",
        branch_provider=True,
        itrace="branches",
        delay_slots=True,
        capstone=("CS_ARCH_SPARC", "CS_MODE_V9", "CS_MODE_BIG_ENDIAN"),
        # No target.xml on sun4u: gdb is told the arch; `g` is 32 window
        # registers, 64 words of FP registers, then pc npc state fsr fprs y.
        gdb_setup=("set architecture sparc:v9", "set endian big"),
        gdb_registers=(">Q", (*(f"{b}{n}" for b in "goli" for n in range(8)),
                              *("",) * 32, "pc", "npc", "state", "fsr", "fprs", "y")),
        fire_path="sparc64_probe_trap",
        # illtrap <const22 = probe id>
        probe_trap={"emulate": "{id:08x}", "shellgame": "{id:08x}"},
        # Trap and emulate on the watched 8 KiB page (tracer/arch/sparc64/watch.c).
        watch_types=("w", "r", "rw"),
        watch_lengths=(1, 2, 4, 8),
        watch_slots=4,
        watch_checker="bench.check.sparc64_watch",
        max_memory_mb=256,
        exec_trap_entry=_sparc64_sync_trap,
        # pciA's slots hold the on-board devices; simba B's are free. The
        # guest numbers simba B as bus 1 and gives the device its I/O BAR
        # (guest-kernel/arch/sparc64/pci.c).
        virtio_serial_bus="bus=pciB,addr=3",
        default_channel="virtio",
        ram_backend=False,
    ),
}


class UnknownArch(UsageError):
    pass


def available() -> list[str]:
    """Arches with both a host entry and a guest port, in table order."""
    return [name for name in ARCHES
            if (REPO / "guest-kernel" / "arch" / name / "arch.mk").exists()]


def get(name: str) -> Arch:
    if name not in available():
        raise UnknownArch(f"unknown arch '{name}': known arches are "
                          f"{', '.join(available()) or 'none'}")
    return ARCHES[name]


def by_elf_machine(machine: str) -> Arch:
    """The arch of an ELF's e_machine, or UsageError."""
    for a in ARCHES.values():
        if a.elf_machine == machine:
            return a
    raise UsageError(f"an ELF for {machine}: no arch of the bench runs it")


def names(value: str | None) -> list[str]:
    """An --arch value (one arch, a comma list, or all/empty) as arch names;
    UnknownArch for any name that is not one."""
    out = available() if value in (None, "", "all") else value.split(",")
    for n in out:
        get(n)
    return out
