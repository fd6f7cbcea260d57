/* The fire path of the other arch (tracer/arch/sparc64/). */
#if defined(__sparc_v9__)
int word_bits = 64;
#endif
