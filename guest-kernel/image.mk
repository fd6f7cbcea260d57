# image.mk — build one guest image: make -f guest-kernel/image.mk ARCH=<arch>
#
# The arch-neutral kernel (core/, workloads/), the tracer (tracer/core/,
# tracer/workloads/: the workloads that measure the tracer itself) plus the
# arch's own sources, named by guest-kernel/arch/<arch>/arch.mk, which also
# gives the cross compiler, flags, linker script and the final image files.
# Objects and images land in build/<arch>/; dependencies are tracked with
# -MMD so a header change rebuilds what includes it.
#
# include/ holds what the kernel, the tracer and the host share (wire.h,
# frame.h); guest-kernel/include and tracer/include hold each side's own.
# The kernel's sources (guest-kernel/, firmware/) are compiled without
# tracer/include, so the kernel cannot name a tracer header: it knows the
# tracer only through the hooks and sections the tracer registers with.
#
# Neither arch directory is on the include path: $(OUT)/include holds two
# links, arch -> guest-kernel/arch/$(ARCH) and tarch -> tracer/arch/$(ARCH),
# so an arch header included from outside its own directory names its
# tree ("arch/trapframe.h", "tarch/tracer_site.h") and no name can resolve
# in the wrong one. A file's includes from its own directory stay plain.

ifeq ($(wildcard guest-kernel/arch/$(ARCH)/arch.mk),)
$(error unknown ARCH '$(ARCH)': known are $(notdir $(wildcard guest-kernel/arch/*)))
endif

# USER_SRC: a user's C file with its own WORKLOAD() linked in as well
# (`python3 -m bench run --workload FILE.c`); build it into its own OUT.
# KOBJ: where the kernel's objects are (default $(OUT)/obj). A user image
# links the arch image's own objects (KOBJ=build/<arch>/obj, built first by
# bench/guest/build.py) and compiles only the user's file: the same flags
# make the same objects, and a kernel build per workload cost a minute.
OUT ?= build/$(ARCH)
KOBJ ?= $(OUT)/obj
.DEFAULT_GOAL := all
include guest-kernel/arch/$(ARCH)/arch.mk

CC := $(CROSS)gcc
OBJCOPY := $(CROSS)objcopy

CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-stack-protector \
	-fno-omit-frame-pointer -fno-optimize-sibling-calls \
	-fno-asynchronous-unwind-tables \
	-Wall -Wextra -Werror -Wno-unused-parameter \
	$(ARCH_CFLAGS) -MMD -MP

KERNEL_INCLUDES := -Iinclude -Iguest-kernel/include -I$(OUT)/include
INCLUDES := $(KERNEL_INCLUDES) -Itracer/include
$(KOBJ)/guest-kernel/% $(KOBJ)/firmware/%: INCLUDES := $(KERNEL_INCLUDES)

# The built-in workloads, the kernel's and the tracer's, in one order by
# file name wherever they live: the link order places their descriptors in
# .workloads (the order `workloads` lists them) and their code in the
# workload text (kernel.ld), so moving a workload between trees moves
# nothing in the image.
WORKLOAD_SRCS := $(wildcard guest-kernel/workloads/*.c tracer/workloads/*.c)
WORKLOAD_SRCS := $(foreach f,$(sort $(notdir $(WORKLOAD_SRCS))),$(filter %/$(f),$(WORKLOAD_SRCS)))

SRCS := $(wildcard guest-kernel/core/*.c) $(WORKLOAD_SRCS) \
	$(wildcard tracer/core/*.c tracer/arch/$(ARCH)/*.c tracer/arch/$(ARCH)/*.S) \
	$(ARCH_SRCS)
OBJS := $(patsubst %,$(KOBJ)/%.o,$(SRCS))
ifneq ($(USER_SRC),)
USER_OBJ := $(OUT)/obj/user/$(notdir $(USER_SRC)).o
OBJS += $(USER_OBJ)
$(USER_OBJ): $(USER_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCLUDES) -c -o $@ $<
# A workload FILE.c may bring FILE.mk beside it: rules for what its source
# needs first (headers and sources unpacked into $(OUT)/include, which
# INCLUDES searches), as prerequisites of $(USER_OBJ).
-include $(basename $(USER_SRC)).mk
endif

# INSTRUMENT: sources built with -finstrument-functions, whose calls to
# __cyg_profile_func_enter/exit (tracer/core/hooks.c) are the bench's
# compiler-hook baseline; such an image goes to its own OUT.
ifneq ($(INSTRUMENT),)
$(patsubst %,$(KOBJ)/%.o,$(INSTRUMENT)): CFLAGS += -finstrument-functions
endif

# The code every probe firing runs — the tracer's own (not its self-tests,
# whose code the self-tests probe) and the arch's trap path, FIRE_PATH_SRCS
# of arch.mk — is built with arch.mk's FIRE_PATH_CFLAGS: on sparc64
# -fomit-frame-pointer, which lets a leaf routine run in its caller's
# register window instead of opening one with `save` (a save past the free
# windows is a spill trap, the restore into a spilled window a fill trap).
# None of it is ever probed, so no entry probe is lost. Not peek.c: what
# runs under trap_try must open its own window, because arch_longjmp
# refills trap_try's window from the %sp it saved, and a windowless leaf
# that moved %sp before it faulted had trap_try's registers spilled
# elsewhere (seen: a program's load from an unmapped page hung the guest).
FIRE_PATH_OBJS := $(patsubst %,$(KOBJ)/%.o,$(filter-out %/selftest_%, \
	$(filter-out tracer/core/peek.c,$(wildcard tracer/core/*.c tracer/arch/$(ARCH)/*.c))) \
	$(FIRE_PATH_SRCS))
$(FIRE_PATH_OBJS): CFLAGS += $(FIRE_PATH_CFLAGS)

all: $(IMAGES)

# The two links, absolute so that any OUT works; made when missing (or
# dangling, in a moved checkout), before anything is compiled.
INCLUDE_LINKS := $(OUT)/include/arch $(OUT)/include/tarch
$(OUT)/include/arch: LINK_TARGET := guest-kernel/arch/$(ARCH)
$(OUT)/include/tarch: LINK_TARGET := tracer/arch/$(ARCH)
$(INCLUDE_LINKS):
	@mkdir -p $(dir $@)
	ln -sfn $(abspath $(LINK_TARGET)) $@
$(OBJS): | $(INCLUDE_LINKS)

$(OUT)/kernel.elf: $(OBJS) $(LDSCRIPT)
	$(CC) $(CFLAGS) $(ARCH_LDFLAGS) -Wl,-z,noexecstack -nostdlib -T $(LDSCRIPT) -o $@ $(OBJS) -lgcc

$(KOBJ)/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCLUDES) -c -o $@ $<

$(KOBJ)/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCLUDES) -D__ASSEMBLY__ -c -o $@ $<

-include $(OBJS:.o=.d)

.PHONY: all
