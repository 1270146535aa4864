/*
 * iso_kept_pages - pages that two threads write round after round (pca's
 * pattern): each takes the next column under a lock and writes it in every
 * row of a matrix whose rows are a page apart, so that both threads write
 * the same pages in every round, and read the other's columns. Under
 * detrun --isolated a page a thread keeps private between rounds must still
 * take the other's commits: the sums are the same on every run (cross
 * reads the column before, natively a race; isolated, the other thread
 * committed it rounds before).
 *
 * Output: "columns N, sum S, cross C" (N: COLS + 2, each thread's last take).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 16
#define COLS 256 /* ints: 1 KiB of each 4 KiB row */

static int (*matrix)[1024];
static int next_col;
static long cross[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	long me = (long)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		int c = next_col++;
		pthread_mutex_unlock(&lock);
		if (c >= COLS)
			return NULL;
		for (int r = 0; r < ROWS; r++) {
			matrix[r][c] = r * COLS + c + 1;
			if (c > 0)
				cross[me] += matrix[r][c - 1]; /* (the other thread's, usually) */
		}
	}
}

int main(void)
{
	matrix = calloc(ROWS, sizeof *matrix);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	long sum = 0;
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++)
			sum += matrix[r][c];
	printf("columns %d, sum %ld, cross %ld\n", next_col, sum, cross[0] + cross[1]);
	return 0;
}
