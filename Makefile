# Makefile — the one entry point. Every target that runs guests wraps
# `python3 -m bench <subcommand>` (Debian's /usr/bin/python3, which sees the
# python3-* packages); images are built by guest-kernel/image.mk per arch.
#
#   make deps                    install the Debian packages (ci/packages.txt)
#   make check [ARCH=a]          host tests (pytest) + guest self-tests
#   make selftest ARCH=a [SMP=n] guest self-tests only
#   make boot-time ARCH=a [SMP=n] median boot-to-ready over 10 boots
#   make image [ARCH=a]          build guest images into build/<arch>/
#   make clean                   remove build/
#
# ARCH is i386 or sparc64; where it is optional, the default is every arch.

PYTHON ?= /usr/bin/python3
BENCH := $(PYTHON) -m bench
ARCH ?=
ARCH_OPT := $(if $(ARCH),--arch $(ARCH))
SMP ?= 1

.PHONY: help deps check selftest boot-time image clean

help:
	@sed -n '2,13p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@ci/deps.sh

check:
	$(BENCH) check $(ARCH_OPT)

selftest:
	$(BENCH) selftest --arch $(or $(ARCH),all) --smp $(SMP)

boot-time:
	$(BENCH) boot-time --arch $(or $(ARCH),$(error boot-time needs ARCH=i386 or ARCH=sparc64)) --smp $(SMP)

image:
	$(BENCH) image $(ARCH_OPT)

clean:
	rm -rf build
