/* tests/programs/pbzip_like.c - pbzip2's shape and its bug, racy as in
 * pbzip2: main (the producer) cuts a buffer into blocks and queues them,
 * argv[1] consumers (default 2) "compress" each (a checksum) and hand it to
 * a writer thread, which prints the blocks in order. Once the writer has
 * printed the last block, main joins the writer and deletes the queue
 * (destroys and frees its mutex and condition, sets the pointers to NULL)
 * without joining the consumers, which may still wait on the queue's
 * condition with a timeout and then lock its mutex: pthread_mutex_lock(NULL)
 * or a wait on a NULL condition: SIGSEGV inside the call, often while main
 * cleans up for 2 ms; sometimes main ends first: exit 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCKS 16
#define BLOCK_SIZE 4096
#define QSIZE 4

struct queue {
	int blocks[QSIZE];
	int head, tail, count;
	int done;
	pthread_mutex_t *mut;
	pthread_cond_t *not_full, *not_empty;
};

static struct queue *fifo;
static unsigned char data[BLOCKS * BLOCK_SIZE];
static unsigned long sums[BLOCKS];
static int ready[BLOCKS];
static pthread_mutex_t out_mut = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t out_cond = PTHREAD_COND_INITIALIZER;

static struct queue *queue_new(void)
{
	struct queue *q = calloc(1, sizeof(*q));
	q->mut = malloc(sizeof(*q->mut));
	q->not_full = malloc(sizeof(*q->not_full));
	q->not_empty = malloc(sizeof(*q->not_empty));
	pthread_mutex_init(q->mut, NULL);
	pthread_cond_init(q->not_full, NULL);
	pthread_cond_init(q->not_empty, NULL);
	return q;
}

static void queue_delete(struct queue *q)
{
	pthread_mutex_destroy(q->mut);
	free(q->mut);
	q->mut = NULL;
	pthread_cond_destroy(q->not_full);
	free(q->not_full);
	q->not_full = NULL;
	pthread_cond_destroy(q->not_empty);
	free(q->not_empty);
	q->not_empty = NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(fifo->mut);
		while (fifo->count == 0) {
			if (fifo->done) {
				pthread_mutex_unlock(fifo->mut);
				return NULL; /* (pbzip2 forgets this check on one path) */
			}
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_nsec += 1000000;
			if (t.tv_nsec >= 1000000000) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(fifo->not_empty, fifo->mut, &t);
		}
		int b = fifo->blocks[fifo->head];
		fifo->head = (fifo->head + 1) % QSIZE;
		fifo->count--;
		pthread_cond_signal(fifo->not_full);
		pthread_mutex_unlock(fifo->mut);
		unsigned long s = 0;
		for (int i = 0; i < BLOCK_SIZE; i++)
			s = s * 31 + data[b * BLOCK_SIZE + i];
		pthread_mutex_lock(&out_mut);
		sums[b] = s;
		ready[b] = 1;
		pthread_cond_broadcast(&out_cond);
		pthread_mutex_unlock(&out_mut);
	}
}

static void *writer(void *arg)
{
	(void)arg;
	for (int b = 0; b < BLOCKS; b++) {
		pthread_mutex_lock(&out_mut);
		while (!ready[b])
			pthread_cond_wait(&out_cond, &out_mut);
		unsigned long s = sums[b];
		pthread_mutex_unlock(&out_mut);
		printf("block %d: %016lx\n", b, s);
	}
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: pbzip_like [consumers, 1..64]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + i / 13);
	fifo = queue_new();
	pthread_t cons[64], wr;
	for (int i = 0; i < n; i++)
		pthread_create(&cons[i], NULL, consumer, NULL);
	pthread_create(&wr, NULL, writer, NULL);
	for (int b = 0; b < BLOCKS; b++) {
		pthread_mutex_lock(fifo->mut);
		while (fifo->count == QSIZE)
			pthread_cond_wait(fifo->not_full, fifo->mut);
		fifo->blocks[fifo->tail] = b;
		fifo->tail = (fifo->tail + 1) % QSIZE;
		fifo->count++;
		pthread_cond_signal(fifo->not_empty);
		pthread_mutex_unlock(fifo->mut);
	}
	pthread_join(wr, NULL);
	/* the bug: the consumers may still be in their loop */
	queue_delete(fifo);
	pthread_mutex_lock(&out_mut);
	fifo->done = 1;
	pthread_mutex_unlock(&out_mut);
	struct timespec cleanup = {0, 2000000}; /* closing files, statistics */
	nanosleep(&cleanup, NULL);
	printf("done\n");
	return 0;
}
