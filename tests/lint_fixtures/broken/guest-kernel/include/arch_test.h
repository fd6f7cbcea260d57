/* Broken on purpose for the arch-ifdef rule: a condition split over lines. */
#ifndef ARCH_TEST_H
#define ARCH_TEST_H
#if WORD_BITS > 32 && \
    !defined(__x86_64__)
#endif
#endif
