"""Guests: building images and running them under a backend.

  build     guest images (make), user workloads, the instrumented image
  qemu      Guest: QEMU started by the harness, serial on its stdio
  libvirt   LibvirtGuest: the same guest as a transient libvirt domain,
            on this host or another
  console   a guest's port as a libvirt stream over the connection
  volumes   images to the libvirt host, port logs back, through its pool
  libvirtd  a private libvirt session daemon (on loopback TCP too)
  backend   open_guest(): picks the backend (--backend/--connect)
  symbols   addresses to names in trap dumps
  cputime   QEMU's vCPU threads' own CPU time (schedstat)
"""
