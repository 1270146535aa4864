/*
 * tests/programs/api_tour.c - calls every pthread/semaphore/stdio entry point
 * libdet.so interposes, with results that depend on the interleaving
 * (trylock, timed waits, tryjoin), and prints what it saw.
 *
 * Rules: its output is a function of the synchronization order only, so a
 * replay must print exactly what the recording printed.
 */

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec;
static pthread_mutex_t chk;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static pthread_spinlock_t spin;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static sem_t sem;
static int ready, once_runs, counter, spun;
static int trylock_busy, rd_busy, wr_busy, sem_again, timeouts, serial;

static void init_once(void)
{
	pthread_mutex_lock(&m);
	once_runs++;
	pthread_mutex_unlock(&m);
}

static struct timespec soon(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	pthread_once(&once, init_once);
	/* every blocking variant at least once, whatever the interleaving */
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_wrlock(&rw);
	pthread_rwlock_unlock(&rw);
	for (int i = 0; i < 200; i++) {
		if (pthread_mutex_trylock(&m) == EBUSY) {
			pthread_mutex_lock(&m);
			trylock_busy++;
		}
		counter++;
		pthread_mutex_unlock(&m);

		if (pthread_rwlock_tryrdlock(&rw) == EBUSY) {
			pthread_rwlock_rdlock(&rw);
			pthread_mutex_lock(&m);
			rd_busy++;
			pthread_mutex_unlock(&m);
		}
		pthread_rwlock_unlock(&rw);
		if (pthread_rwlock_trywrlock(&rw) == EBUSY) {
			pthread_rwlock_wrlock(&rw);
			wr_busy++;
		}
		pthread_rwlock_unlock(&rw);

		pthread_spin_lock(&spin);
		spun++;
		pthread_spin_unlock(&spin);

		if (sem_trywait(&sem) != 0 && errno == EAGAIN) {
			pthread_mutex_lock(&m);
			sem_again++;
			pthread_mutex_unlock(&m);
		} else {
			sem_post(&sem);
		}
	}
	pthread_mutex_lock(&rec);
	pthread_mutex_lock(&rec);
	pthread_mutex_unlock(&rec);
	pthread_mutex_unlock(&rec);
	if (pthread_mutex_lock(&chk) == 0) {
		int again = pthread_mutex_lock(&chk);
		pthread_mutex_unlock(&chk);
		if (again != EDEADLK)
			printf("errorcheck relock gave %d\n", again);
	}
	if (pthread_barrier_wait(&bar) == PTHREAD_BARRIER_SERIAL_THREAD) {
		pthread_mutex_lock(&m);
		serial++;
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	struct timespec first = soon(1);
	if (pthread_cond_timedwait(&cv, &m, &first) == ETIMEDOUT)
		timeouts++;
	while (!ready) {
		struct timespec ts = soon(2);
		if (pthread_cond_timedwait(&cv, &m, &ts) == ETIMEDOUT)
			timeouts++;
	}
	pthread_mutex_unlock(&m);
	struct timespec ts = soon(1);
	if (sem_timedwait(&sem, &ts) == 0)
		sem_post(&sem);
	if (pthread_mutex_timedlock(&m, &ts) == 0)
		pthread_mutex_unlock(&m);
	if (pthread_rwlock_timedwrlock(&rw, &ts) == 0)
		pthread_rwlock_unlock(&rw);
	if (pthread_rwlock_timedrdlock(&rw, &ts) == 0)
		pthread_rwlock_unlock(&rw);
	struct timespec mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	mono.tv_sec += 1;
	pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mono);
	pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &mono); /* woken by broadcast or times out */
	pthread_mutex_unlock(&m);
	flockfile(stdout);
	printf("worker %ld done\n", id);
	funlockfile(stdout);
	return (void *)(id * 10);
}

static void *detached(void *arg)
{
	sem_post((sem_t *)arg);
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&chk, &a);
	pthread_mutexattr_destroy(&a);
	pthread_barrier_init(&bar, NULL, 3);
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&sem, 0, 1);

	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	sem_t dsem;
	sem_init(&dsem, 0, 0);
	pthread_t d;
	pthread_create(&d, NULL, detached, &dsem);
	pthread_detach(d);
	sem_wait(&dsem);
	sem_destroy(&dsem);

	int busy = 0;
	void *ret;
	while (pthread_tryjoin_np(t[0], &ret) == EBUSY) {
		pthread_mutex_lock(&m);
		ready = 1;
		pthread_cond_broadcast(&cv);
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&m);
		busy++;
		struct timespec ts = soon(1);
		if (pthread_timedjoin_np(t[0], &ret, &ts) == 0)
			break;
	}
	long sum = (long)ret;
	for (int i = 1; i < 3; i++) {
		pthread_join(t[i], &ret);
		sum += (long)ret;
	}
	pthread_barrier_destroy(&bar);
	pthread_spin_destroy(&spin);
	pthread_mutex_destroy(&rec);
	pthread_rwlock_destroy(&rw);
	pthread_cond_destroy(&cv);
	sem_destroy(&sem);
	fprintf(stderr, "stderr: sum %ld\n", sum);
	printf("counter %d spun %d once %d serial %d busy: trylock %d rd %d wr %d sem %d timeouts %d tryjoin %d\n", counter, spun,
	       once_runs, serial, trylock_busy, rd_busy, wr_busy, sem_again, timeouts, busy);
	puts("puts");
	fputs("fputs\n", stdout);
	putchar('c');
	putc('\n', stdout);
	fwrite("fwrite\n", 1, 7, stdout);
	fflush(stdout);
	return 0;
}
