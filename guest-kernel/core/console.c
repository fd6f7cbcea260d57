/*
 * console.c — human text as TEXT frames.
 *
 * Characters collect in one line buffer; a '\n' (or a full buffer) sends the
 * line as one TEXT frame, so every frame holds whole lines and the host can
 * print them as they arrive. The buffer is shared by all CPUs, under the
 * console lock, and one kprintf call's text goes in under one hold of it.
 * panic() and the trap dump paths switch to panic mode first, which skips
 * the locks, so a fault taken mid-line — even by the lock's holder — still
 * prints.
 */
#include "console.h"
#include "arch.h"
#include "exit.h"
#include "link.h"
#include "spinlock.h"
#include "wire.h"

#define CONSOLE_LINE 240

static char line[CONSOLE_LINE];
static unsigned line_len;
static spinlock_t console_lock = SPINLOCK_INIT("console");
static volatile bool panicking;

static irqflags_t lock_console(void)
{
	return panicking ? arch_irq_save() : spin_lock_irqsave(&console_lock);
}

static void unlock_console(irqflags_t flags)
{
	if (panicking)
		arch_irq_restore(flags);
	else
		spin_unlock_irqrestore(&console_lock, flags);
}

static void flush_locked(void)
{
	if (line_len) {
		link_send(WIRE_FRAME_TEXT, line, line_len, 0, 0);
		line_len = 0;
	}
}

static void put_locked(char c)
{
	line[line_len++] = c;
	if (c == '\n' || line_len == CONSOLE_LINE)
		flush_locked();
}

void console_flush(void)
{
	irqflags_t flags = lock_console();
	flush_locked();
	unlock_console(flags);
}

void console_panic_mode(void)
{
	panicking = true;
	link_panic_mode();
}

int kvprintf(const char *fmt, va_list ap)
{
	char buf[CONSOLE_LINE * 2];
	int n = kvsnprintf(buf, sizeof buf, fmt, ap);
	int shown = n < (int)sizeof buf ? n : (int)sizeof buf - 1;

	irqflags_t flags = lock_console();
	for (int i = 0; i < shown; i++)
		put_locked(buf[i]);
	unlock_console(flags);
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}

_Noreturn void panic(const char *fmt, ...)
{
	va_list ap;

	arch_irq_save();
	console_panic_mode();
	kprintf("\nPANIC: ");
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
	kernel_exit(EXIT_PANIC);
}
