/*
 * drainrate.c — the serial channel's raw rate against the trace drain's
 * payload rate, in one boot.
 *
 * raw:     FILL frames of WIRE_MAX_PAYLOAD bytes, sent back to back on
 *          the trace channel (link.h: the 16550 or a virtio port, as
 *          `channel` chose) until `bytes` have gone.
 * payload: with the drain held off, a probe on bench_loop's site (the
 *          first emulating mechanism, action record) fires `firings`
 *          times into the buffer; the probe is disarmed, the drain let go,
 *          and the time until the last record is sent is the drain's.
 *
 * Each is measured `tries` times (the probe stays armed; the loop refills
 * the buffer) and the fastest counts. Lines: `drain raw WIRE_BYTES CYCLES`
 * (header, payload and CRC of every frame), `drain fire FIRINGS CYCLES`
 * (the firings' own loop, recording included: with the drain's, the
 * guest's whole cost of a record on this channel; under shm, where the
 * "drain" is the flush's commit, nearly all of it) and `drain payload
 * FIRINGS CYCLES`; the host counts the record bytes that arrived in EVENTS frames
 * and divides by tries. The buffer must hold
 * all firings (`trace buffer`; drops are in the STATS frames). A finer
 * timer tick (`timer 1000`) makes the flush's polling finer.
 */
#include "arch.h"
#include "benchloop.h"
#include "console.h"
#include "kstring.h"
#include "link.h"
#include "tracer.h"
#include "tracer_arch.h"
#include "wire.h"
#include "workload.h"

enum { DR_PROBE = 4095 };

static void run_drainrate(const uint64_t *v, struct workload_result *res)
{
	static uint8_t text[WIRE_MAX_PAYLOAD];
	uint64_t bytes = v[0], firings = v[1], sent = 0;
	unsigned tries = (unsigned)v[2];
	char why[WIRE_MAX_REASON];

	for (unsigned i = 0; i < sizeof text; i++)
		text[i] = (uint8_t)i;
	res->ok = false;
	res->value = 0;
	tracer_flush();
	uint64_t raw = UINT64_MAX;
	for (unsigned t = 0; t < tries; t++) {
		uint64_t t0 = arch_cycles();
		for (sent = 0; sent < bytes;) {
			uint8_t *frame = link_bulk_begin();
			if (!frame) {
				arch_cpu_relax();   /* the host is behind */
				continue;
			}
			memcpy(frame, text, sizeof text);
			link_bulk_end(WIRE_FRAME_FILL, sizeof text);
			sent += WIRE_HEADER_SIZE + sizeof text + WIRE_CRC_SIZE;
		}
		link_bulk_push();
		uint64_t c = arch_cycles() - t0;
		raw = c < raw ? c : raw;
	}
	kprintf("drain raw %llu %llu\n", (unsigned long long)sent,
		(unsigned long long)raw);

	unsigned m = 0;
	while (m < tarch_nmechanisms && mechanism_lossy(m))
		m++;
	if (m == tarch_nmechanisms ||
	    tracer_set_mechanism(tarch_mechanisms[m].name) != 0 ||
	    tracer_probe_add(DR_PROBE, (uintptr_t)bench_loop_site, bench_loop_kind,
			     0, why, sizeof why) != 0 ||
	    tracer_probe_set(DR_PROBE, true, why, sizeof why) != 0) {
		kprintf("drain payload refused: %s\n", why);
		tracer_clear();
		return;
	}
	tracer_settle();
	uint64_t fired = 0, cycles = UINT64_MAX, fire = UINT64_MAX;
	for (unsigned t = 0; t < tries; t++) {
		tracer_drain_pause(true);
		fired = tracer_fired_count();
		uint64_t f0 = arch_cycles();
		bench_loop((unsigned long)firings);
		uint64_t f = arch_cycles() - f0;
		fire = f < fire ? f : fire;
		fired = tracer_fired_count() - fired;
		uint64_t t0 = arch_cycles();
		tracer_drain_pause(false);
		tracer_flush();
		uint64_t c = arch_cycles() - t0;
		cycles = c < cycles ? c : cycles;
	}
	tracer_clear();
	tracer_set_mechanism(tarch_mechanisms[0].name);
	kprintf("drain fire %llu %llu\n", (unsigned long long)fired,
		(unsigned long long)fire);
	kprintf("drain payload %llu %llu\n", (unsigned long long)fired,
		(unsigned long long)cycles);
	res->value = fired;
	res->ok = fired == firings;
}

static const struct workload_param drainrate_params[] = {
	{ "bytes", 262144, 4096, 1u << 26, "raw bytes to send" },
	{ "firings", 8192, 1, 1u << 24, "records to drain" },
	{ "tries", 3, 1, 100, "times each is measured; the fastest counts" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(drainrate) = {
	"drainrate", "serial raw bytes/s and trace drain payload; value = records",
	drainrate_params, run_drainrate,
};
