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
