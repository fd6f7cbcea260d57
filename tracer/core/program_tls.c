/*
 * program_tls.c — probe programs' thread-local words (`tget`/`tset`, D's
 * `self->x`): WIRE_PROGRAM_TLS 64-bit words (prog_word) per guest thread, shared by every
 * program, so that an entry probe's program can leave a timestamp that
 * the same thread's return probe's program reads.
 *
 * A thread gets a block of words from a fixed pool on its first store of
 * a value other than 0 (a load of a word never stored reads 0, as in
 * DTrace); the block's number, with the pool's generation, is kept in the
 * thread's own slot word (thread.h), which only that thread reads or
 * writes, trap paths included. Blocks are claimed with an atomic add on
 * the pool's high-water mark and never freed until `program clear`, which
 * starts a new generation: every thread's word is then stale and reads as
 * no block. A store that finds the pool used up is not made and is
 * counted, exactly (program_tls_dropped, sent in AGGS frames).
 */
#include "program.h"
#include "atomic.h"
#include "init.h"
#include "kstring.h"
#include "thread.h"
#include "wire.h"

static prog_word blocks[WIRE_PROGRAM_TLS_THREADS][WIRE_PROGRAM_TLS];
static volatile unsigned long used;          /* blocks handed out */
static volatile unsigned long dropped;       /* stores that found none */
static volatile unsigned long generation = 1;
static unsigned tls_slot;

/* A slot word: generation << 16 | (block + 1); 0 or another generation's
 * word means none. */
#define TLS_BLOCK_BITS 16
_Static_assert(WIRE_PROGRAM_TLS_THREADS < (1u << TLS_BLOCK_BITS),
	       "a block number fits its field");

static void tls_init(void)
{
	tls_slot = thread_slot_claim();
}
KERNEL_INIT(tls_init);

/* This thread's block, or 0. */
static prog_word *mine(void)
{
	uintptr_t w = thread_slot(thread_current(), tls_slot);
	if (!w || w >> TLS_BLOCK_BITS != (generation & 0xffff))
		return 0;
	return blocks[(w & ((1u << TLS_BLOCK_BITS) - 1)) - 1];
}

prog_word program_tls_get(unsigned word)
{
	prog_word *b = mine();
	return b ? b[word] : 0;
}

void program_tls_set(unsigned word, prog_word value)
{
	prog_word *b = mine();
	if (!b) {
		if (!value)
			return;                 /* 0 is what an absent word reads */
		unsigned long n = atomic_fetch_add(&used, 1);
		if (n >= WIRE_PROGRAM_TLS_THREADS) {
			atomic_fetch_add(&dropped, 1);
			return;
		}
		b = blocks[n];
		memset(b, 0, sizeof blocks[0]);
		thread_slot_set(thread_current(), tls_slot,
				(generation & 0xffff) << TLS_BLOCK_BITS | (n + 1));
	}
	b[word] = value;
}

uint32_t program_tls_dropped(void)
{
	return (uint32_t)dropped;
}

unsigned program_tls_threads(void)
{
	return used < WIRE_PROGRAM_TLS_THREADS ? (unsigned)used : WIRE_PROGRAM_TLS_THREADS;
}

void program_tls_clear(void)
{
	generation++;
	used = 0;
	dropped = 0;
}
