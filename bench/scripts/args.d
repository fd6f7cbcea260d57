/*
 * args.d — thread_create's first two arguments and the string the first
 * points to: bench/programs/args.rpn in D, its template written by the
 * compiler from the printf.
 *
 *   python3 -m bench trace --arch i386 -q -s bench/scripts/args.d \
 *       --run 'calltree threads=4'
 */
fbt::thread_create:entry
{
	printf("name=%p fn=%p string='%s'\n", arg0, arg1, args[0]);
}
