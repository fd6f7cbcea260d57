/*
 * quantize.d — the distribution of fib's argument over every call:
 * bench/programs/quantize.rpn in D.
 *
 *   python3 -m bench trace --arch sparc64 -s bench/scripts/quantize.d --run 'fib n=15'
 */
fbt::fib:entry
{
	@arg0 = quantize(arg0);
}
