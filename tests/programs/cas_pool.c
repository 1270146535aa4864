/*
 * cas_pool - a thread pool's completion queue as nginx keeps it
 * (ngx_thread_pool_done): a pool thread appends each finished task, with
 * the handler to call, under a spinlock made of __atomic_compare_exchange
 * (lock cmpxchg; released by a full fence and a plain store, as
 * ngx_memory_barrier and ngx_unlock do), then writes an eventfd; the
 * main thread, woken by the eventfd, takes the whole queue under the
 * spinlock and calls each task's handler. How many tasks each wake-up
 * finds depends on how far the pool thread got meanwhile, which det sees
 * only if it sees the spinlock: built with plain gcc, its atomics are det
 * events only with detrec --patch-atomics. The pool thread waits for the
 * main thread's acknowledgement (another eventfd) after every ROUND tasks,
 * so that each run has many wake-ups, however loaded the machine.
 *
 * Prints each wake-up's batch size and the handlers' checksum.
 * Usage: cas_pool [TASKS]   (default 400)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct task {
	struct task *next;
	int id;
	void (*handler)(struct task *);
};

static int lock; /* 0 free, 1 held */
static struct task *first, **last = &first;
#define ROUND 10
static int efd, ack_efd;
static int ntasks;
static struct task *tasks;
static long sum;

static void spin_lock(void)
{
	for (;;) {
		int zero = 0;
		if (__atomic_load_n(&lock, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&lock, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
}

static void spin_unlock(void)
{
	__sync_synchronize(); /* nginx's ngx_memory_barrier: lock or $0, (%rsp) */
	__atomic_store_n(&lock, 0, __ATOMIC_RELAXED); /* a plain mov, as ngx_unlock's */
}

static void even_done(struct task *t) { sum += t->id; }
static void odd_done(struct task *t) { sum += 3L * t->id; }

static void *pool(void *arg)
{
	(void)arg;
	for (int i = 0; i < ntasks; i++) {
		struct task *t = &tasks[i];
		volatile unsigned spin = 0;
		for (unsigned k = 0; k < (unsigned)(i * 7919) % 3000; k++)
			spin++; /* a task's work, of varying length */
		t->id = i;
		t->handler = i % 2 ? odd_done : even_done;
		spin_lock();
		*last = t;
		last = &t->next;
		spin_unlock();
		uint64_t one = 1;
		if (write(efd, &one, sizeof(one)) != sizeof(one))
			abort();
		if (i % ROUND == ROUND - 1 && read(ack_efd, &one, sizeof(one)) != sizeof(one))
			abort();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	ntasks = argc > 1 ? atoi(argv[1]) : 400;
	tasks = calloc((size_t)ntasks, sizeof(*tasks));
	efd = eventfd(0, 0);
	ack_efd = eventfd(0, 0);
	pthread_t th;
	pthread_create(&th, NULL, pool, NULL);
	int done = 0, wakeups = 0;
	while (done < ntasks) {
		uint64_t n;
		if (read(efd, &n, sizeof(n)) != sizeof(n))
			abort();
		spin_lock();
		struct task *t = first;
		first = NULL;
		last = &first;
		spin_unlock();
		int batch = 0;
		for (; t; t = t->next, batch++)
			t->handler(t);
		uint64_t one = 1;
		if (done / ROUND != (done + batch) / ROUND && write(ack_efd, &one, sizeof(one)) != sizeof(one))
			abort();
		done += batch;
		wakeups++;
		printf("wake-up %d: %d tasks\n", wakeups, batch);
	}
	pthread_join(th, NULL);
	printf("%d tasks in %d wake-ups, checksum %ld\n", done, wakeups, sum);
	return 0;
}
