/*
 * console.h — text for humans, sent as TEXT frames (wire.h).
 *
 * kprintf formats into a per-console line buffer that is framed and sent at
 * each '\n' (or when full), so a line is never split across frames by
 * another writer. console_panic_mode() drops the lock for the dump paths,
 * which may run while the lock holder is the one that faulted.
 */
#ifndef CONSOLE_H
#define CONSOLE_H

#include <stdarg.h>
#include <stddef.h>

int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kvprintf(const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
void console_flush(void);
void console_panic_mode(void);

_Noreturn void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
