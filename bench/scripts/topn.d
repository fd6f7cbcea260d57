/*
 * topn.d — the 10 kernel functions called most while calltree runs:
 * every kernel function the guest lets be probed, counted in the guest,
 * the table cut to its top 10 at END.
 *
 *   python3 -m bench trace --arch i386 --smp 2 -s bench/scripts/topn.d \
 *       --run 'calltree threads=2 iters=20'
 */
fbt:kernel:*:entry
{
	@calls[probefunc] = count();
}

END
{
	printf("the 10 most called:\n");
	trunc(@calls, 10);
}
