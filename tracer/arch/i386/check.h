/*
 * check.h — the words of an i386 CHECK record (wire.h), in order: the
 * registers before the emulation (I386_CHECK_REGS order), the registers
 * after, then the one stack word the instruction touched: its address, its
 * value before and after (the word read by pop/ret/leave, or written by
 * push/enter; address 0 if none). The host (bench/check/i386.py)
 * re-executes the original instruction from the "before" state in
 * python3-unicorn and compares with "after", field by field. An opt
 * probe's record has a layout of its own (I386_CHECK_OPT, below), and so
 * has an out-of-line site's (I386_CHECK_OOL, below that).
 */
#ifndef I386_CHECK_H
#define I386_CHECK_H

/* X(name, index, meaning) */
#define I386_CHECK_REGS(X) \
	X(EAX, 0, "eax") X(ECX, 1, "ecx") X(EDX, 2, "edx") X(EBX, 3, "ebx") \
	X(ESP, 4, "esp") X(EBP, 5, "ebp") X(ESI, 6, "esi") X(EDI, 7, "edi") \
	X(EIP, 8, "eip") X(EFLAGS, 9, "eflags")

/* The words after the two register sets. X(name, index, meaning) */
#define I386_CHECK_STACK(X) \
	X(STACK_ADDR,   20, "address of the stack word the instruction touched, 0 if none") \
	X(STACK_BEFORE, 21, "its value before") \
	X(STACK_AFTER,  22, "its value after")

#define I386_CHECK_NREGS   10
#define I386_CHECK_WORDS   23

/* The tables as C enums: I386_CHECK_EAX .. I386_CHECK_EFLAGS index a
 * register set, I386_CHECK_STACK_ADDR .. _AFTER the record itself. */
#define I386_CHECK_ENUM(name, index, meaning) I386_CHECK_##name = index,
enum i386_check_reg   { I386_CHECK_REGS(I386_CHECK_ENUM) };
enum i386_check_stack { I386_CHECK_STACK(I386_CHECK_ENUM) };
#undef I386_CHECK_ENUM

_Static_assert(I386_CHECK_EFLAGS + 1 == I386_CHECK_NREGS,
	       "check.h: I386_CHECK_REGS numbers 0..NREGS-1");
_Static_assert(I386_CHECK_STACK_ADDR == 2 * I386_CHECK_NREGS,
	       "check.h: the stack words follow both register sets");
_Static_assert(I386_CHECK_STACK_AFTER + 1 == I386_CHECK_WORDS &&
	       I386_CHECK_WORDS == 2 * I386_CHECK_NREGS + 3,
	       "check.h: a record is two register sets and three stack words");

/*
 * An opt probe's CHECK record (opt_check.c) is longer: the two register
 * sets as above — before: the state at the site as the detour's frame (or
 * the int3 stage's trap frame) holds it; after: the state the copies of the
 * displaced instructions left, EIP = site + their length — then the bytes
 * displaced and a window of the stack around ESP before, its words before
 * the copies run and after. The copies push (at most five times: they stop
 * at five bytes) and load through ESP and EBP near it, so the window spans
 * I386_CHECK_OPT_BELOW words below ESP before and the rest above. Words
 * below ESP after are dead (the detour's own calls write there) and not
 * compared. The host (bench/check/i386.py) runs the site's own bytes in
 * unicorn from the "before" state over the "before" window, and reports
 * any access the copies make outside the window. X(name, index, meaning)
 */
#define I386_CHECK_OPT(X) \
	X(OPT_LEN,    20, "bytes the jmp displaced: the copies ran site .. site + len") \
	X(OPT_WIN,    21, "address of the window's first word: ESP before - 4 * I386_CHECK_OPT_BELOW") \
	X(OPT_BEFORE, 22, "the window's first word before the copies ran; I386_CHECK_OPT_WINDOW of them") \
	X(OPT_AFTER,  38, "the window's first word after; I386_CHECK_OPT_WINDOW of them")

#define I386_CHECK_OPT_WINDOW  16
#define I386_CHECK_OPT_BELOW   6
#define I386_CHECK_OPT_WORDS   54

#define I386_CHECK_ENUM(name, index, meaning) I386_CHECK_##name = index,
enum i386_check_opt { I386_CHECK_OPT(I386_CHECK_ENUM) };
#undef I386_CHECK_ENUM

_Static_assert(I386_CHECK_OPT_LEN == 2 * I386_CHECK_NREGS &&
	       I386_CHECK_OPT_BEFORE == I386_CHECK_OPT_WIN + 1 &&
	       I386_CHECK_OPT_AFTER == I386_CHECK_OPT_BEFORE + I386_CHECK_OPT_WINDOW &&
	       I386_CHECK_OPT_WORDS == I386_CHECK_OPT_AFTER + I386_CHECK_OPT_WINDOW,
	       "check.h: an opt record is two register sets, len, the window's "
	       "address and its words before and after");
_Static_assert(I386_CHECK_OPT_WORDS != I386_CHECK_WORDS,
	       "check.h: the host tells the layouts apart by their length");

/*
 * An out-of-line site's CHECK record (ool_check.c): the two register sets
 * as above — before: the state at the site; after: the state the slot's
 * copy left, EIP = site + len — then the instruction's length, a window
 * of I386_CHECK_OOL_STACK_WORDS stack words from ESP before - 4 *
 * I386_CHECK_OOL_STACK_BELOW (push and pop, of a register or of memory,
 * touch one word there), and its memory operand: the effective address the
 * guest computed from the "before" registers (ModRM/SIB or moffs), whether
 * the I386_CHECK_OOL_MEM_WORDS words from there were read (1), the
 * instruction has none (0), or they lie outside the RAM the guest may read
 * (2: lea and nopl compute addresses they never touch), then those words
 * before and after. Words below ESP after are dead (the second trap's frame
 * lies there) and not compared. X(name, index, meaning)
 */
#define I386_CHECK_OOL(X) \
	X(OOL_LEN,          20, "bytes of the instruction the slot copies") \
	X(OOL_STACK,        21, "address of the stack window's first word") \
	X(OOL_STACK_BEFORE, 22, "its words before the copy ran; I386_CHECK_OOL_STACK_WORDS of them") \
	X(OOL_STACK_AFTER,  26, "its words after") \
	X(OOL_MEM,          30, "the memory operand's effective address") \
	X(OOL_MEM_STATE,    31, "0 no memory operand, 1 its words read, 2 outside RAM: not read") \
	X(OOL_MEM_BEFORE,   32, "the words from the effective address before; I386_CHECK_OOL_MEM_WORDS") \
	X(OOL_MEM_AFTER,    36, "the same words after")

#define I386_CHECK_OOL_STACK_WORDS  4
#define I386_CHECK_OOL_STACK_BELOW  2
#define I386_CHECK_OOL_MEM_WORDS    4
#define I386_CHECK_OOL_WORDS        40

#define I386_CHECK_ENUM(name, index, meaning) I386_CHECK_##name = index,
enum i386_check_ool { I386_CHECK_OOL(I386_CHECK_ENUM) };
#undef I386_CHECK_ENUM

_Static_assert(I386_CHECK_OOL_LEN == 2 * I386_CHECK_NREGS &&
	       I386_CHECK_OOL_STACK_BEFORE == I386_CHECK_OOL_STACK + 1 &&
	       I386_CHECK_OOL_STACK_AFTER == I386_CHECK_OOL_STACK_BEFORE + I386_CHECK_OOL_STACK_WORDS &&
	       I386_CHECK_OOL_MEM == I386_CHECK_OOL_STACK_AFTER + I386_CHECK_OOL_STACK_WORDS &&
	       I386_CHECK_OOL_MEM_BEFORE == I386_CHECK_OOL_MEM_STATE + 1 &&
	       I386_CHECK_OOL_MEM_AFTER == I386_CHECK_OOL_MEM_BEFORE + I386_CHECK_OOL_MEM_WORDS &&
	       I386_CHECK_OOL_WORDS == I386_CHECK_OOL_MEM_AFTER + I386_CHECK_OOL_MEM_WORDS,
	       "check.h: an out-of-line record is two register sets, len, the stack "
	       "window and the memory operand's words before and after");
_Static_assert(I386_CHECK_OOL_WORDS != I386_CHECK_WORDS &&
	       I386_CHECK_OOL_WORDS != I386_CHECK_OPT_WORDS,
	       "check.h: the host tells the layouts apart by their length");

#include <stdint.h>
struct trapframe;
/* One register set (I386_CHECK_REGS) from the trap frame, with EIP and
 * EFLAGS as given: every record kind's "before" and "after" (check.c). */
void i386_check_frame(const struct trapframe *tf, uint32_t eip, uint32_t eflags,
		      unsigned long *w);

#endif
