"""The commands a person uses by hand around the bench: cmd sends command
lines to a booted guest and prints its answers (and its results' rates),
image builds the guests' images, and daemon keeps private libvirt session
daemons on loopback TCP as stand-ins for remote matrix hosts until
interrupted. (debug is bench/debug/debugger.py's; export is
bench/commands/export.py.)
"""

from __future__ import annotations

import time

from .. import arches
from ..errors import EXIT_FAILED, EXIT_OK, GuestExited, UsageError
from ..guest import build, libvirtd
from ..guest.backend import open_guest
from ..paths import BUILD


def cmd_cmd(args) -> int:
    arch = arches.get(args.arch)
    build.ensure_image(arch)
    worst = EXIT_OK
    with open_guest(arch, label="cmd", smp=args.smp,
                    on_text=lambda l: print(l, flush=True)) as g:
        for line in args.commands:
            print(f">> {line}", flush=True)
            try:
                r = g.command(line)
            except GuestExited as e:      # `exit N`, or a crash
                print(f"guest exited with status {e.status} ({e.status_name})")
                return EXIT_OK if e.status == 0 else EXIT_FAILED
            for res in r.results:
                secs = res["cycles"] / g.hello["cycles_hz"]
                print(f"result {res['name']}: value={res['value']} "
                      f"cycles={res['cycles']} ({secs * 1e3:.2f} ms, "
                      f"{res['value'] / secs:,.0f} per second) status={res['status']}")
            print(f"<< {r.status_name}: {r.message}", flush=True)
            worst = max(worst, EXIT_OK if r.ok else EXIT_FAILED)
        g.exit(0)
    return worst


def cmd_image(args) -> int:
    for name in arches.names(args.arch):
        build.ensure_image(arches.get(name))
        print(f"{name}: {arches.get(name).image()}")
    return EXIT_OK


def cmd_daemon(args) -> int:
    """Private session daemons listening on 127.0.0.1 (bench/guest/libvirtd.py),
    as stand-ins for remote hosts, until interrupted."""
    if len(set(args.tcp_port)) != len(args.tcp_port) or \
            not all(0 < p < 65536 for p in args.tcp_port):
        raise UsageError("--tcp-port: distinct ports from 1 to 65535")
    daemons = []
    try:
        for port in args.tcp_port:
            d = libvirtd.PrivateDaemon(BUILD / "libvirt" / f"tcp{port}", tcp_port=port)
            daemons.append(d)
            d.start()
            print(f"libvirt: {d.tcp_uri} (pid {d.proc.pid}, logs in {d.root})",
                  flush=True)
        print("HOSTS='" + " ".join(d.tcp_uri for d in daemons) + "'; Ctrl-C stops "
              "them", flush=True)
        while all(d.proc.poll() is None for d in daemons):
            time.sleep(1)
        gone = [d.tcp_uri for d in daemons if d.proc.poll() is not None]
        print(f"libvirt: daemon exited: {' '.join(gone)}", flush=True)
        return EXIT_FAILED
    finally:
        for d in daemons:
            d.stop()
