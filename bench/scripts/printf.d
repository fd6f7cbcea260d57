/*
 * printf.d — printf of arguments: each ct_root call with its iteration
 * and depth, and the thread that made it.
 *
 *   python3 -m bench trace --arch sparc64 -s bench/scripts/printf.d \
 *       --run 'calltree threads=2 iters=3 ref=0'
 */
fbt::ct_root:entry
{
	printf("thread %u: iteration %u, depth %u\n", tid, args[1], args[2]);
}
