/*
 * tests/programs/accept_fd_hole.c - a server thread accepts one connection
 * and echoes a line back. The kernel picks an accept's descriptor number
 * when the call starts waiting: the main thread holds a file open until the
 * server thread waits in accept, then closes it and connects. The accepted
 * number is above the one closed, though the close came first in the
 * recorded order (the accept's event is made when it returns): a replay
 * has a free number below the recorded one when it puts the accepted
 * connection's stand-in in place.
 *
 * Usage: accept_fd_hole   (prints the accepted fd's number and the echo)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int listener;
static pid_t server_tid; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;

static void *serve(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	server_tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_signal(&started);
	pthread_mutex_unlock(&lock);
	int c = accept(listener, NULL, NULL);
	if (c < 0) {
		perror("accept");
		return (void *)1;
	}
	char buf[64];
	ssize_t n = read(c, buf, sizeof(buf));
	if (n > 0 && write(c, buf, (size_t)n) != n)
		perror("write");
	printf("accepted fd %d\n", c);
	close(c);
	return NULL;
}

/* Wait until thread tid is in accept (its number is taken then). */
static void wait_in_accept(pid_t tid)
{
	char path[64], line[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (int tries = 0; tries < 10000; tries++) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
		if (fd >= 0)
			close(fd);
		line[n > 0 ? n : 0] = 0;
		if (!strncmp(line, "43 ", 3) || !strncmp(line, "288 ", 4)) /* accept, accept4 (x86-64) */
			return;
		usleep(1000);
	}
	fprintf(stderr, "the server thread never waited in accept\n");
}

int main(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(listener, 4) != 0 ||
	    getsockname(listener, (struct sockaddr *)&a, &len) != 0) {
		perror("listen");
		return 1;
	}
	int client = socket(AF_INET, SOCK_STREAM, 0);
	int held = open("/dev/null", O_RDONLY); /* below the number accept takes */
	pthread_t t;
	pthread_create(&t, NULL, serve, NULL);
	pthread_mutex_lock(&lock);
	while (!server_tid)
		pthread_cond_wait(&started, &lock);
	pid_t tid = server_tid;
	pthread_mutex_unlock(&lock);
	wait_in_accept(tid);
	close(held);
	if (connect(client, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("connect");
		return 1;
	}
	char buf[64] = "hello\n";
	if (write(client, buf, strlen(buf)) < 0)
		perror("write");
	ssize_t n = read(client, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	void *bad;
	pthread_join(t, &bad);
	printf("echo %s", buf);
	return bad != NULL;
}
