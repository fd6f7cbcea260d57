/*
 * dp_null.d — DProbes' null handler (bench/programs/dp_null.rpn): a
 * clause that does nothing, so a firing costs the trap and the VM's
 * `abort`.
 *
 *   python3 -m bench trace --arch i386 -s bench/scripts/dp_null.d --run 'fib n=15'
 */
fbt::fib:entry
{
}
