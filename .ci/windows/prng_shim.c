/* ProcessPrng for Wine 8, which lacks it: Rust's std (1.78 and later) takes its randomness from
 * bcryptprimitives.dll's ProcessPrng on Windows 10+. Built into bcryptprimitives.dll beside the test executables
 * (and loaded with WINEDLLOVERRIDES=bcryptprimitives=n), it answers from BCryptGenRandom, which Wine has.
 * Only for running the test suite under Wine; never shipped. */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return BCryptGenRandom(NULL, data, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}
