/*
 * printf.c — a small, bounded vsnprintf: %d %i %u %x %X %p %s %c %%, with
 * '-' and '0' flags, a field width, '.' precision for %s, and the l, ll and
 * z length modifiers. Output is always NUL-terminated and never overruns;
 * the return value is the length the full output would have had, as in C99.
 */
#include <stdbool.h>
#include <stdint.h>
#include "console.h"

struct out {
	char  *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width,
		       bool left, char pad)
{
	int fill = width > (int)n ? width - (int)n : 0;
	if (!left)
		while (fill-- > 0)
			put(o, pad);
	while (n--)
		put(o, *s++);
	if (left)
		while (fill-- > 0)
			put(o, ' ');
}

static void put_number(struct out *o, uint64_t v, bool negative, unsigned base,
		       bool upper, int width, bool left, char pad)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	if (negative) {
		if (pad == '0') {
			put(o, '-');
			width--;
		} else {
			tmp[n++] = '-';
		}
	}
	char rev[24];
	for (int i = 0; i < n; i++)
		rev[i] = tmp[n - 1 - i];
	put_padded(o, rev, n, width, left, pad);
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		bool left = false;
		char pad = ' ';
		int width = 0, precision = -1, longs = 0;

		for (fmt++; *fmt == '-' || *fmt == '0'; fmt++) {
			if (*fmt == '-')
				left = true;
			else
				pad = '0';
		}
		for (; *fmt >= '0' && *fmt <= '9'; fmt++)
			width = width * 10 + (*fmt - '0');
		if (*fmt == '.') {
			precision = 0;
			for (fmt++; *fmt >= '0' && *fmt <= '9'; fmt++)
				precision = precision * 10 + (*fmt - '0');
		}
		for (; *fmt == 'l' || *fmt == 'z'; fmt++)
			longs += *fmt == 'z' ? (sizeof(size_t) == 8 ? 2 : 1) : 1;
		if (left)
			pad = ' ';

		uint64_t u;
		int64_t s;
		switch (*fmt) {
		case 'd':
		case 'i':
			s = longs >= 2 ? va_arg(ap, long long)
			  : longs == 1 ? va_arg(ap, long) : va_arg(ap, int);
			put_number(&o, s < 0 ? -(uint64_t)s : (uint64_t)s, s < 0,
				   10, false, width, left, pad);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = longs >= 2 ? va_arg(ap, unsigned long long)
			  : longs == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			put_number(&o, u, false, *fmt == 'u' ? 10 : 16, *fmt == 'X',
				   width, left, pad);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_number(&o, (uintptr_t)va_arg(ap, void *), false, 16, false,
				   (int)sizeof(void *) * 2, false, '0');
			break;
		case 's': {
			const char *str = va_arg(ap, const char *);
			size_t n = 0;
			if (!str)
				str = "(null)";
			while (str[n] && (precision < 0 || (int)n < precision))
				n++;
			put_padded(&o, str, n, width, left, ' ');
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);
			put_padded(&o, &c, 1, width, left, ' ');
			break;
		}
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
			break;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
