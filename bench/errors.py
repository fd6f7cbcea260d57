"""Errors the harness raises. Each carries what a person needs to act:
the QEMU command line, where the full serial log is kept, and the tail of
what the guest said before things went wrong."""

from __future__ import annotations


class BenchError(Exception):
    """Base: a failure with context."""

    def __init__(self, message: str, *, cmdline: str = "", log: str = "",
                 tail: str = ""):
        super().__init__(message)
        self.message = message
        self.cmdline = cmdline
        self.log = log
        self.tail = tail

    def __str__(self) -> str:
        parts = [self.message]
        if self.cmdline:
            parts.append(f"  qemu: {self.cmdline}")
        if self.log:
            parts.append(f"  log:  {self.log}")
        if self.tail:
            parts.append("  last output:")
            parts.extend("    | " + line for line in self.tail.splitlines())
        return "\n".join(parts)


class BuildError(BenchError):
    """The guest image could not be built."""


class LaunchError(BenchError):
    """QEMU did not start, or died before the guest said HELLO."""


class GuestTimeout(BenchError):
    """The guest did not answer in time; QEMU was killed."""


class GuestExited(BenchError):
    """The guest stopped while an answer was expected (crash, exit)."""

    def __init__(self, message: str, *, status: int | None, status_name: str,
                 **kw):
        super().__init__(message, **kw)
        self.status = status
        self.status_name = status_name


class ProtocolError(BenchError):
    """The guest said something the wire format does not allow."""
