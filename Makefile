# Makefile — the one entry point. Every target that runs guests wraps
# `python3 -m bench <subcommand>` (Debian's /usr/bin/python3, which sees the
# python3-* packages); images are built by guest-kernel/image.mk per arch.
#
#   make bench [ARCH=a]          the seeds' experiments: table with targets,
#                                JSON and plots in build/bench/<arch>/ (every
#                                arch by default, one after the other)
#   make bench ONLY=firepath,A:fbt  those experiments alone (plan.py's names,
#                                BOOT:name for one boot's), with their boots;
#                                results in build/bench/<arch>/only/
#   make check [ARCH=a]          host tests (pytest) + guest self-tests
#                                + the matrix's quick group + make lint
#   make lint                    pyflakes, shellcheck, no arch named in neutral
#                                C, every path named in prose exists (ci/lint.py)
#   make deps                    install the Debian packages (ci/packages.txt);
#                                bench and check do this first (a no-op when
#                                everything is present)
#   make selftest ARCH=a [SMP=n] guest self-tests only
#   make boot-time ARCH=a [SMP=n] median boot-to-ready over 10 boots
#   make run ARCH=a [WORKLOAD=file.c] [PROBES=spec] [MECHANISM=m] [RUN='name k=v']
#            [PROGRAM=f.rpn] [CTF=dir] [PLOT=1]
#                                trace a workload (yours, or fib) and check it;
#                                a probe program (bench/programs/); also as CTF
#                                (babeltrace2), timelines in build/timeline/
#   make trace ARCH=a SCRIPT=f.d | CLAUSES='...' [WORKLOAD=file.c] [RUN='name k=v']
#            [MECHANISM=m] [JSON=file]
#                                ask the kernel in D (bench/scripts/), compiled to
#                                probe programs; DTrace's output (docs/language.md)
#   make lossless ARCH=a [SMP=4] [MECHANISM=m,...]  (default: every mechanism)
#                                10^6 firings on 8 threads: missed, dropped
#   make toggle ARCH=a [SMP=4]   arm/disarm 1000 times while 8 threads run
#   make debug ARCH=a [WORKLOAD=file.c] [PROBES=spec] [RUN='name k=v'] [MECHANISM=m]
#                                guest paused under QEMU's GDB stub, gdb-multiarch
#                                attached with the tb commands (docs/debugging.md)
#   make matrix [GROUP=quick] [ARCH=a] [JOBS=n] [HOSTS='uri1 uri2']
#                                the correctness matrix (ci/matrix.cfg): a
#                                group's cells in parallel; JUnit XML and TAP
#                                in build/matrix/ (GROUP=full: the nightly)
#   make fuzz [SECONDS=60] [TARGET=t]
#                                the libFuzzer targets over the guest's C
#                                (tests/fuzz/): each for SECONDS, crashes kept
#   make image [ARCH=a]          build guest images into build/<arch>/
#   make clean                   remove build/
#
# ARCH is i386 or sparc64; where it is optional, the default is every arch.
# MECHANISM is a probe mechanism of the arch (MODE= is its old name).

PYTHON ?= /usr/bin/python3
BENCH := $(PYTHON) -m bench
ARCH ?=
ARCH_OPT := $(if $(ARCH),--arch $(ARCH))
SMP ?= 1

PROBES ?= fbt:*:entry,fbt:*:return
MODE ?=
MECHANISM ?= $(MODE)
MECH_OPT = $(if $(MECHANISM),--mechanism $(MECHANISM))
NEED_ARCH = $(or $(ARCH),$(error $@ needs ARCH=i386 or ARCH=sparc64))

.PHONY: help deps check lint selftest boot-time bench run trace lossless toggle image clean matrix fuzz

help:
	@sed -n '2,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@ci/deps.sh

check: deps
	$(BENCH) check $(ARCH_OPT)

lint:
	$(PYTHON) ci/lint.py

selftest:
	$(BENCH) selftest --arch $(or $(ARCH),all) --smp $(SMP)

boot-time:
	$(BENCH) boot-time --arch $(or $(ARCH),$(error boot-time needs ARCH=i386 or ARCH=sparc64)) --smp $(SMP)

bench: deps
	$(BENCH) bench $(ARCH_OPT) $(if $(ONLY),--only $(ONLY))

run:
	$(BENCH) run --arch $(NEED_ARCH) --smp $(SMP) --probes '$(PROBES)' \
		$(if $(WORKLOAD),--workload $(WORKLOAD)) $(MECH_OPT) \
		$(if $(RUN),--run '$(RUN)') $(if $(CTF),--ctf $(CTF)) \
		$(if $(PROGRAM),--program $(PROGRAM)) $(if $(TEMPLATES),--templates $(TEMPLATES)) \
		$(if $(PLOT),--plot $(if $(filter 1,$(PLOT)),build/timeline,$(PLOT)))

trace:
	$(BENCH) trace --arch $(NEED_ARCH) --smp $(SMP) \
		$(if $(SCRIPT),-s $(SCRIPT)) $(if $(CLAUSES),-n '$(CLAUSES)') \
		$(if $(WORKLOAD),--workload $(WORKLOAD)) $(MECH_OPT) \
		$(if $(RUN),--run '$(RUN)') $(if $(JSON),--json $(JSON))

lossless:
	$(BENCH) lossless --arch $(NEED_ARCH) $(if $(filter-out 1,$(SMP)),--smp $(SMP)) \
		$(MECH_OPT)

toggle:
	$(BENCH) toggle --arch $(NEED_ARCH) $(if $(filter-out 1,$(SMP)),--smp $(SMP)) \
		$(MECH_OPT)

.PHONY: debug
debug:
	$(BENCH) debug --arch $(NEED_ARCH) --smp $(SMP) --probes '$(PROBES)' \
		$(if $(WORKLOAD),--workload $(WORKLOAD)) $(MECH_OPT) \
		$(if $(RUN),--run '$(RUN)') $(if $(GDB_BATCH),--batch $(GDB_BATCH))

matrix:
	$(BENCH) matrix --group $(or $(GROUP),quick) $(ARCH_OPT) $(if $(JOBS),--jobs $(JOBS)) \
		$(foreach h,$(HOSTS),--host '$(h)')

fuzz: deps
	$(BENCH) libfuzz --seconds $(or $(SECONDS),60) $(if $(TARGET),--target $(TARGET))

image:
	$(BENCH) image $(ARCH_OPT)

clean:
	rm -rf build
