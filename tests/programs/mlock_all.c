/* tests/programs/mlock_all.c - a real-time style program locks its memory
 * with mlockall(MCL_CURRENT | MCL_FUTURE), then reports how much of it the
 * kernel says is locked (VmLck): its own 64 MiB buffer must be, det's rings
 * (gigabytes, mostly never touched) must not be, nor take seconds to lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUF (64L << 20)

static long vm_locked_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmLck: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void *worker(void *arg)
{
	return arg;
}

int main(void)
{
	char *buf = malloc(BUF);
	memset(buf, 1, BUF);
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		perror("mlockall");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL); /* a thread's stack after MCL_FUTURE */
	pthread_join(t, NULL);
	long kib = vm_locked_kib();
	int ok = kib >= BUF / 1024 && kib < 1024L * 1024;
	printf("%s\n", ok ? "locked: the program's memory, not det's" : "locked: wrong amount");
	if (!ok)
		fprintf(stderr, "VmLck: %ld kB\n", kib);
	munlockall();
	free(buf);
	return ok ? 0 : 1;
}
