/*
 * stubs.h — what the fuzz targets share with stubs.c, the host's kernel and
 * arch layer: the fixed addresses of the fake text and of the memory
 * window whose odd pages fault, the bytes the guest sent (its frames), the
 * hooks the serial stubs call, and the context a program reads.
 */
#ifndef FUZZ_STUBS_H
#define FUZZ_STUBS_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire.h"

#define STUB_STR1(x) #x
#define STUB_STR(x) STUB_STR1(x)

/* The text [FAKE_TEXT, FAKE_TEXT_END): its last page is the tracer's own
 * (notrace) code; data up to FAKE_KERNEL_END, its first page notrace. */
#define FAKE_TEXT              0x10000000
#define FAKE_TEXT_BYTES        0x4000
#define FAKE_TEXT_END          0x10004000
#define FAKE_NOTRACE           0x10003000
#define FAKE_NOTRACE_END       0x10004000
#define FAKE_NOTRACE_DATA_END  0x10005000
#define FAKE_KERNEL_END        0x10008000
/* The window programs read: 64 KiB, every odd page PROT_NONE. */
#define FAKE_MAP               0x20000000
#define FAKE_MAP_BYTES         0x10000
#define FAKE_TRAP              0xfeedf00du  /* what tarch_arm stores */
#define FAKE_REFUSED           0xaa         /* FAKE_TEXT's first byte */

#define STUB_OUT_BYTES (1u << 22)
extern uint8_t stub_out[STUB_OUT_BYTES];
extern size_t stub_out_len;
extern const uint8_t *stub_in;
extern size_t stub_in_len, stub_in_at;
extern jmp_buf stub_stop;             /* 1: input used up; 2: exit; 3: hang */
extern unsigned long stub_faults;     /* traps caught by trap_try */
extern uint8_t stub_original[FAKE_TEXT_BYTES];

/* Called by the serial stubs: a whole line was read ('\n' handed out),
 * bytes were written. Each target defines them. */
void stub_on_line(void);
void stub_on_write(void);

/* The context a program's reg/arg/retval read (tarch_context is opaque to
 * the tracer's core). An argument is a calling-convention word: `arg n`
 * asks for n < WIRE_PROGRAM_MAX_ARG, an argument map for k < WIRE_ARG_WORDS
 * (args.c), stack words included; arg[] holds the larger. */
#define STUB_REGS 64
#define STUB_ARGS WIRE_ARG_WORDS
_Static_assert(WIRE_PROGRAM_MAX_ARG <= STUB_ARGS, "every `arg n` has a word");
struct stub_context {
	unsigned long reg[STUB_REGS];
	unsigned long arg[STUB_ARGS];
	bool          have_args;
};

void stub_init(void);
void stub_check_text(void);

#endif
