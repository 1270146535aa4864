/*
 * tests/programs/futex_lock.c - a lock of the program's own on futex(2) through
 * syscall() (as Rust's std, abseil and LLVM's OpenMP runtime build theirs),
 * three threads, and a sum they update without it (a race): strict mode runs
 * it with no watchdog preemption and replays the racy sum exactly.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int word; /* 0 free, 1 taken, 2 taken with waiters (Drepper's mutex) */
static long locked_sum, racy_sum;

static void lock(void)
{
	int c = 0;
	if (atomic_compare_exchange_strong(&word, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&word, 2);
	while (c != 0) {
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		c = atomic_exchange(&word, 2);
	}
}

static void unlock(void)
{
	if (atomic_fetch_sub(&word, 1) != 1) {
		atomic_store(&word, 0);
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

static void *work(void *arg)
{
	long me = (long)arg;
	for (int i = 0; i < 2000; i++) {
		lock();
		locked_sum += me;
		if (i % 97 == 0) { /* hold it across a sleep now and then: others wait in the kernel */
			struct timespec ts = {0, 20000};
			nanosleep(&ts, NULL);
		}
		unlock();
		long v = racy_sum; /* no lock: a race */
		for (volatile int k = 0; k < 3000; k++)
			;
		racy_sum = v + me;
	}
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, work, (void *)(i + 1));
	struct timespec ts = {0, 1000000};
	syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 12345, &ts, NULL, 0); /* EAGAIN: the word is not 12345 */
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("locked %ld racy %ld\n", locked_sum, racy_sum);
	return locked_sum == 12000 ? 0 : 1;
}
