/*
 * dirty.c — page-granular write tracking for the command targets
 * (dirty.h says why). Each region keeps a copy of its bytes as they were
 * at the last dirty_look(take), and a mark per page: a page is
 * PROT_READ until its first store, which faults here once. A region need
 * not be page-aligned (the guest's tables are plain globals): a page it
 * shares with other globals (the table's lock, counters: stored to by
 * nearly every line) stays open and its share of the region is compared
 * at every look instead, a memcmp of under a page rather than a fault and
 * two mprotects a line. Two regions never share a page. The bookkeeping
 * lives in mmap'd memory, never beside a protected table, so the
 * handler's own stores cannot fault.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "dirty.h"

#define PAGE 4096ul
#define MAX_REGIONS 8
#define OPEN 2
/* A line that has written this many pages of a region writes all of it
 * (`trace reset` zeroes every gate): the rest is opened at once, one
 * mprotect rather than a fault a page. */
#define FAULTS_TO_OPEN 8

struct region {
	uintptr_t lo, hi;       /* the tracked bytes */
	uintptr_t plo, phi;     /* the pages they lie on */
	uint8_t *copy;          /* copy[i] is lo[i] */
	uint8_t *mark;          /* a byte per page: 1 written, OPEN shared */
	unsigned faults;        /* since the last look */
	bool touched;
};

static struct region *regions;
static unsigned nregions;

static void *anon(size_t bytes)
{
	void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "dirty: cannot map %zu bytes\n", bytes);
		abort();
	}
	return p;
}

static void protect(uintptr_t lo, uintptr_t hi, int prot)
{
	if (mprotect((void *)lo, hi - lo, prot) != 0) {
		fprintf(stderr, "dirty: mprotect %#lx..%#lx failed\n",
			(unsigned long)lo, (unsigned long)hi);
		abort();
	}
}

void dirty_track(const volatile void *at, size_t bytes)
{
	if (!regions)
		regions = anon(MAX_REGIONS * sizeof *regions);
	if (nregions == MAX_REGIONS || !bytes)
		abort();
	struct region *r = &regions[nregions++];
	r->lo = (uintptr_t)at;
	r->hi = r->lo + bytes;
	r->plo = r->lo & ~(PAGE - 1);
	r->phi = (r->hi + PAGE - 1) & ~(PAGE - 1);
	for (unsigned i = 0; i + 1 < nregions; i++)
		if (regions[i].plo < r->phi && r->plo < regions[i].phi)
			abort();        /* a page of two regions */
	size_t pages = (r->phi - r->plo) / PAGE;
	r->copy = anon(bytes);
	r->mark = anon(pages);
	memcpy(r->copy, (const void *)r->lo, bytes);
	r->mark[0] = r->lo != r->plo ? OPEN : 0;
	r->mark[pages - 1] = r->hi != r->phi ? OPEN : r->mark[pages - 1];
	uintptr_t plo = r->plo + (r->mark[0] ? PAGE : 0);
	uintptr_t phi = r->phi - (r->mark[pages - 1] ? PAGE : 0);
	if (plo < phi)
		protect(plo, phi, PROT_READ);
}

bool dirty_fault(const void *addr)
{
	uintptr_t pg = (uintptr_t)addr & ~(PAGE - 1);
	for (unsigned i = 0; i < nregions; i++) {
		struct region *r = &regions[i];
		if (pg < r->plo || pg >= r->phi)
			continue;
		uint8_t *m = &r->mark[(pg - r->plo) / PAGE];
		if (*m)
			return false;   /* open: not a fault of ours */
		*m = 1;
		r->touched = true;
		if (++r->faults >= FAULTS_TO_OPEN)
			dirty_open((const void *)r->lo);
		else
			protect(pg, pg + PAGE, PROT_READ | PROT_WRITE);
		return true;
	}
	return false;
}

/* The region's bytes on pages [p, q) against the copy: take or compare. */
static const void *look(struct region *r, size_t p, size_t q, bool take)
{
	uintptr_t lo = r->plo + p * PAGE, hi = r->plo + q * PAGE;
	lo = lo < r->lo ? r->lo : lo;
	hi = hi > r->hi ? r->hi : hi;
	uint8_t *copy = r->copy + (lo - r->lo);
	if (memcmp(copy, (const void *)lo, hi - lo) == 0)
		return 0;
	r->touched = true;
	if (take) {
		memcpy(copy, (const void *)lo, hi - lo);
		return 0;
	}
	for (uintptr_t b = lo; b < hi; b++)
		if (copy[b - lo] != *(const uint8_t *)b)
			return (const void *)b;
	return 0;
}

const void *dirty_look(bool take)
{
	const void *differs = 0, *d;
	for (unsigned i = 0; i < nregions; i++) {
		struct region *r = &regions[i];
		size_t pages = (r->phi - r->plo) / PAGE;
		r->faults = 0;
		for (size_t p = 0; p < pages; ) {
			if (r->mark[p] == OPEN) {
				if ((d = look(r, p, p + 1, take)) && !differs)
					differs = d;
				p++;
				continue;
			}
			if (!r->mark[p]) {
				p++;
				continue;
			}
			size_t q = p;   /* a run of written pages: one mprotect */
			while (q < pages && r->mark[q] == 1)
				r->mark[q++] = 0;
			if ((d = look(r, p, q, take)) && !differs)
				differs = d;
			protect(r->plo + p * PAGE, r->plo + q * PAGE, PROT_READ);
			p = q;
		}
	}
	return differs;
}

static struct region *holding(const volatile void *at)
{
	for (unsigned i = 0; i < nregions; i++)
		if ((uintptr_t)at >= regions[i].lo && (uintptr_t)at < regions[i].hi)
			return &regions[i];
	abort();
}

void dirty_open(const volatile void *at)
{
	struct region *r = holding(at);
	size_t pages = (r->phi - r->plo) / PAGE;
	for (size_t p = 0; p < pages; p++)
		if (r->mark[p] != OPEN)
			r->mark[p] = 1;
	r->touched = true;
	protect(r->plo, r->phi, PROT_READ | PROT_WRITE);
}

bool dirty_touched(const volatile void *at)
{
	return holding(at)->touched;
}

void dirty_forget(void)
{
	for (unsigned i = 0; i < nregions; i++)
		regions[i].touched = false;
}
