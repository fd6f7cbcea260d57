/*
 * fbt.c — sparc64 probes. The CTI emulator (ILLTRAP const22 probes) is not
 * in this kernel yet: every site is refused with that reason, so the host
 * gets a clear answer instead of a probe that cannot fire.
 */
#include "tracer.h"
#include "tracer_arch.h"

const struct tarch_mech tarch_mechs[] = {
	{ "illtrap", "ILLTRAP const22, emulate the displaced CTI", false },
};
const unsigned tarch_nmechs = sizeof tarch_mechs / sizeof tarch_mechs[0];
const unsigned tarch_check_words = 0;

int tarch_decode(uintptr_t addr, unsigned kind, struct tarch_site *site,
		 const char **why)
{
	(void)addr, (void)kind, (void)site;
	*why = "sparc64 probes are not implemented in this kernel yet";
	return -1;
}

void tarch_arm(struct probe *p)
{
	(void)p;
}

void tarch_disarm(struct probe *p)
{
	(void)p;
}

bool tarch_can_arm(const struct probe *p, const char **why)
{
	(void)p;
	*why = "sparc64 probes are not implemented in this kernel yet";
	return false;
}
