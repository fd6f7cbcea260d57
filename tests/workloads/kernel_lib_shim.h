/*
 * kernel_lib_shim.h — the little of the Linux kernel's own headers that
 * lib/sort.c and lib/rbtree.c (and rbtree.h, rbtree_augmented.h) use, for
 * a freestanding guest: fixed-width types, the sort callbacks' types,
 * compiler annotations, container_of, and READ/WRITE_ONCE and
 * rcu_assign_pointer as plain accesses (the workload is one thread).
 * kernel_lib.mk installs it under each header name they include.
 */
#ifndef KERNEL_LIB_SHIM_H
#define KERNEL_LIB_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;

typedef int (*cmp_func_t)(const void *a, const void *b);
typedef void (*swap_func_t)(void *a, void *b, int size);
typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);

#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define IS_ENABLED(option) 0
#define __attribute_const__ __attribute__((__const__))
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define READ_ONCE(x)     (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define rcu_assign_pointer(p, v) WRITE_ONCE((p), (v))

#endif
