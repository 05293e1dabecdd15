/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CPU hog that measures its own time off the CPU: it spins for SECS
 * seconds reading CLOCK_MONOTONIC, and the largest gap between two reads is
 * the longest time it waited to run again (a read takes well under a
 * microsecond, so any gap beyond that is time the task was not running).
 *
 * Usage: offcpu SECS [SKIP]
 * Prints "maxgap_us N at_s T cpu_s C": the largest gap after the first SKIP
 * seconds (default 0), when it began (seconds from start), and the CPU time
 * the hog got (its own accounting, which a 2-host-core emulator's vCPU
 * scheduling does not inflate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs, skip, start, prev, t, gap, max = 0, at = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: offcpu SECS [SKIP]\n");
		return 2;
	}
	secs = atof(argv[1]);
	skip = argc == 3 ? atof(argv[2]) : 0;
	start = prev = now(CLOCK_MONOTONIC);
	do {
		t = now(CLOCK_MONOTONIC);
		gap = t - prev;
		if (gap > max && prev - start >= skip) {
			max = gap;
			at = prev - start;
		}
		prev = t;
	} while (t - start < secs);
	printf("maxgap_us %.0f at_s %.2f cpu_s %.2f\n", max * 1e6, at,
	       now(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
