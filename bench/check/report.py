"""What a check-mode run found, for either arch: how many emulations were
re-executed, per class (in the arch's order), and every mismatch as
`probe ID at ADDR CLASS: field: expected X vs actual Y`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CheckReport:
    """What a check found."""
    checked: int = 0
    by_form: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    order: tuple[str, ...] = ()        # the arch's classes, in report order

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
        return (f"check: {self.checked} emulations checked"
                f"{f' ({forms})' if forms else ''}, "
                f"{len(self.mismatches)} mismatches")
