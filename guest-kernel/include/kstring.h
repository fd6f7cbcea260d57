/*
 * kstring.h — the few libc string routines a freestanding kernel needs.
 * gcc may emit calls to memcpy/memset/memmove/memcmp itself, so those keep
 * their standard names.
 */
#ifndef KSTRING_H
#define KSTRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
/* Whole-string unsigned parse (decimal or 0x hex); false on any junk or
 * overflow, leaving *out untouched. */
bool parse_u64(const char *s, uint64_t *out);
/* The value of one hex digit (either case), or -1. */
int hex_digit(char c);

#endif
