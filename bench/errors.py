"""Errors the harness raises, and the exit statuses they end in.

Each error carries what a person needs to act: the QEMU command line,
where the full serial log is kept, and the tail of what the guest said
before things went wrong. Every error of the harness is a BenchError; the
command line (bench/cli.py) turns it into a message and one of EXIT_STATUSES,
so nothing reaches the user as a traceback.
"""

from __future__ import annotations

# The exit statuses of `python3 -m bench`, one table (cli.main applies it).
EXIT_OK = 0            # everything asked for ran and passed
EXIT_FAILED = 1        # something ran and failed (a test, a check, a guest)
EXIT_USAGE = 2         # bad usage: an unknown arch, a bad argument or spec
EXIT_HOST = 3          # the libvirt host was unreachable or went away
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_STATUSES = {
    EXIT_OK: "passed",
    EXIT_FAILED: "ran and failed",
    EXIT_USAGE: "bad usage; nothing ran",
    EXIT_HOST: "the libvirt host could not be reached or went away",
    EXIT_INTERRUPTED: "interrupted",
}


class BenchError(Exception):
    """Base: a failure with context. Exit status EXIT_FAILED."""
    exit_status = EXIT_FAILED

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


class UsageError(BenchError):
    """What was asked for cannot be: an unknown arch or mechanism, a bad
    probe spec, an argument out of range. Nothing ran. EXIT_USAGE."""
    exit_status = EXIT_USAGE


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
        self.status = status          # the guest's exit status, if any
        self.status_name = status_name


class ProtocolError(BenchError):
    """The guest said something the wire format does not allow."""


class HostLost(BenchError):
    """The libvirt host a guest runs on could not be reached, or went away
    (its daemon died, the connection broke): not the guest's fault, so the
    matrix runs the cell again elsewhere. EXIT_HOST."""
    exit_status = EXIT_HOST

    def __init__(self, message: str, *, uri: str = "", **kw):
        super().__init__(message, **kw)
        self.uri = uri
