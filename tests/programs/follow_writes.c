/* Writes files in its working directory as a server does its log and pid
 * file: two threads append lines to log.txt under a mutex, main writes its
 * pid to run.pid and removes it at the end. A live replica runs the same
 * code beside it and must leave these files to the program: each line
 * once, run.pid the program's (the replica's unlink must not find it gone,
 * nor the program's). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd;
static int lines = 200;

static void *writer(void *arg)
{
	long me = (long)arg;
	char buf[64];
	for (int i = 0; i < lines; i++) {
		pthread_mutex_lock(&lock);
		int n = snprintf(buf, sizeof(buf), "T%ld line %d\n", me, i);
		if (write(log_fd, buf, (size_t)n) != n)
			abort();
		pthread_mutex_unlock(&lock);
		usleep(500);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		lines = atoi(argv[1]);
	log_fd = open("log.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
	int pid_fd = open("run.pid", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (log_fd < 0 || pid_fd < 0) {
		perror("open");
		return 2;
	}
	dprintf(pid_fd, "%d\n", (int)getpid());
	close(pid_fd);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, writer, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	int bad = 0;
	if (unlink("run.pid") != 0) {
		perror("unlink run.pid");
		bad = 1;
	}
	printf("%s\n", bad ? "files were touched" : "files as expected");
	return bad;
}
