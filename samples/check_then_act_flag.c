/*
 * check_then_act_flag - workers share a list of jobs and claim one by
 * testing its plain `taken` flag and then setting it, without a lock:
 * a check-then-act race with no call between the check and the act.
 *
 * The bug: `if (!job->taken) { job->taken = 1; ... }` is not atomic. Two
 * workers that both test the flag before either sets it both run the job.
 *
 * The interleaving that triggers it: T1 reads taken == 0, T2 reads
 * taken == 0, T1 and T2 set it and run the job. The window is between two
 * plain memory accesses: a scheduler that switches only at calls (strict
 * mode over a plain build) cannot put T2 inside it, whatever its seed;
 * built with `det-cc --sched-points=memory` (samples/bin/
 * check_then_act_flag.mem), strict mode can switch there, and
 * `detrec --chaos --strict` finds the double run.
 *
 * Output: "ok: J jobs, each run once", or "BUG: job K ran twice".
 *
 * Build: det-cc (Makefile), and det-cc --sched-points=memory (.mem).
 * Usage: check_then_act_flag [JOBS]
 */
#include <pthread.h>

#include "sample.h"

#define WORKERS 2
#define MAX_JOBS 1024

static struct job {
	volatile int taken;
	int runs;
} jobs[MAX_JOBS];
static long njobs;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];
		if (!j->taken) {  /* check ... */
			j->taken = 1; /* ... then act: not atomic */
			pthread_mutex_lock(&done_lock);
			j->runs++;
			pthread_mutex_unlock(&done_lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	njobs = arg_long(argc, argv, 1, 8);
	if (njobs > MAX_JOBS)
		njobs = MAX_JOBS;
	pthread_t t[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (long i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < njobs; i++)
		if (jobs[i].runs != 1)
			BUG("job %ld ran %d times", i, jobs[i].runs);
	printf("ok: %ld jobs, each run once\n", njobs);
	return 0;
}
