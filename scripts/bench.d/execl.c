/*
 * execl loop, after UnixBench's "execl": the process replaces itself with a
 * fresh copy of this program N times, then prints how many execs per second
 * it managed. The start time travels in argv so that it survives the execs.
 *
 * Usage: execl N            (prints "execs_per_sec <rate>")
 * Build: gcc -O2 -static -o execl execl.c   (static: no ld.so work per exec)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"


int main(int argc, char **argv)
{
	char left[32], start[64];
	long n, total;
	double t0;

	if (argc == 2) { /* first call: start the chain */
		total = atol(argv[1]);
		if (total <= 0) {
			fprintf(stderr, "usage: %s N\n", argv[0]);
			return 2;
		}
		n = total;
		t0 = now();
	} else if (argc == 5) { /* inside the chain: argv = self n total t0 */
		n = atol(argv[2]);
		total = atol(argv[3]);
		t0 = atof(argv[4]);
	} else {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	if (n == 0) {
		double dt = now() - t0;

		printf("execs_per_sec %.2f\nexecs %ld\nseconds %.4f\n", total / dt, total, dt);
		return 0;
	}
	snprintf(left, sizeof(left), "%ld", n - 1);
	snprintf(start, sizeof(start), "%.9f", t0);
	char total_s[32];
	snprintf(total_s, sizeof(total_s), "%ld", total);
	execl("/proc/self/exe", argv[0], "-", left, total_s, start, (char *)NULL);
	perror("execl");
	return 1;
}
