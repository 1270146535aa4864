/*
 * split_reads - a network client whose bug depends on how a response is
 * split across reads. A server thread answers on a TCP socket on
 * 127.0.0.1; the client assumes each recv() returns whole lines.
 *
 * The bug: the client parses each recv() buffer on its own, so a line
 * split across two reads is parsed as two broken lines.
 *
 * The input that triggers it: the kernel splits the stream where the
 * server's writes and the client's reads happen to meet. det records every
 * recv() with its bytes, so replay gives the client the same pieces (and
 * never needs the server).
 *
 * Output: "ok: N lines, checksum C" natively in most runs, "BUG: broken
 * line ..." in some. A trace of a failing run replays with the same split.
 *
 * Usage: split_reads [LINES]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sample.h"

static int listener;
static long lines;

static void *server(void *arg)
{
	(void)arg;
	int c = accept(listener, NULL, NULL);
	if (c < 0)
		return NULL;
	for (long i = 0; i < lines; i++) {
		char buf[64];
		int n = snprintf(buf, sizeof(buf), "value %ld %ld\n", i, i * i);
		if (write(c, buf, (size_t)n) < 0)
			break;
		if (i % 10 == 0)
			spin(20000);
	}
	close(c);
	return NULL;
}

int main(int argc, char **argv)
{
	lines = arg_long(argc, argv, 1, 2000);
	listener = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	if (bind(listener, (struct sockaddr *)&a, sizeof(a)) || listen(listener, 1) ||
	    getsockname(listener, (struct sockaddr *)&a, &alen)) {
		perror("split_reads: listen");
		return 2;
	}
	pthread_t s;
	pthread_create(&s, NULL, server, NULL);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("split_reads: connect");
		return 2;
	}
	long got = 0, checksum = 0;
	char buf[16384];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[n] = 0;
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
			long i, sq;
			if (sscanf(line, "value %ld %ld", &i, &sq) != 2 || sq != i * i)
				BUG("broken line \"%s\" after %ld good ones", line, got);
			got++;
			checksum += sq;
		}
	}
	pthread_join(s, NULL);
	printf("ok: %ld lines, checksum %ld\n", got, checksum);
	return 0;
}
