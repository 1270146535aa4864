/* tests/programs/spinner.c - two threads take a lock for ever; prints a line
 * first so a test knows it is running.
 * `spinner DIR MB` first holds MB megabytes of DIR's disk in an unnamed file
 * (O_TMPFILE: the space comes back when the program ends, however it ends),
 * prints "holding" and waits for a line (or the end) of its stdin. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *loop(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

static int hold_disk(const char *dir, long mb)
{
	static char block[1 << 20];
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	if (fd < 0) {
		perror(dir);
		return -1;
	}
	memset(block, 'x', sizeof(block));
	for (long i = 0; i < mb; i++)
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			perror("write");
			return -1;
		}
	printf("holding\n");
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0; /* the end of stdin: go on */
	return 0; /* fd stays open: the space stays held */
}

int main(int argc, char **argv)
{
	if (argc == 3 && hold_disk(argv[1], atol(argv[2])) != 0)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, loop, NULL);
	printf("running\n");
	fflush(stdout);
	loop(NULL);
}
