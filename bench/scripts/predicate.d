/*
 * predicate.d — a predicate on a typed argument: ct_rec's `depth`
 * (uint32_t, from DWARF) is 0 at the bottom of each recursion, once per
 * ct_root call, so each thread counts its iterations there.
 *
 *   python3 -m bench trace --arch i386 --smp 2 -s bench/scripts/predicate.d \
 *       --run 'calltree threads=2 iters=50 ref=0'
 */
fbt::ct_rec:entry
/args[1] == 0/
{
	@bottoms[tid] = count();
}

fbt::ct_rec:entry
/args[1] > 0/
{
	@by_depth[args[1]] = count();
	@levels = lquantize(args[1], 0, 8, 1);
}
