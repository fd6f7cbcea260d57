"""The conversation with a guest: its frames in, command lines out.

The guest speaks first (HELLO: arch, word size, byte order, clock, trace
channel, or why it has none); then every command line gets one numbered
REPLY, the TEXT and RESULT frames before it being its output. The trace's
frames (EVENTS, STATS, ...) are kept as they come; capture() decodes them.
A REPLY says how many frames the guest had put on the virtio stream and
command() reads that stream up to them (under shm: reads every ring once
more), so a reply never overtakes its records (pause_channel() stops
reading it: a host that falls behind). The
end is an EXIT frame whose status must agree with QEMU's exit code
(guest-kernel/include/exit.h says why). Every wait has a deadline: past
it QEMU is killed, the logs kept, and GuestTimeout names what was awaited.
Conversation is a mixin of Guest (bench/guest/qemu.py), whose reader
threads fill the queue it reads and whose process it kills and reaps.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field

from ..errors import (GuestExited, GuestTimeout, LaunchError, ProtocolError,
                      UsageError)
from ..wire import cdefs, records
from ..wire import frames as wire
from . import symbols

EXIT_H = cdefs.load("guest-kernel/include/exit.h")
EXIT_NAMES = {e.value: e.name for e in EXIT_H.table("EXIT_STATUSES")}
EXIT_STATUS = {e.name: e.value for e in EXIT_H.table("EXIT_STATUSES")}

_EOF = object()


@dataclass(frozen=True)
class _OnChannel:
    """A frame or link error of the virtio stream, as queued."""
    item: object


def exit_status_name(status: int | None) -> str:
    if status is None:
        return "none"
    return EXIT_NAMES.get(status, f"user status {status}")


@dataclass
class Reply:
    status: int
    message: str
    number: int
    text: list[str] = field(default_factory=list)      # TEXT lines before it
    results: list[dict] = field(default_factory=list)  # RESULT frames before it

    @property
    def status_name(self) -> str:
        return wire.REPLY_NAMES.get(self.status, f"status {self.status}")

    @property
    def ok(self) -> bool:
        return self.status == wire.REPLY_STATUS["OK"].value


@dataclass
class ExitInfo:
    status: int
    rc: int | None          # QEMU's exit code; None where it is not seen (libvirt)
    text: list[str]
    end: str = ""           # how the backend saw QEMU end, when not by rc

    @property
    def status_name(self) -> str:
        return exit_status_name(self.status)


class Conversation:
    """The protocol half of a Guest (see the module's docstring)."""

    def wait_ready(self, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.boot_timeout)
        while self.hello is None:
            ev = self._next(deadline, "the HELLO frame (boot)")
            if ev is _EOF:
                rc = self._reap(5)
                raise LaunchError(
                    f"QEMU exited with rc {rc} before the guest said HELLO"
                    + self._stderr_note(), **self._context())
            if isinstance(ev, wire.Frame) and ev.type == wire.T_HELLO:
                self.hello = wire.decode_hello(ev.payload)
                self.byte_order = wire.byte_order_of(ev.payload)
                self.boot_seconds = time.perf_counter() - self._t0
                self._note(f"== HELLO {self.hello}")
                self.channel_used = wire.CHANNELS.get(self.hello["channel"], "serial")
                if self.channel == "virtio" and self.channel_used != "virtio":
                    self.channel_absent = self.command("channel").message.partition(
                        "absent (")[2].rstrip(")") or "no reason given"
                    self._note("# the guest found no virtio trace port, so the "
                               f"trace comes over the 16550: {self.channel_absent}")
                if self.channel == "shm":
                    self._start_shm()
                if self.hello["arch_name"] != self.arch.name:
                    raise ProtocolError(f"expected a {self.arch.name} guest, "
                                        f"HELLO says {self.hello['arch_name']}",
                                        **self._context())
            else:
                self._handle(ev)
        return self.hello

    def command(self, line: str, timeout: float | None = None) -> Reply:
        """Send one command line; return its REPLY. Raises GuestExited if the
        guest stops instead (a crash, or `exit`), GuestTimeout if it is
        silent too long."""
        self._send(line)
        deadline = time.monotonic() + (timeout or self.command_timeout)
        text_start = len(self.text)
        results = []
        while True:
            ev = self._next(deadline, f"the reply to {line!r}")
            if ev is _EOF or (isinstance(ev, wire.Frame) and ev.type == wire.T_EXIT):
                self._handle(ev)
                info = self.wait_exit(10)
                raise GuestExited(
                    f"guest stopped with status {info.status} "
                    f"({info.status_name}) instead of answering {line!r}",
                    status=info.status, status_name=info.status_name,
                    **self._context())
            if isinstance(ev, wire.Frame) and ev.type == wire.T_REPLY:
                status, number, message = wire.decode_reply(ev.payload, self.byte_order)
                self._note(f"<< {wire.REPLY_NAMES.get(status, status)} "
                           f"#{number}: {message}")
                self._await_channel(
                    wire.reply_channel_frames(ev.payload, self.byte_order), deadline)
                if number != self._commands_sent:
                    raise ProtocolError(f"reply #{number} to command "
                                        f"#{self._commands_sent} {line!r}",
                                        **self._context())
                return Reply(status, message, number, self.text[text_start:], results)
            if isinstance(ev, wire.Frame) and ev.type == wire.T_RESULT:
                res = wire.decode_result(ev.payload, self.byte_order)
                self._note(f"== RESULT {res}")
                results.append(res)
                continue
            self._handle(ev)

    def _await_channel(self, frames: int, deadline: float) -> None:
        """Read the virtio stream up to `frames` frames (a REPLY's count),
        unless its reading is paused or it has ended; under shm, one more
        poll of every ring."""
        if self._shm:
            self._shm.drain()
        def behind() -> bool:
            return 0 < (frames - self._chan_next) & 0xffffffff < 1 << 31
        while (self._chan_reading and not self._chan_paused.is_set() and
               not self._chan_eof and behind()):
            self._handle(self._next(deadline, f"the trace channel's frames "
                                              f"up to seq {frames - 1}"))

    def pause_channel(self, paused: bool = True) -> None:
        """Stop (or resume) reading the trace channel: QEMU's socket fills
        and the guest's virtio port with it, as with a host that falls
        behind; under shm the consumer process is stopped (SIGSTOP) and the
        rings fill."""
        if paused:
            self._chan_paused.set()
        else:
            self._chan_paused.clear()
        if self._shm:
            self._shm.pause(paused)

    def exit(self, status: int = 0, timeout: float = 10) -> ExitInfo:
        self._send(f"exit {status}")
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = 10) -> ExitInfo:
        """Wait for the guest to stop; check EXIT frame against QEMU's rc."""
        if self.exit_info:
            return self.exit_info
        deadline = time.monotonic() + timeout
        while not self._eof:
            self._handle(self._next(deadline, "the guest to exit"))
        rc = self._reap(max(0.1, deadline - time.monotonic()))
        status = self._exit_status
        if status is None:
            raise GuestExited(f"QEMU exited with rc {rc} and the guest sent no "
                              "EXIT frame" + self._stderr_note(),
                              status=None, status_name="none", **self._context())
        if rc != ((status << 1) | 1) & 0xff:
            raise ProtocolError(f"guest said EXIT {status} but QEMU exited with "
                                f"rc {rc} (expected {((status << 1) | 1) & 0xff})"
                                + self._stderr_note(), **self._context())
        self.exit_info = ExitInfo(status, rc, list(self.text))
        return self.exit_info

    def capture(self, since: int = 0) -> records.Capture:
        """The trace frames from trace_frames[since:] decoded (bench/wire/
        records.py), in this guest's word size and byte order."""
        return records.decode(self.trace_frames[since:], self.byte_order,
                              self.hello["word_bytes"])

    def _send(self, line: str) -> None:
        if "\n" in line:
            raise UsageError(f"a command is one line: {line!r}")
        self._commands_sent += 1
        self._note(f">> {line}")
        self._write_serial(line.encode("utf-8", "surrogateescape") + b"\n")

    def _next(self, deadline: float, what: str):
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise queue.Empty
            return self._events.get(timeout=left)
        except queue.Empty:
            self.kill()
            self._reap(5)
            raise GuestTimeout(f"timed out waiting for {what}; QEMU killed",
                               **self._context()) from None

    def _handle(self, ev) -> None:
        if ev is _EOF:
            self._eof = True
            return
        if isinstance(ev, _OnChannel):
            item = ev.item
            if item is _EOF:
                self._chan_eof = True
            elif isinstance(item, wire.LinkError):
                self.link_errors.append(item)
                self._note(f"!! {item}")
                if item.kind == "gap":
                    self._chan_next = (self._chan_next + item.count) & 0xffffffff
            elif item.type in wire.TRACE_TYPES:
                self._chan_next = (item.seq + 1) & 0xffffffff
                self.trace_frames.append(item)
            else:
                self._chan_next = (item.seq + 1) & 0xffffffff
                self._note(f"?? unexpected {item.type_name} frame seq {item.seq} "
                           "on the virtio stream")
            return
        if isinstance(ev, wire.LinkError):
            self.link_errors.append(ev)
            self._note(f"!! {ev}")
        elif ev.type == wire.T_TEXT:
            for line in ev.payload.decode("utf-8", "replace").splitlines():
                line = self._symbolize(line)
                self.text.append(line)
                self._note(line)
                if self.on_text:
                    self.on_text(line)
        elif ev.type == wire.T_EXIT:
            self._exit_status = wire.decode_exit(ev.payload, self.byte_order)
            self._note(f"== EXIT {self._exit_status} "
                       f"({exit_status_name(self._exit_status)})")
        elif ev.type in wire.TRACE_TYPES:
            self.trace_frames.append(ev)
        elif ev.type == wire.T_HELLO:
            raise ProtocolError("second HELLO: the guest rebooted", **self._context())
        else:
            self._note(f"?? unexpected {ev.type_name} frame seq {ev.seq}")

    def _symbolize(self, line: str) -> str:
        """Name the code behind program counters in trap dumps."""
        regs = self.arch.pc_registers
        if not regs or not any(r in line for r in regs):
            return line
        if self._symbols is None:
            self._symbols = symbols.for_elf(self.elf) or False
        return symbols.annotate(line, regs, self._symbols or None)
