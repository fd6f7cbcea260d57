/* The fire path of one arch: arch code may test its own name. */
#ifdef __i386__
int word_bits = 32;
#endif
