/* Broken on purpose for the arch-ifdef rule: arch-neutral code that asks
 * which arch it is built for, by the compiler's macro and by one of ours. */
#ifdef __sparc__
int word_bits = 64;
#elif defined(ARCH_I386) || defined(HAVE_SOMETHING)
int word_bits = 32;
#endif
