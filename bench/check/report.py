"""What a check-mode run found, for either arch: how many emulations were
re-executed, per class (in the arch's order), and every mismatch as
`probe ID at ADDR CLASS: field: expected X vs actual Y`.

A record whose re-execution touched memory the guest did not record is
not compared: the model's values there would be guesses, and so would
every register they reach. Its checker says so with lines that start
UNRECORDED ("unrecorded read at ADDR (4 bytes)..."); add() counts such a
record apart, as not compared, and summary() names each."""

from __future__ import annotations

from dataclasses import dataclass, field

UNRECORDED = "unrecorded "


def unrecorded(kind: str, address: int, size: int, what: str = "") -> str:
    """A checker's line for an access the record does not hold."""
    return (f"{UNRECORDED}{kind} at {address:#010x} ({size} bytes)"
            + (f": {what}" if what else ""))


@dataclass
class CheckReport:
    """What a check found."""
    checked: int = 0
    by_form: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    order: tuple[str, ...] = ()        # the arch's classes, in report order
    not_compared: list[str] = field(default_factory=list)   # unrecorded memory
    # Records of a site's delay slot beside its own (sparc64's tramp):
    # a firing has one record, and these.
    delay_slots: int = 0

    def add(self, head: str, form: str, diffs: list[str]) -> None:
        """One checked record's diffs: none, a mismatch, or (every line an
        unrecorded access) a record not compared, no longer counted as
        checked."""
        if not diffs:
            return
        if all(d.startswith(UNRECORDED) for d in diffs):
            self.not_compared.append(f"{head}: " + "; ".join(diffs))
            self.checked -= 1
            self.by_form[form] -= 1
            if not self.by_form[form]:
                del self.by_form[form]
        else:
            self.mismatches.append(f"{head}: " + "; ".join(diffs))

    def site_of(self, rec, sites):
        """rec's probe site, or None with the mismatch reported."""
        site = sites.get(rec.probe)
        if site is None:
            self.mismatches.append(f"probe {rec.probe}: CHECK record for a "
                                   "probe with no known site")
        return site

    def summary(self) -> str:
        order = self.order
        forms = ", ".join(f"{f} {self.by_form[f]}" for f in
                          sorted(self.by_form, key=lambda f: (order.index(f)
                                 if f in order else len(order), f)))
        line = (f"check: {self.checked} emulations checked"
                f"{f' ({forms})' if forms else ''}, "
                f"{len(self.mismatches)} mismatches")
        if not self.not_compared:
            return line
        return "\n".join([f"{line}, {len(self.not_compared)} not compared (memory "
                          "the guest did not record)",
                          *(f"  UNRECORDED {n}" for n in self.not_compared[:20])])
