/*
 * pages.h — physical page allocation for stacks and tables: contiguous
 * runs of pages from the memory above the kernel image.
 */
#ifndef PAGES_H
#define PAGES_H

#include <stddef.h>

void pages_init(void);
void *pages_alloc(size_t npages);
void pages_free(void *p, size_t npages);
size_t pages_free_count(void);

#endif
