/*
 * profile.d — where the time goes: every CPU sampled 997 times a second,
 * each sample counted by its stack, which begins at the interrupted PC.
 * bench/programs/profile.rpn in D (it compiles to the same instructions).
 *
 *   python3 -m bench trace --arch sparc64 -s bench/scripts/profile.d \
 *       --run 'profsplit threads=2 rounds=300' --flamegraph build/profile.svg
 */
profile-997
{
	@samples[stack()] = count();
}
