/*
 * tests/programs/keep_libs/main.c - a program linked against libval.so
 * (RUNPATH $ORIGIN), which tests/e2e/test_keep_libs.py replaces after
 * recording, as a package upgrade replaces a system library.
 *
 * Output: what val() returned (1 as recorded; 2 from the replaced library),
 * what the program saw of itself (/proc/self/exe, argv[0]) and where val()
 * and libc's printf were loaded, and a sum threads computed under a lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

int val(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&lock);
		total += val();
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	char exe[512] = {0};
	if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0)
		return 2;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("val=%d total=%ld exe=%s argv0=%s val@%p printf@%p\n", val(), total, exe, argv[0], (void *)val,
	       (void *)printf);
	return 0;
}
