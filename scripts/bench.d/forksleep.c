/*
 * Many sleepers: the parent forks C children; each sleeps 1 ms
 * (nanosleep) L times in a loop. Prints the wall time until the last child
 * is reaped. Ideal is L ms; everything above is wakeup and scheduling cost
 * (timer wakeups of many short sleepers at once).
 *
 * Usage: forksleep CHILDREN LOOPS   (prints "seconds <t>")
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"


int main(int argc, char **argv)
{
	const struct timespec ms = { 0, 1000000 };
	int children, loops, i, status, failed = 0;
	double t0;

	if (argc != 3 || (children = atoi(argv[1])) <= 0 || (loops = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: %s CHILDREN LOOPS\n", argv[0]);
		return 2;
	}
	t0 = now();
	for (i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			for (int l = 0; l < loops; l++)
				nanosleep(&ms, NULL);
			_exit(0);
		}
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	if (failed) {
		fprintf(stderr, "%d children failed\n", failed);
		return 1;
	}
	printf("seconds %.4f\n", now() - t0);
	return 0;
}
