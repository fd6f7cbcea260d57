"""A cross-CPU call waits a bounded time (guest-kernel/core/cpu.c): a CPU
that never answers IPI_CALL is a panic that names it, not a guest that
spins in silence until the harness's timeout.

The deaf CPU is made on demand: through QEMU's GDB stub the test sets
call_deaf_cpu (cpu 1 drops IPI_CALL) and shortens call_wait_seconds to 1,
then enables a probe, whose arming syncs every CPU (tracer_sync_cpus). The
same guest without the deaf CPU (and with the default 10 s bound) arms
the probe and answers, so the panic is the deaf CPU's doing; a wait with
no bound would hang past the command's timeout and fail the test as
well."""

import pytest

from bench import arches
from bench.debug import rsp
from bench.errors import GuestExited
from bench.guest.qemu import Guest
from bench.trace.session import open_session


def _poke_words(g, image, values):
    with rsp.RSPClient.connect_unix(g.wait_gdb_socket()) as stub:
        stub.halt()
        for name, value in values.items():
            stub.write_memory(image.symbols[name], value.to_bytes(4, "little"))
        stub.detach()


def _enable_with(built, deaf):
    built("i386")
    with Guest(arches.get("i386"), label="smpcall", smp=2, gdbstub=True) as g:
        s = open_session(g)
        s.setup("fbt:ct_add:entry", "int3")
        # The control keeps the default bound (10 s): a loaded host can
        # leave a vCPU unscheduled for a good part of a second.
        # call_deaf_cpu numbers from 1: 2 is cpu1.
        values = {"call_wait_seconds": 1, "call_deaf_cpu": 2} if deaf else {}
        _poke_words(g, s.image, values)
        try:
            s.cmd("probe enable all", timeout=60)
        except GuestExited as e:
            return e, g.log_path.read_text(errors="replace")
        reply = s.cmd("trace stats")
        g.exit(0)
        return reply, g.log_path.read_text(errors="replace")


def test_a_cpu_that_never_answers_is_a_panic_naming_it(built):
    got, log = _enable_with(built, deaf=False)
    assert not isinstance(got, GuestExited), (got, log[-2000:])
    assert got.ok and "PANIC" not in log, log[-2000:]

    got, log = _enable_with(built, deaf=True)
    assert isinstance(got, GuestExited), f"the guest answered: {got}"
    assert "PANIC: smp_call_others: no answer in 1 s from cpu1\n" in log, log[-2000:]
    # Only the deaf CPU is named.
    assert "cpu0" not in log.split("PANIC:")[1].splitlines()[0], log[-2000:]


if __name__ == "__main__":
    pytest.main([__file__])
