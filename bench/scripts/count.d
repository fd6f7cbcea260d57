/*
 * count.d — how often each function ran: bench/programs/count.rpn in D
 * (it compiles to the same three instructions).
 *
 *   python3 -m bench trace --arch i386 --smp 4 -s bench/scripts/count.d \
 *       --run 'calltree threads=4'
 */
fbt::ct_*:entry
{
	@calls[probefunc] = count();
}
