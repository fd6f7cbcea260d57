"""Guests: building images and running them under a backend.

  build     guest images (make), user workloads, the instrumented image
  qemu      Guest: QEMU started by the harness, serial on its stdio
  libvirt   LibvirtGuest: the same guest as a transient libvirt domain
  libvirtd  a private libvirt session daemon for the libvirt backend
  backend   open_guest(): picks the backend (--backend/--connect)
  symbols   addresses to names in trap dumps
"""
