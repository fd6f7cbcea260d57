/*
 * firepath.c — where a probe firing's cycles go, stage by stage (stamp.h).
 *
 * For each emulating mechanism, each of the arch's stage sites
 * (stagesites.h) and each action (null, record), a probe on the site and n
 * calls of its function, one at a time: the workload stamps START before
 * a call and END after it, the fire path stamps the stages between, and
 * each stage's figure is the median over the calls of its interval minus
 * one stamp's own cost. The bare trap round trip (tracer_bare_trap, whose
 * hook returns at once) is timed the same way, with entry and exit only.
 * `call` is what the unprobed call costs between the two stamps (the call,
 * the site instruction run natively, the return): entry and exit include
 * the call and the return; `total` is the median START..END less the
 * stamps the fire path took and less the site's own unprobed call, timed
 * just before the site is probed: the firing's cost beyond running the
 * instruction itself, as the stamps did not see it. (The first site's
 * call, taken for every site, could exceed an opt firing's whole cost.) Medians, not
 * means: a timer tick lands in a few calls, not in the figure.
 *
 * Lines: `stage NAME STAGE CYCLES`, NAME being `bare` or
 * MECHANISM.SITE.ACTION (e.g. int3.push.null), STAGE a stamp name or
 * total, and `stage NAME stamps K`, the stamps the fire path took (the
 * median: 1 for the bare trap, every one of the four for a probe);
 * `stage call - CYCLES`, `stage stamp - CYCLES`; and `stage NAME plain
 * CYCLES`, the same n calls timed with the fire path's stamps off (the
 * median START..END less the site's unprobed call): what a firing costs when nobody
 * watches, which is the figure for a path that takes no stamp at all
 * (opt's detour counts a null probe in assembly, opt_detour.S); a site a
 * mechanism cannot arm gives `stage NAME refused: REASON`. The drain is
 * held off while a probe records; value = n, ok when every probed call
 * fired once. A site with a return probe (stagesites.h's ret_offset) times
 * the call with both probes: its entry and its return, riding on the entry
 * under a mechanism with a return trampoline.
 */
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "mechanism.h"
#include "stagesites.h"
#include "stamp.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"
#include "workload.h"

enum { FP_PROBE = 4095, FP_RET_PROBE = 4094, FP_MAX = 4000 };

/* Each timed call's stages, one record a call: time_call's bookkeeping
 * between two calls writes one line of one page, not a page per stamp
 * (spans[stamp][call] was one page per stamp), so it evicts none of the
 * pages the next call's firing reads from QEMU's TLB. With a row per
 * stamp, two more stamps (the riding return's) moved opt's null firing
 * on the prologue (plain) from about 40 cycles to 130 with its blocks
 * unchanged in QEMU's exec log; with a record per call, about 80. */
static struct call_time {
	unsigned long span[TRACER_NSTAMPS];
	unsigned      taken;            /* stamps the fire path took */
} calls[FP_MAX];
static unsigned long scratch[FP_MAX];

/* The median of scratch[0..n), sorted in place. */
static unsigned long sorted_median(unsigned n)
{
	for (unsigned gap = n / 2; gap; gap /= 2)        /* shell sort */
		for (unsigned i = gap; i < n; i++)
			for (unsigned j = i; j >= gap && scratch[j - gap] > scratch[j]; j -= gap) {
				unsigned long t = scratch[j];
				scratch[j] = scratch[j - gap];
				scratch[j - gap] = t;
			}
	return n ? scratch[n / 2] : 0;
}

/* The median over n calls of stage k's span. */
static unsigned long median(unsigned k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		scratch[i] = calls[i].span[k];
	return sorted_median(n);
}

/* One call of fn between START and END, its stages into calls[i]:
 * each stamp taken gets the interval since the one before it in time;
 * stamps not taken, 0. */
static void time_call(void (*fn)(void), unsigned i)
{
	for (unsigned k = TRACER_STAMP_ENTRY; k < TRACER_STAMP_END; k++)
		tracer_stamps[k] = 0;
	tracer_stamps[TRACER_STAMP_START] = (unsigned long)arch_cycles();
	fn();
	tracer_stamps[TRACER_STAMP_END] = (unsigned long)arch_cycles();

	unsigned long start = tracer_stamps[TRACER_STAMP_START];
	bool done[TRACER_NSTAMPS] = { [TRACER_STAMP_START] = true };
	unsigned long prev = start;
	calls[i].span[TRACER_STAMP_START] = tracer_stamps[TRACER_STAMP_END] - start;
	for (;;) {                              /* the taken stamps in time order */
		unsigned next = TRACER_NSTAMPS;
		for (unsigned k = TRACER_STAMP_ENTRY; k < TRACER_NSTAMPS; k++)
			if (!done[k] && tracer_stamps[k] &&
			    (next == TRACER_NSTAMPS ||
			     tracer_stamps[k] - start < tracer_stamps[next] - start))
				next = k;
		if (next == TRACER_NSTAMPS)
			break;
		done[next] = true;
		calls[i].span[next] = tracer_stamps[next] - prev;
		prev = tracer_stamps[next];
	}
	calls[i].taken = 0;
	for (unsigned k = TRACER_STAMP_ENTRY; k < TRACER_NSTAMPS; k++) {
		if (!done[k])
			calls[i].span[k] = 0;
		else if (k != TRACER_STAMP_END)
			calls[i].taken++;
	}
}

static void report(const char *name, unsigned n, unsigned long call,
		   unsigned long stamp)
{
	for (unsigned k = TRACER_STAMP_ENTRY; k < TRACER_NSTAMPS; k++) {
		unsigned long m = median(k, n);
		kprintf("stage %s %s %lu\n", name, tracer_stamp_names[k],
			m > stamp ? m - stamp : 0);
	}
	for (unsigned i = 0; i < n; i++)        /* less the stamps themselves */
		calls[i].span[TRACER_STAMP_START] -= calls[i].taken * stamp;
	unsigned long t = median(TRACER_STAMP_START, n);
	kprintf("stage %s total %lu\n", name, t > call ? t - call : 0);
	for (unsigned i = 0; i < n; i++)
		scratch[i] = calls[i].taken;
	kprintf("stage %s stamps %lu\n", name, sorted_median(n));
}

/* n calls of fn with the fire path's stamps off: `stage NAME plain`. */
static void report_plain(const char *name, void (*fn)(void), unsigned n,
			 unsigned long call)
{
	unsigned stamping = tracer_stamp_cpu;
	tracer_stamp_cpu = 0;
	for (unsigned i = 0; i < n; i++)
		time_call(fn, i);
	tracer_stamp_cpu = stamping;
	unsigned long t = median(TRACER_STAMP_START, n);
	kprintf("stage %s plain %lu\n", name, t > call ? t - call : 0);
}

/* A site's return probe (ret_offset), riding on its entry where mechanism
 * m has a return trampoline, enabled; false with why if refused. */
static bool add_return(const struct stage_site *site, unsigned m, char *why, size_t size)
{
	if (tracer_probe_add(FP_RET_PROBE, (uintptr_t)site->fn + site->ret_offset,
			     WIRE_EVENT_RETURN, 0, why, size) != 0)
		return false;
	if ((tarch_mechanisms[m].flags & MECHANISM_RETURN_TRAMPOLINE) &&
	    tracer_probe_ride(FP_PROBE, FP_RET_PROBE, why, size) != 0)
		return false;
	return tracer_probe_set(FP_RET_PROBE, true, why, size) == 0;
}

static void run_firepath(const uint64_t *v, struct workload_result *res)
{
	unsigned n = (unsigned)v[0];
	char why[WIRE_MAX_REASON], name[64];

	res->ok = true;
	res->value = n;
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = arch_cycles();
		uint64_t t1 = arch_cycles();
		scratch[i] = (unsigned long)(t1 - t0);
	}
	unsigned long stamp = sorted_median(n);
	tracer_stamp_cpu = this_cpu()->id + 1;
	for (unsigned i = 0; i < n; i++)
		time_call(stage_sites[0].fn, i);
	unsigned long call = median(TRACER_STAMP_START, n);
	kprintf("stage call - %lu\n", call > stamp ? call - stamp : 0);
	kprintf("stage stamp - %lu\n", stamp);
	for (unsigned i = 0; i < n; i++)
		time_call(tracer_bare_trap, i);
	report("bare", n, call, stamp);
	report_plain("bare", tracer_bare_trap, n, call);

	for (unsigned m = 0; m < tarch_nmechanisms; m++) {
		const char *mech = tarch_mechanisms[m].name;
		if (mechanism_lossy(m) || tracer_set_mechanism(mech) != 0)
			continue;
		for (unsigned s = 0; s < stage_nsites; s++) {
			const struct stage_site *site = &stage_sites[s];
			/* This site's own unprobed call, just before it is
			 * probed: a call costs what its blocks' places in
			 * QEMU's caches make it cost, which differs from site
			 * to site and image to image by more than an opt
			 * firing (stage_nop's taken for every site read an
			 * opt firing as 0 cycles in one image, 110 in
			 * another, the firing unchanged). */
			for (unsigned i = 0; i < n; i++)
				time_call(site->fn, i);
			unsigned long own = median(TRACER_STAMP_START, n);
			if (tracer_probe_add(FP_PROBE, (uintptr_t)site->fn, site->kind, 0,
					     why, sizeof why) != 0 ||
			    (site->ret_offset && !add_return(site, m, why, sizeof why)) ||
			    tracer_probe_set(FP_PROBE, true, why, sizeof why) != 0) {
				kprintf("stage %s.%s refused: %s\n", mech, site->name, why);
				tracer_clear();
				continue;
			}
			tracer_settle();
			for (unsigned a = 0; a < TRACER_NACTIONS; a++) {
				tracer_probe_action(FP_PROBE, a, why, sizeof why);
				if (site->ret_offset)
					tracer_probe_action(FP_RET_PROBE, a, why, sizeof why);
				tracer_drain_pause(true);
				uint64_t fired = tracer_fired_count();
				for (unsigned i = 0; i < n; i++)
					time_call(site->fn, i);
				ksnprintf(name, sizeof name, "%s.%s.%s", mech, site->name,
					  tracer_action_names[a]);
				report(name, n, own, stamp);
				report_plain(name, site->fn, n, own);
				fired = tracer_fired_count() - fired;
				tracer_drain_pause(false);
				if (fired != (site->ret_offset ? 4 : 2) * (uint64_t)n)
					res->ok = false;
			}
			tracer_clear();
		}
	}
	tracer_stamp_cpu = 0;
	tracer_set_mechanism(tarch_mechanisms[0].name);
}

static const struct workload_param firepath_params[] = {
	{ "n", 1000, 50, FP_MAX, "timed calls per site, mechanism and action" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(firepath) = {
	"firepath", "the fire path's cost stage by stage, every emulating "
	"mechanism, site and action, and the bare trap; value = n",
	firepath_params, run_firepath,
};
