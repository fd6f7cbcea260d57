/*
 * latency.d — time spent in each calltree function, per function, as
 * DTrace's latency idiom has it: the entry leaves the time in a
 * thread-local, the same thread's return reads it. ct_mid calls ct_add
 * and ct_mul, so it keeps its own (self->mid): their returns clear
 * self->ts before ct_mid's return would read it.
 *
 *   python3 -m bench trace --arch i386 --smp 2 -s bench/scripts/latency.d \
 *       --run 'calltree threads=2 iters=200'
 */
fbt::ct_add:entry, fbt::ct_mul:entry
{
	self->ts = timestamp;
}

fbt::ct_add:return, fbt::ct_mul:return
/self->ts/
{
	@ns[probefunc] = quantize(timestamp - self->ts);
	@avg_ns[probefunc] = avg(timestamp - self->ts);
	self->ts = 0;
}

fbt::ct_mid:entry
{
	self->mid = timestamp;
}

fbt::ct_mid:return
/self->mid/
{
	@ns[probefunc] = quantize(timestamp - self->mid);
	@avg_ns[probefunc] = avg(timestamp - self->mid);
	self->mid = 0;
}
