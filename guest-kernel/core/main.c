/*
 * main.c — kernel_main: the arch-neutral boot sequence.
 *
 * The firmware entry (firmware/<arch>/) sets up a stack and clears BSS, then
 * calls kernel_main. From here: the CPU table exists before anything asks
 * for this_cpu(); the arch brings up traps, MMU and interrupt controller;
 * pages and the scheduler make this context the "main" thread; the link and
 * UART come up so the guest can speak, and the trace channel (a virtio
 * port if PCI has one, else the UART); the timer starts; interrupts go on;
 * the other CPUs start; the kernel's clients set themselves up (init.h:
 * the tracer); HELLO tells the host the guest is ready; and the command
 * loop serves the host until an `exit`.
 */
#include "arch.h"
#include "command.h"
#include "console.h"
#include "cpu.h"
#include "init.h"
#include "link.h"
#include "mm.h"
#include "pages.h"
#include "serial.h"
#include "thread.h"
#include "timer.h"
#include "wire.h"

_Noreturn void kernel_main(void);

_Noreturn void kernel_main(void)
{
	cpu_init_all();
	arch_init();
	pages_init();
	sched_init();
	link_init();
	serial_init();
	link_channel_init();
	if (!timer_set_hz(TIMER_DEFAULT_HZ))
		panic("timer refuses the default %d Hz", TIMER_DEFAULT_HZ);
	arch_irq_enable();
	cpu_start_secondaries();
	for (kernel_init_fn *const *init = __kernel_init_start;
	     init < __kernel_init_end; init++)
		(*init)();

	struct wire_hello hello = {
		.byte_order = arch_byte_order,
		.arch = arch_wire_id,
		.channel = (uint8_t)link_channel(),
		.word_bytes = sizeof(unsigned long),
		.max_command = WIRE_MAX_COMMAND,
		.ncpus = cpu_count(),
		.timer_hz = timer_hz(),
		.page_size = mm_page_size,
		.shm_table = (uint32_t)link_shm_table(),
		.cycles_at_hello = arch_cycles(),
		.cycles_hz = arch_cycles_hz(),
	};
	link_send(WIRE_FRAME_HELLO, &hello, sizeof hello, 0, 0);
	command_loop();
}
