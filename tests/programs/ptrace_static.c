/*
 * tests/programs/ptrace_static.c - built with -static (Makefile): a program
 * libdet.so cannot enter, for detrec --ptrace (tests/e2e/test_ptrace.py).
 * It prints 8 bytes of /dev/urandom, the clock (clock_gettime, which a
 * static glibc calls through the vDSO unless det hides it) and time(),
 * then two threads print their lines in whatever order they run (racy),
 * then, given a file, its first line. `--ticks`: it prints 5 lines 50 ms
 * apart, then waits for ever (a run detrec --timeout stops); `--fork`: a child prints
 * a line and exits 3, and the parent prints what it waited for.
 *
 * Rules: output is the only thing the test compares; every input it prints
 * changes from run to run, so a replay that printed the same lines got
 * them from the recording.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *worker(void *arg)
{
	for (int i = 0; i < 6; i++) {
		printf("%s %d\n", (const char *)arg, i);
		fflush(stdout);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--ticks") == 0) {
		for (int i = 0; i < 5; i++) {
			printf("tick %d\n", i);
			fflush(stdout);
			usleep(50000);
		}
		for (;;)
			pause();
	}
	if (argc > 1 && strcmp(argv[1], "--fork") == 0) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			printf("child\n");
			fflush(stdout);
			_exit(3);
		}
		int status;
		if (child < 0 || waitpid(child, &status, 0) != child)
			return 2;
		printf("waited: exit %d\n", WEXITSTATUS(status));
		return 0;
	}
	unsigned char bytes[8];
	FILE *r = fopen("/dev/urandom", "rb");
	if (!r || fread(bytes, 1, sizeof bytes, r) != sizeof bytes)
		return 2;
	fclose(r);
	printf("random");
	for (size_t i = 0; i < sizeof bytes; i++)
		printf(" %02x", bytes[i]);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	printf("\nclock %lld.%09ld time %lld\n", (long long)ts.tv_sec, ts.tv_nsec, (long long)time(NULL));
	fflush(stdout);
	pthread_t a, b;
	pthread_create(&a, NULL, worker, "A");
	pthread_create(&b, NULL, worker, "B");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	if (argc > 1) {
		char line[256] = "";
		FILE *f = fopen(argv[1], "r");
		if (!f || !fgets(line, sizeof line, f))
			return 3;
		printf("file %s", line);
		fclose(f);
	}
	return 0;
}
