/*
 * stack.d — who calls ct_add, and how often by each path:
 * bench/programs/stack.rpn in D (it compiles to the same instructions).
 * Each distinct stack prints as DTrace prints one, a frame per line.
 *
 *   python3 -m bench trace --arch i386 --smp 2 -s bench/scripts/stack.d \
 *       --run 'calltree threads=2 iters=100 depth=2' --flamegraph build/ct.svg
 */
fbt::ct_add:entry
{
	@calls[stack()] = count();
}
