/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CPU hog that measures its own time off the CPU: it spins for SECS
 * seconds reading CLOCK_MONOTONIC, and the largest gap between two reads is
 * the longest time it waited to run again (a read takes well under a
 * microsecond, so any gap beyond that is time the task was not running).
 *
 * Usage: offcpu SECS
 * Prints "maxgap_us N at_s T cpu_s C": the largest gap, when it began
 * (seconds from start), and the CPU time the hog got (its own accounting);
 * then "per_s_ms G0 G1 ...": the largest gap that began in each second,
 * in ms, so that a test can tell the phases of its run apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_SECS	600

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static double per_s[MAX_SECS];
	double secs, start, prev, t, gap, max = 0, at = 0;
	int i, sec;

	if (argc != 2 || (secs = atof(argv[1])) <= 0 || secs > MAX_SECS) {
		fprintf(stderr, "usage: offcpu SECS (1-%d)\n", MAX_SECS);
		return 2;
	}
	start = prev = now(CLOCK_MONOTONIC);
	do {
		t = now(CLOCK_MONOTONIC);
		gap = t - prev;
		sec = (int)(prev - start);
		if (sec < MAX_SECS && gap > per_s[sec])
			per_s[sec] = gap;
		if (gap > max) {
			max = gap;
			at = prev - start;
		}
		prev = t;
	} while (t - start < secs);
	printf("maxgap_us %.0f at_s %.2f cpu_s %.2f\n", max * 1e6, at,
	       now(CLOCK_PROCESS_CPUTIME_ID));
	printf("per_s_ms");
	for (i = 0; i < (int)secs && i < MAX_SECS; i++)
		printf(" %.0f", per_s[i] * 1e3);
	printf("\n");
	return 0;
}
