/*
 * string.c — freestanding memory and string routines.
 *
 * memcpy and memset are on hot paths whether we call them or not: gcc
 * turns a structure assignment or initialisation of more than a few
 * words into a call to them (sparc64's fire path copied its 33-register
 * state that way, and the byte loop that was here cost more than the
 * rest of the firing). So both move a word at a time when the pointers
 * and the length allow, and bytes otherwise. The loops must not become
 * calls to themselves: gcc recognises a copy or fill loop as memcpy or
 * memset (loop distribution), hence the attribute. The rest are byte
 * loops on purpose: small, obviously right, and on no hot path.
 */
#include "kstring.h"

#define WORD sizeof(unsigned long)
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

NO_LIBCALL void *memcpy(void *dst, const void *src, size_t n)
{
	if ((((uintptr_t)dst | (uintptr_t)src | n) & (WORD - 1)) == 0) {
		unsigned long *d = dst;
		const unsigned long *s = src;
		for (size_t i = 0; i < n / WORD; i++)
			d[i] = s[i];
		return dst;
	}
	unsigned char *d = dst;
	const unsigned char *s = src;
	while (n--)
		*d++ = *s++;
	return dst;
}

NO_LIBCALL void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d < s) {
		while (n--)
			*d++ = *s++;
	} else {
		while (n--)
			d[n] = s[n];
	}
	return dst;
}

NO_LIBCALL void *memset(void *dst, int c, size_t n)
{
	if ((((uintptr_t)dst | n) & (WORD - 1)) == 0) {
		unsigned long v = (unsigned char)c;
		v *= ~0ul / 0xff;               /* the byte in every byte */
		unsigned long *w = dst;
		for (size_t i = 0; i < n / WORD; i++)
			w[i] = v;
		return dst;
	}
	unsigned char *d = dst;
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (; *s; s++)
		if (*s == (char)c)
			return (char *)s;
	return c ? 0 : (char *)s;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool parse_u64(const char *s, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		int d = hex_digit(*s);
		if (d < 0 || (unsigned)d >= base)
			return false;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			return false;
		v = v * base + (unsigned)d;
	}
	*out = v;
	return true;
}
