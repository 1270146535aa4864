/*
 * tests/programs/sched_of_pid.c - what the scheduler says about a process
 * named on the command line (TLPI's sched_view and t_sched_getaffinity take
 * a pid): its policy, priority, CPU count and round-robin interval. Replay
 * runs when that process is gone (and maybe on a machine with other CPUs).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sched_of_pid PID\n");
		return 2;
	}
	pid_t pid = (pid_t)atol(argv[1]);
	int policy = sched_getscheduler(pid);
	struct sched_param sp;
	cpu_set_t set;
	struct timespec rr;
	if (policy == -1 || sched_getparam(pid, &sp) != 0 || sched_getaffinity(pid, sizeof set, &set) != 0 ||
	    sched_rr_get_interval(pid, &rr) != 0) {
		perror("sched query");
		return 1;
	}
	printf("policy %d, priority %d, %d CPUs, interval %ld.%09ld\n", policy, sp.sched_priority, CPU_COUNT(&set),
	       (long)rr.tv_sec, rr.tv_nsec);
	return 0;
}
