/* Shared by the libFuzzer targets in tests/fuzz (see tests/fuzz/README). */
#ifndef EXECD_FUZZ_H
#define EXECD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int	LLVMFuzzerInitialize(int *argc, char ***argv);
int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The one writable directory of code under test: a private tmpfs. */
#define FUZZ_SCRATCH	"/tmp/execd-fuzz"

/*
 * Confine this process before code under test can touch anything: new
 * mount, network, IPC and UTS namespaces (a user namespace first when not
 * root); every mount read-only except the working directory (libFuzzer's
 * corpus and artifacts) and a fresh 64 MiB tmpfs on FUZZ_SCRATCH (also
 * $TMPDIR; the directory itself is made on the host once); /dev a tmpfs with
 * only null and a private devpts; /sys empty; no network but a loopback
 * that is up.  Fatal if any of it fails: a target must not run unconfined.
 */
void	fuzz_sandbox(void);

/* Run the event loop for ms milliseconds; 0: one turn without waiting. */
void	fuzz_pump(unsigned ms);

/* Read everything queued on fd (non-blocking) and throw it away; -1 at EOF. */
int	fuzz_drain(int fd);

#endif
