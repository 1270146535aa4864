/*
 * fork_pool - a fork-based worker pool whose job dispenser has an
 * atomicity violation across processes.
 *
 * The bug: the parent puts a job counter in shared memory, guarded by a
 * process-shared mutex, and forks worker processes. A worker asks "is a job
 * left?" in one critical section and takes it in another. Each is correct;
 * together they are not atomic across processes.
 *
 * The interleaving that triggers it: with one job left,
 *     worker A: lock, next < JOBS, unlock    worker B: lock, next < JOBS, unlock
 *     worker A: lock, take next++, unlock    worker B: lock, take next++, unlock
 * and B holds a job number past the end. It exits with status 2; the
 * parent, collecting its workers with wait(), reports the bug.
 *
 * Output: natively, "ok: R rounds of J jobs done by W workers" in most runs
 * and "BUG: a worker took job J, past the last one, in round R" in some. A
 * trace of a failing run replays with the same BUG line every time: the
 * workers' lock order across processes is part of the trace.
 *
 * Usage: fork_pool [ROUNDS] [WORKERS]
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample.h"

#define JOBS 32

struct pool {
	pthread_mutex_t lock;
	int next;
	int done[JOBS + 16];
	long sum;
};

static void worker(struct pool *p)
{
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int left = p->next < JOBS;
		pthread_mutex_unlock(&p->lock);
		if (!left)
			_exit(0);
		spin(2); /* e.g. getting ready for the job */
		pthread_mutex_lock(&p->lock);
		int job = p->next++;
		pthread_mutex_unlock(&p->lock);
		if (job >= JOBS)
			_exit(2); /* BUG: there was no such job */
		spin(20000); /* the work itself */
		pthread_mutex_lock(&p->lock);
		p->done[job]++;
		p->sum += job;
		pthread_mutex_unlock(&p->lock);
	}
}

int main(int argc, char **argv)
{
	long rounds = arg_long(argc, argv, 1, 20);
	long workers = arg_long(argc, argv, 2, 3);
	struct pool *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&p->lock, &a);
	for (long r = 0; r < rounds; r++) {
		p->next = 0;
		p->sum = 0;
		for (int j = 0; j < JOBS; j++)
			p->done[j] = 0;
		for (long w = 0; w < workers; w++)
			if (fork() == 0)
				worker(p);
		int bad = 0;
		for (long w = 0; w < workers; w++) {
			int st;
			if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2)
				bad = 1;
		}
		if (bad)
			BUG("a worker took job %d, past the last one, in round %ld", p->next - 1, r);
		if (p->sum != JOBS * (JOBS - 1) / 2)
			BUG("jobs went missing in round %ld", r);
	}
	printf("ok: %ld rounds of %d jobs done by %ld workers\n", rounds, JOBS, workers);
	return 0;
}
