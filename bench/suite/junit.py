"""JUnit XML for CI dashboards: one <testsuite> per file, one <testcase>
per checked behaviour, failures with their message."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    name: str
    ok: bool
    message: str = ""
    seconds: float = 0.0
    skipped: str = ""       # why it did not count (an expected failure, ...)
    properties: dict[str, str] = field(default_factory=dict)   # e.g. the host


# Characters XML 1.0 cannot carry at all (guest output may hold them).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(s: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def write(path: Path, suite: str, cases: list[Case]) -> None:
    failures = sum(not c.ok for c in cases)
    skipped = sum(c.ok and bool(c.skipped) for c in cases)
    root = ET.Element("testsuite", name=suite, tests=str(len(cases)),
                      failures=str(failures), errors="0", skipped=str(skipped))
    for c in cases:
        el = ET.SubElement(root, "testcase", classname=suite, name=_text(c.name),
                           time=f"{c.seconds:.3f}")
        if c.properties:
            props = ET.SubElement(el, "properties")
            for k, v in c.properties.items():
                ET.SubElement(props, "property", name=_text(k), value=_text(v))
        if not c.ok:
            ET.SubElement(el, "failure",
                          message=_text(c.message[:200])).text = _text(c.message)
        elif c.skipped:
            ET.SubElement(el, "skipped",
                          message=_text(c.skipped[:200])).text = _text(c.message)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def counts(path: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) of a JUnit file (pytest's or ours)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tests = failed = skipped = 0
    for s in suites:
        tests += int(s.get("tests", 0))
        failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0))
    return tests - failed - skipped, failed, skipped
