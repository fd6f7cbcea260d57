/*
 * watch.c — the watch table: add, remove and the `watch` command.
 *
 * A watch takes a free probe id and one of the arch's slots (watch.h).
 * Every check is made before anything changes; then the probe row is
 * filled in and published (state ENABLED, kind WATCH, not in the address
 * hash: the arch's fire path finds its watch by slot), and the arch arms
 * the slot on every CPU. Removal disarms the slot on every CPU first, so
 * once tarch_watch_disarm returns no CPU can fire it, and only then frees
 * the row: nothing of the watch is left. The tracer's lock orders all of
 * it with probe changes and `probe clear`.
 */
#include "watch.h"
#include "arch.h"
#include "command.h"
#include "console.h"
#include "kstring.h"
#include "notrace.h"
#include "serial.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"

#define compiler_barrier() __asm__ volatile("" ::: "memory")

struct watch {
	uint32_t probe;       /* id + 1; 0: the slot is free */
	uint8_t  type;        /* WIRE_WATCH_TYPES */
	uint8_t  len;
};

static struct watch watches[TRACER_MAX_WATCHES];
static unsigned nwatches;

static const struct { const char *word; uint8_t type; } type_words[] = {
#define TYPE_ROW(name, value, word) { word, WIRE_WATCH_##name },
	WIRE_WATCH_TYPES(TYPE_ROW)
#undef TYPE_ROW
};
#define NTYPES (sizeof type_words / sizeof type_words[0])

int tracer_watch_type(const char *word)
{
	for (unsigned i = 0; i < NTYPES; i++)
		if (strcmp(word, type_words[i].word) == 0)
			return type_words[i].type;
	return -1;
}

const char *tracer_watch_type_word(unsigned type)
{
	for (unsigned i = 0; i < NTYPES; i++)
		if (type_words[i].type == type)
			return type_words[i].word;
	return "?";
}

static bool overlaps(uintptr_t a, uintptr_t alen, uintptr_t b, uintptr_t blen)
{
	return a < b + blen && b < a + alen;
}

static bool is_io(unsigned type)
{
	return type == WIRE_WATCH_IO;
}

/* The range's own rules, the arch's aside: where it may lie. */
static bool range_ok(unsigned type, uintptr_t addr, unsigned len, char *why,
		     size_t why_size)
{
	uintptr_t data_lo = (uintptr_t)__text_end, data_hi = (uintptr_t)__kernel_end;
	if (is_io(type)) {
		if (addr + len > 0x10000) {
			ksnprintf(why, why_size, "port 0x%lx+%u is past the 64 KiB I/O space",
				  (unsigned long)addr, len);
			return false;
		}
		return true;
	}
	if (type == WIRE_WATCH_EXEC) {
		if (addr < (uintptr_t)__text_start || addr >= (uintptr_t)__text_end) {
			ksnprintf(why, why_size, "0x%lx is outside kernel text",
				  (unsigned long)addr);
			return false;
		}
		if (overlaps(addr, len, (uintptr_t)__notrace_start,
			     (uintptr_t)__notrace_end - (uintptr_t)__notrace_start)) {
			ksnprintf(why, why_size, "0x%lx is code of the tracer or trap path",
				  (unsigned long)addr);
			return false;
		}
		return true;
	}
	if (addr < data_lo || addr + len > data_hi) {
		ksnprintf(why, why_size, "0x%lx+%u is outside the kernel's data and bss "
			  "[0x%lx, 0x%lx): stacks, the page pool and the trace buffers "
			  "are not watched", (unsigned long)addr, len,
			  (unsigned long)data_lo, (unsigned long)data_hi);
		return false;
	}
	if (overlaps(addr, len, (uintptr_t)__notrace_data_start,
		     (uintptr_t)__notrace_data_end - (uintptr_t)__notrace_data_start) ||
	    overlaps(addr, len, (uintptr_t)__notrace_bss_start,
		     (uintptr_t)__notrace_bss_end - (uintptr_t)__notrace_bss_start)) {
		ksnprintf(why, why_size, "0x%lx+%u is data of the tracer or trap path "
			  "(a watch there would fire inside its own handler)",
			  (unsigned long)addr, len);
		return false;
	}
	return true;
}

static int watch_add(unsigned id, unsigned type, uintptr_t addr, unsigned len,
		     unsigned action, char *why, size_t why_size)
{
	const char *reason = "?";
	if (id >= TRACER_MAX_PROBES) {
		ksnprintf(why, why_size, "probe id %u is past %u", id, TRACER_MAX_PROBES);
		return -1;
	}
	if (tracer_probes[id].state != PROBE_FREE) {
		ksnprintf(why, why_size, "probe id %u is in use (at 0x%lx)", id,
			  (unsigned long)tracer_probes[id].addr);
		return -1;
	}
	if (!tarch_watch_check(type, addr, len, &reason)) {
		ksnprintf(why, why_size, "%s 0x%lx/%u: %s", tracer_watch_type_word(type),
			  (unsigned long)addr, len, reason);
		return -1;
	}
	if (!range_ok(type, addr, len, why, why_size))
		return -1;
	unsigned slot = TRACER_MAX_WATCHES;
	for (unsigned i = 0; i < TRACER_MAX_WATCHES; i++) {
		const struct watch *w = &watches[i];
		if (!w->probe) {
			if (slot == TRACER_MAX_WATCHES && i < tarch_watch_slots)
				slot = i;
			continue;
		}
		const struct probe *o = &tracer_probes[w->probe - 1];
		if (is_io(w->type) == is_io(type) && overlaps(addr, len, o->addr, w->len)) {
			ksnprintf(why, why_size, "0x%lx/%u overlaps watch %u (%s 0x%lx/%u)",
				  (unsigned long)addr, len, o->id,
				  tracer_watch_type_word(w->type), (unsigned long)o->addr,
				  w->len);
			return -1;
		}
	}
	if (slot == TRACER_MAX_WATCHES) {
		ksnprintf(why, why_size, "all %u watch slots are in use (%s)",
			  tarch_watch_slots, tarch_watch_slots ? "remove one first" :
			  "this arch watches nothing");
		return -1;
	}

	struct probe *p = &tracer_probes[id];
	p->addr = addr;
	p->id = id;
	p->kind = WIRE_EVENT_WATCH;
	p->nargs = (uint8_t)len;
	p->action = (uint8_t)action;
	p->gated = 0;
	probe_gates[id] = (struct probe_gate){ 0 };
	tracer_probe_hits_zero(id);
	watches[slot] = (struct watch){ id + 1, (uint8_t)type, (uint8_t)len };
	p->state = PROBE_ENABLED;
	compiler_barrier();
	tarch_watch_arm(slot, p, type, len);
	nwatches++;
	return 0;
}

int tracer_watch_add(unsigned id, unsigned type, uintptr_t addr, unsigned len,
		     unsigned action, char *why, size_t why_size)
{
	tracer_lock();
	int rc = watch_add(id, type, addr, len, action, why, why_size);
	tracer_unlock();
	return rc;
}

static int slot_of(unsigned id)
{
	for (unsigned i = 0; i < TRACER_MAX_WATCHES; i++)
		if (watches[i].probe == id + 1)
			return (int)i;
	return -1;
}

static void remove_slot(unsigned slot)
{
	struct probe *p = &tracer_probes[watches[slot].probe - 1];
	tarch_watch_disarm(slot);       /* off every CPU: no firing after this */
	watches[slot] = (struct watch){ 0 };
	p->state = PROBE_FREE;
	nwatches--;
}

int tracer_watch_remove(unsigned id, char *why, size_t why_size)
{
	tracer_lock();
	int slot = id < TRACER_MAX_PROBES ? slot_of(id) : -1;
	if (slot < 0) {
		tracer_unlock();
		ksnprintf(why, why_size, "no watch %u", id);
		return -1;
	}
	remove_slot((unsigned)slot);
	tracer_unlock();
	return 0;
}

unsigned tracer_watch_clear(void)
{
	tracer_lock();
	unsigned n = 0;
	for (unsigned i = 0; i < TRACER_MAX_WATCHES; i++)
		if (watches[i].probe) {
			remove_slot(i);
			n++;
		}
	tracer_unlock();
	return n;
}

unsigned tracer_watches(void)
{
	return nwatches;
}

/* ---- the command ---- */

static void type_list(char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < NTYPES; i++)
		used += ksnprintf(buf + used, used < size ? size - used : 0, "%s%s",
				  i ? "|" : "", type_words[i].word);
}

/* ", stopped at PC (WORD): why" for a watch the arch stopped, else "". */
static void stopped_note(unsigned id, char *buf, size_t size)
{
	uintptr_t pc = 0;
	uint32_t word = 0;
	int slot = slot_of(id);
	const char *why = slot >= 0 ? tarch_watch_stopped((unsigned)slot, &pc, &word) : 0;
	if (why)
		ksnprintf(buf, size, ", stopped at 0x%lx (0x%08x): %s",
			  (unsigned long)pc, (unsigned)word, why);
	else
		buf[0] = 0;
}

/* An action's word (tracer_action_names), or -1. */
static int action_of(const char *word)
{
	for (unsigned a = 0; a < TRACER_NACTIONS; a++)
		if (strcmp(word, tracer_action_names[a]) == 0)
			return (int)a;
	return -1;
}

/* watch add ID TYPE ADDR LEN [ACTION] (armed with that action from its
 * first firing: an I/O watch on the serial line must not record, or each
 * record it sends fires it again) | watch remove ID | watch list | watch clear */
static int cmd_watch(int argc, char **argv, const char *rest, struct command_reply *r)
{
	char why[WIRE_MAX_REASON], types[48];
	uint64_t id, addr, len;
	(void)rest;
	type_list(types, sizeof types);
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "add") == 0) {
		int type = tracer_watch_type(argv[3]);
		int action = argc == 7 ? action_of(argv[6]) : TRACER_ACTION_RECORD;
		if (!parse_u64(argv[2], &id) || !parse_u64(argv[4], &addr) ||
		    !parse_u64(argv[5], &len) || type < 0 || id >= TRACER_MAX_PROBES ||
		    len == 0 || len > 64 || (uint64_t)(uintptr_t)addr != addr ||
		    action < 0)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "usage: watch add ID %s ADDR LEN [record|null], "
					     "ID < %u, 0 < LEN <= 64", types, TRACER_MAX_PROBES);
		if (tracer_watch_add((unsigned)id, (unsigned)type, (uintptr_t)addr,
				     (unsigned)len, (unsigned)action, why, sizeof why) != 0)
			return command_reply(r, WIRE_REPLY_FAILED, "refused: %s", why);
		/* The serial line's counts with the watch armed (an I/O watch on
		 * its data port counts these bytes; the command thread is the
		 * only one on the line now). */
		return command_reply(r, WIRE_REPLY_OK, "watch %u: %s 0x%lx/%u tx=%lu "
				     "rx=%lu", (unsigned)id, argv[3],
				     (unsigned long)addr, (unsigned)len,
				     serial_tx_bytes(), serial_rx_bytes());
	}
	if (argc == 3 && strcmp(argv[1], "remove") == 0) {
		if (!parse_u64(argv[2], &id) || id >= TRACER_MAX_PROBES)
			return command_reply(r, WIRE_REPLY_BAD_ARGS,
					     "usage: watch remove ID");
		unsigned long tx = serial_tx_bytes(), rx = serial_rx_bytes();
		char stopped[128];
		stopped_note((unsigned)id, stopped, sizeof stopped);
		if (tracer_watch_remove((unsigned)id, why, sizeof why) != 0)
			return command_reply(r, WIRE_REPLY_FAILED, "%s", why);
		return command_reply(r, WIRE_REPLY_OK, "watch %u removed, hits=%lu "
				     "tx=%lu rx=%lu%s", (unsigned)id,
				     tracer_probe_hits(id), tx, rx, stopped);
	}
	if (argc == 2 && strcmp(argv[1], "list") == 0) {
		for (unsigned i = 0; i < TRACER_MAX_WATCHES; i++) {
			const struct watch *w = &watches[i];
			if (!w->probe)
				continue;
			const struct probe *p = &tracer_probes[w->probe - 1];
			char stopped[128];
			stopped_note(p->id, stopped, sizeof stopped);
			kprintf("watch %u slot %u %s 0x%lx/%u hits=%lu%s\n", p->id, i,
				tracer_watch_type_word(w->type), (unsigned long)p->addr,
				w->len, tracer_probe_hits(p->id), stopped);
		}
		return command_reply(r, WIRE_REPLY_OK, "%u watches, %u slots",
				     nwatches, tarch_watch_slots);
	}
	if (argc == 2 && strcmp(argv[1], "clear") == 0)
		return command_reply(r, WIRE_REPLY_OK, "%u watches removed",
				     tracer_watch_clear());
	return command_reply(r, WIRE_REPLY_BAD_ARGS,
			     "usage: watch add ID %s ADDR LEN [record|null] | remove ID | list | "
			     "clear",
			     types);
}

COMMAND(watch) = {
	"watch", "watch add|remove|list|clear ...: watchpoint probes (`watch`: usage)",
	cmd_watch,
};
