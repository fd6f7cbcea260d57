/*
 * kernel_lib.c — real third-party C as a workload: Linux's lib/sort.c (heap
 * sort with its swap and compare callbacks) and lib/rbtree.c (red-black
 * insert, erase, walk), unpacked from Debian's linux-source-6.1 at build
 * time by kernel_lib.mk and compiled here unchanged, with our flags.
 *
 * Ground truth is the workload's own: n keys from a xorshift generator
 * are sorted by sort() with kl_cmp, and must come out ascending with the
 * same sum and xor as went in; the same keys go into an rbtree (the
 * descent is ours, rb_insert_color the kernel's), and an in-order walk
 * (rb_first, rb_next) must give the sorted array; every other node is then
 * erased (rb_erase) and the walk must give what is left, in order. The
 * answer is a checksum of the final walk. kl_cmp and kl_walk count their
 * calls.
 * spoil=1 breaks the sorted array on purpose: the run must fail.
 *
 *   python3 -m bench run --arch i386 --workload tests/workloads/kernel_lib.c \
 *       --run 'kernel_lib n=64' --probes 'fbt:sort*:entry,fbt:rb_*:entry'
 */
#include "workload.h"

#include <linux/rbtree.h>
#include <linux/sort.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <klib/sort.c>
#include <klib/rbtree.c>
#pragma GCC diagnostic pop

#define KL_MAX 4096

struct kl_node {
	struct rb_node rb;
	u32 key;
};

static u32 kl_keys[KL_MAX], kl_walked[KL_MAX];
static struct kl_node kl_nodes[KL_MAX];
static uint64_t kl_compares, kl_walks;

__attribute__((noinline)) int kl_cmp(const void *a, const void *b);
__attribute__((noinline)) void kl_insert(struct rb_root *root, struct kl_node *n);
__attribute__((noinline)) unsigned kl_walk(const struct rb_root *root, u32 *out);

int kl_cmp(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;
	kl_compares++;
	return x < y ? -1 : x > y;
}

/* Our half of an rbtree insert: find the leaf, link; the kernel recolors. */
void kl_insert(struct rb_root *root, struct kl_node *n)
{
	struct rb_node **link = &root->rb_node, *parent = NULL;
	while (*link) {
		parent = *link;
		link = n->key < rb_entry(parent, struct kl_node, rb)->key ?
		       &parent->rb_left : &parent->rb_right;
	}
	rb_link_node(&n->rb, parent, link);
	rb_insert_color(&n->rb, root);
}

unsigned kl_walk(const struct rb_root *root, u32 *out)
{
	unsigned k = 0;
	kl_walks++;
	for (struct rb_node *p = rb_first(root); p; p = rb_next(p))
		out[k++] = rb_entry(p, struct kl_node, rb)->key;
	return k;
}

static bool kl_ascending(const u32 *a, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return false;
	return true;
}

static void run_kernel_lib(const uint64_t *v, struct workload_result *res)
{
	unsigned n = (unsigned)v[0];
	u32 x = (u32)v[1] | 1, sum = 0, xor = 0, sum2 = 0, xor2 = 0;
	struct rb_root root = RB_ROOT;
	bool ok = true;

	kl_compares = kl_walks = 0;
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		kl_keys[i] = x % 1000;          /* duplicates too */
		kl_nodes[i].key = kl_keys[i];
		sum += kl_keys[i];
		xor ^= kl_keys[i];
	}
	sort(kl_keys, n, sizeof kl_keys[0], kl_cmp, NULL);
	if (v[2] && n > 1) {                    /* spoil=1: the check must see it */
		u32 t = kl_keys[0];
		kl_keys[0] = kl_keys[n - 1];
		kl_keys[n - 1] = t;
	}
	for (unsigned i = 0; i < n; i++) {
		sum2 += kl_keys[i];
		xor2 ^= kl_keys[i];
	}
	ok = ok && kl_ascending(kl_keys, n) && sum2 == sum && xor2 == xor;
	for (unsigned i = 0; i < n; i++)
		kl_insert(&root, &kl_nodes[i]);
	ok = ok && kl_walk(&root, kl_walked) == n;
	for (unsigned i = 0; ok && i < n; i++)
		ok = kl_walked[i] == kl_keys[i];
	unsigned left = n;
	for (unsigned i = 0; i < n; i += 2, left--)
		rb_erase(&kl_nodes[i].rb, &root);
	ok = ok && kl_walk(&root, kl_walked) == left && kl_ascending(kl_walked, left);
	u32 check = 0;
	for (unsigned i = 0; i < left; i++)
		check = check * 31 + kl_walked[i];
	res->value = check;
	res->ok = ok && kl_compares > 0;
	workload_expect("kl_insert", n);
	workload_expect("kl_walk", kl_walks);
}

static const struct workload_param kernel_lib_params[] = {
	{ "n", 256, 1, KL_MAX, "keys sorted and put in the rbtree" },
	{ "seed", 12345, 1, 0xffffffff, "xorshift seed" },
	{ "spoil", 0, 0, 1, "1: swap the first and last key after sorting (a broken sort)" },
	{ 0, 0, 0, 0, 0 },
};

WORKLOAD(kernel_lib) = { "kernel_lib", "Linux lib/sort.c and lib/rbtree.c, checked",
			 kernel_lib_params, run_kernel_lib };
