"""The out-of-line path (tracer/arch/*/ool.c) and the insn provider.

Host: the guest's IA-32 length decoder (tracer/arch/i386/insn.c, compiled
for the host) gives every instruction of the whole i386 kernel, and of a
file of hand-written forms (prefixes, SIB, 0F 38/3A, immediates of every
width), the length binutils' objdump gives, and refuses exactly the
EIP-relative, trapping, shadowing, privileged and I/O ones; insn specs off
an instruction boundary are refused naming the instruction they fall in,
and `+*` leaves sparc64's delay slots out with a note.

Guests (one boot per arch): every function of the built-in workloads
gets an entry probe — the frameless leaves too (i386 `fm_leaf`,
`median`...: first instruction a mov or test, run out of line; sparc64
`fm_leaf`: a `retl`, emulated) — with no host note and no guest refusal,
and the forms workload then counts each of its functions' calls exactly.
"""

import subprocess

import pytest

from bench import arches
from bench.check import hostc
from bench.guest.qemu import Guest
from bench.trace.image import load_image
from bench.trace.session import open_session
from bench.trace.sites import SpecError, plan
from bench.trace.verify import verify

RUNNER = ("i386_insn_run", ["bench/check/c/i386_insn_run.c", "tracer/arch/i386/insn.c"],
          ("include", "tracer/arch/i386"))

# Instructions gcc rarely emits, in every shape the decoder distinguishes.
FORMS = """
    addw $0x1234, %ax; addw $0x1234, 0x10(%ebx); movw $7, (%eax)
    addl $0x12345678, 0x12345678(%eax,%ebx,4); add %eax, (%esp)
    mov 0x8(%esp,%ecx,2), %edx; mov (,%eax,4), %ecx; mov 0x11223344, %eax
    lea 0x0(%esi), %esi; nopw 0x0(%eax,%eax,1); nopl 0x0(%eax)
    imul $0x1234567, %eax, %ecx; imul $3, (%ebx), %edx; testb $1, 3(%eax)
    testl $0x10000, (%ecx); testw $3, %ax; rep movsl; rep stosb; lock incl (%eax)
    lock cmpxchg %ecx, (%edx); xchg %eax, %ebx; cmovne %eax, %ebx; sete %al
    shld $3, %eax, %ebx; bswap %eax; pshufd $0x1b, %xmm0, %xmm1; pshufb %xmm1, %xmm2
    palignr $4, %xmm1, %xmm2; movd %eax, %xmm0; fldl 8(%esp); fstps (%eax)
    rdtsc; cpuid; push $0x12345678; push $1; pushw $0x1234; movzbl (%eax), %ecx
    mov %fs:(%eax), %ebx; mov %gs:0x10, %eax; jmp *%eax; jmp *0x10(,%eax,4)
    call *%eax; call 0f; 0: jmp 0b; jne 0b; jecxz 0b; int3; int $0x80; sti; cli
    hlt; popf; in $0x60, %al; outb %al, %dx; lgdt (%eax); mov %eax, %cr3; ud2
    mov %eax, %ds; les (%eax), %ebx; ret; ret $8; lret; enter $8, $0; leave
"""
REFUSED = {"call", "jne", "jecxz", "int3", "int", "sti", "cli", "hlt", "popf",
           "in", "out", "lgdtl", "ud2", "les", "ret", "lret"}


def _refused(text: str) -> bool:
    """Whether insn.c must refuse the instruction objdump printed as text."""
    m = text.split()[0]
    ops = text[len(m):].replace(" ", "")
    if m == "jmp":
        return not ops.startswith("*")             # relative; indirect is fine
    if m == "call":
        return True                                # relative or indirect
    if m == "mov":
        return "%cr" in ops or ops.endswith("%ds")
    return m in REFUSED


def _lengths(exe, code: bytes, offsets, tmp_path):
    path = tmp_path / "code.bin"
    path.write_bytes(code)
    out = subprocess.run([str(exe), str(path)], input="\n".join(map(str, offsets)),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [tuple(map(int, line.split())) for line in out if line]


def _objdump(obj):
    """(offset, bytes, text) per instruction of a 32-bit object's .text."""
    out = subprocess.run(["objdump", "-d", "-w", str(obj)], capture_output=True,
                         text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        bits = line.split("\t")
        if len(bits) >= 3 and bits[0].strip().endswith(":"):
            rows.append((int(bits[0].strip()[:-1], 16), bytes.fromhex(bits[1]),
                         bits[2].strip()))
    return rows


@pytest.fixture(scope="module")
def runner():
    return hostc.build(*RUNNER)


def test_length_decoder_agrees_with_objdump_on_the_kernel(built, runner, tmp_path):
    built("i386")
    img = load_image(arches.get("i386").elf())
    insns = [i for f in img.functions.values() for i in f.insns]
    got = _lengths(runner, img.text, [i.addr - img.text_addr for i in insns], tmp_path)
    bad = [f"{i.addr:#x} `{i.text}` {i.raw.hex()}: objdump {len(i.raw)}, ours {n}"
           for i, (n, _) in zip(insns, got) if n != len(i.raw)]
    assert len(got) == len(insns) > 20000
    assert not bad, f"{len(bad)} lengths differ:\n" + "\n".join(bad[:20])
    # Relocatable: never a relative CTI or a trap; the prologue's mov is.
    kinds = {}
    for i, (_, ok) in zip(insns, got):
        kinds.setdefault(i.mnemonic, set()).add(ok)
    for m in ("call", "jne", "je", "ret", "int3", "ud2", "hlt", "cli", "lidtl"):
        assert kinds.get(m, {0}) == {0}, (m, kinds.get(m))
    for m in ("mov", "add", "push", "pop", "lea", "cmp", "test", "xor"):
        assert 1 in kinds[m], m


def test_length_decoder_on_hand_written_forms(runner, tmp_path):
    src, obj = tmp_path / "forms.s", tmp_path / "forms.o"
    src.write_text(".text\n" + FORMS.replace(";", "\n") + "\n")
    subprocess.run(["as", "--32", "-o", str(obj), str(src)], check=True,
                   capture_output=True)
    rows = _objdump(obj)
    code = bytearray(rows[-1][0] + len(rows[-1][1]))
    for off, raw, _ in rows:
        code[off:off + len(raw)] = raw
    got = _lengths(runner, bytes(code), [r[0] for r in rows], tmp_path)
    bad = [f"`{text}` {raw.hex()}: objdump {len(raw)}, ours {n}"
           for (_, raw, text), (n, _) in zip(rows, got) if n != len(raw)]
    assert len(rows) > 60 and not bad, "\n".join(bad)
    wrong = [f"`{text}`: {'relocatable' if ok else 'refused'}"
             for (_, raw, text), (_, ok) in zip(rows, got) if _refused(text) == bool(ok)]
    assert not wrong, "\n".join(wrong)


def test_insn_specs_name_what_is_wrong(built):
    built("i386")
    built("sparc64")
    i386 = load_image(arches.get("i386").elf())
    with pytest.raises(SpecError, match=r"offset 0x2 is not an instruction boundary: "
                       r"it is inside `mov +%esp,%ebp` at \+0x1 \(2 bytes\)"):
        plan("insn:fib+2", i386, "int3")
    with pytest.raises(SpecError, match="not a byte count"):
        plan("insn:fib+x", i386, "int3")
    with pytest.raises(SpecError, match="past the function"):
        plan("insn:fib+0x10000", i386, "int3")
    probes, notes = plan("insn:fib+*", i386, "int3")
    f = i386.functions["fib"]
    assert [p.addr for p in probes] == [i.addr for i in f.insns] and not notes
    assert probes[1].spec == "insn:fib+0x1"
    sparc = load_image(arches.get("sparc64").elf())
    probes, notes = plan("insn:fib+*", sparc, "emulate")
    f = sparc.functions["fib"]
    assert len(probes) < len(f.insns) and "delay slots have no insn probe" in notes[0]
    assert all(p.addr % 4 == 0 for p in probes)


def test_every_workload_function_has_an_entry_probe(built, arch):
    built(arch)
    a = arches.get(arch)
    with Guest(a, label=f"ool-entries-{arch}") as g:
        s = open_session(g)
        s.setup("fbt:*:entry", a.default_mechanism, strict=False)
        missing = list(s.notes)
        s.enable(True)
        s.must("run forms n=2")
        s.enable(False)
        cap = s.finish()
        g.exit(0)
    assert not missing, "functions without an entry probe:\n" + "\n".join(missing)
    names = {f.name for f in s.image.workload_functions()}
    assert {p.function for p in s.probes} == names
    rep = verify(cap, s.probes, g.link_errors)
    assert rep.ok, rep.problems
    assert rep.entries["fm_leaf"] == rep.expected["fm_leaf"] > 0
