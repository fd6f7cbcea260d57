# arch.mk — how guest-kernel/image.mk builds the sparc64 image.
# Debian's sparc64-linux-gnu-gcc. medlow: every kernel address fits in 32
# bits (the PROM, linked above 4 GiB, is assembly and uses setx). No FPU:
# PSTATE.PEF stays clear, so a stray FP instruction traps (fp_disabled).
CROSS        := sparc64-linux-gnu-
ARCH_CFLAGS  := -m64 -mcpu=ultrasparc -mcmodel=medlow -mno-fpu -fno-pic -fno-pie
# The fire path's own code runs leaf routines without a window (image.mk).
FIRE_PATH_SRCS   := guest-kernel/arch/sparc64/trap.c
FIRE_PATH_CFLAGS := -fomit-frame-pointer
# Text, data and BSS share one LOAD segment (the PROM copies one range), so
# ld would warn that it is RWX; the MMU, not the ELF, protects text here.
ARCH_LDFLAGS := -no-pie -static -Wl,--build-id=none -Wl,--no-warn-rwx-segments
ARCH_SRCS    := firmware/sparc64/prom.S \
                $(wildcard guest-kernel/arch/sparc64/*.c guest-kernel/arch/sparc64/*.S)
LDSCRIPT     := guest-kernel/arch/sparc64/kernel.ld
# What the harness boots: prom.bin through -bios. kernel.elf carries the
# symbols (PROM and kernel) for the host.
IMAGES       := $(OUT)/kernel.elf $(OUT)/prom.bin

# This file is read before image.mk's `all`, so our rule below would
# otherwise become the default goal.
.DEFAULT_GOAL := all

# PROM_SIZE_MAX of QEMU's sun4u: a bigger -bios image is refused.
PROM_MAX_BYTES := 4194304

$(OUT)/prom.bin: $(OUT)/kernel.elf
	$(OBJCOPY) -O binary $< $@
	@size=$$(stat -c %s $@); if [ $$size -gt $(PROM_MAX_BYTES) ]; then \
		echo "$@: $$size bytes, more than QEMU's $(PROM_MAX_BYTES)-byte PROM" >&2; \
		rm -f $@; exit 1; fi
