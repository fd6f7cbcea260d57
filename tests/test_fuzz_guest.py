"""The live guest under random and mutated input (bench/suite/guestfuzz.py,
`python3 -m bench fuzz-guest`): a short run per arch (FUZZ_GUEST_COUNT
lines, default 300, a few seconds a boot; the matrix's full group sends 10^5) answers every
line, keeps the guest alive, arms nothing that was refused and leaves fib's
text whole; and the end-of-run check itself catches a listing that holds a
refused or never-enabled probe."""

import os

from bench.suite import guestfuzz

COUNT = int(os.environ.get("FUZZ_GUEST_COUNT", "300"))


def test_short_stress(arch, built):
    built(arch)
    st = guestfuzz.run(arch, COUNT, seed=1)
    assert not st.problems, st.problems
    assert st.sent == COUNT == sum(st.answered.values())
    assert st.answered.get("OK") and st.answered.get("BAD_ARGS") and st.programs_accepted


LISTING = ["probe 3 0x1000 entry enabled nargs=0 mechanism=int3 action=record hits=0",
           "probe 4 0x1004 entry disabled nargs=0 mechanism=int3 action=record hits=0"]


def test_listing_check_catches_what_was_refused():
    assert guestfuzz.check_listing(LISTING, {3, 4}, {3}, False) == []
    assert "add was refused" in guestfuzz.check_listing(LISTING, {3}, {3}, False)[0]
    assert "no accepted enable" in guestfuzz.check_listing(LISTING, {3, 4}, set(), False)[0]
    assert guestfuzz.check_listing(LISTING, {3, 4}, set(), True) == []


def test_ids_read_as_the_guest_reads_them():
    # 97,000 lines into a 10^5 i386 run, `probe enable 01` (answered OK: the
    # guest's parse_u64 reads decimal with its leading zero) stopped the
    # stress in int("01", 0); and `probe add 0x3 ...`, accepted, was not
    # counted as added, so probe 3 in the listing would have been a problem.
    assert [guestfuzz.guest_number(w) for w in ("01", "010", "7", "0x1f", "0X1F")] == \
        [1, 10, 7, 31, 31]
    for refused in ("", "0x", "-1", "+1", "1a", "0x1g", "\u00b2", "\u0663", "0b1"):
        assert guestfuzz.guest_number(refused) is None, refused
    assert guestfuzz._ids(["01", "0x3", "all", "\u00b2"]) == {1, 3}
