/*
 * iso_locks - the other pthreads locks between isolated threads: 3 threads
 * increment one counter under a read-write lock (write side) and another
 * under a spinlock, read both under the read side, and each calls
 * pthread_once, whose routine sets up a table all of them then read.
 * glibc's versions work on each thread-process's private copy of the lock
 * word: without det's, updates are lost and the table is set up 3 times.
 *
 * Output: "rw 3000, spin 3000, once ran 1 time(s), table ok 3".
 */
#include <pthread.h>
#include <stdio.h>

#define N 1000

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_barrier_t start;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static long rw_count, spin_count, once_runs, table_ok;
static int table[64];

static void setup(void)
{
	once_runs++;
	for (int i = 0; i < 64; i++)
		table[i] = i * i;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start); /* all three in one round */
	pthread_once(&once, setup);
	int ok = table[63] == 63 * 63;
	for (int i = 0; i < N; i++) {
		pthread_rwlock_wrlock(&rw);
		rw_count++;
		pthread_rwlock_unlock(&rw);
		pthread_spin_lock(&spin);
		spin_count++;
		pthread_spin_unlock(&spin);
	}
	pthread_rwlock_rdlock(&rw);
	ok = ok && rw_count > 0;
	pthread_rwlock_unlock(&rw);
	pthread_mutex_lock(&count_lock);
	table_ok += ok;
	pthread_mutex_unlock(&count_lock);
	return NULL;
}

int main(void)
{
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	pthread_barrier_init(&start, NULL, 3);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("rw %ld, spin %ld, once ran %ld time(s), table ok %ld\n", rw_count, spin_count, once_runs, table_ok);
	return 0;
}
