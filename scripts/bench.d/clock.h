/* Shared by the benchmark's C workloads. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC, as a double. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* BENCH_CLOCK_H */
