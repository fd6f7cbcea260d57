# arch.mk — how guest-kernel/image.mk builds the i386 image.
# Debian's i686-linux-gnu-gcc (gcc-multilib conflicts with the sparc64
# cross compiler, so the host gcc's -m32 is not an option).
CROSS        := i686-linux-gnu-
ARCH_CFLAGS  := -m32 -march=i686 -mgeneral-regs-only -fno-pic -fno-pie
ARCH_LDFLAGS := -m32 -no-pie -static -Wl,--build-id=none
ARCH_SRCS    := firmware/i386/multiboot.S \
                $(wildcard guest-kernel/arch/i386/*.c guest-kernel/arch/i386/*.S)
LDSCRIPT     := guest-kernel/arch/i386/kernel.ld
# The fire path takes no indirect jump for a switch (image.mk).
FIRE_PATH_SRCS   := guest-kernel/arch/i386/idt.c
FIRE_PATH_CFLAGS := -fno-jump-tables
# What the harness boots: the ELF itself, through QEMU's multiboot loader.
IMAGES       := $(OUT)/kernel.elf
