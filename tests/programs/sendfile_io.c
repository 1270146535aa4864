/* tests/programs/sendfile_io.c - data moved by the kernel between
 * descriptors (sendfile, splice, tee, copy_file_range): a file sent to a TCP
 * connection the program accepted from itself (nginx's `sendfile on`), to a
 * pipe, and copied into another file; what arrives, each call's result and
 * the file offsets it moved are printed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

static void show(const char *what, ssize_t r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerror(errno));
	else
		printf("%s: %zd\n", what, r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char path[] = "/tmp/sendfile_io.XXXXXX";
	int f = mkstemp(path);
	unlink(path);
	char text[300];
	for (int i = 0; i < 300; i++)
		text[i] = (char)('a' + i % 26);
	write(f, text, sizeof(text));
	lseek(f, 0, SEEK_SET);

	/* a TCP connection to itself */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(l, (struct sockaddr *)&a, sizeof(a));
	listen(l, 1);
	socklen_t al = sizeof(a);
	getsockname(l, (struct sockaddr *)&a, &al);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	int s = accept(l, NULL, NULL);

	off_t off = 10;
	show("sendfile at 10, 100 bytes", sendfile(s, f, &off, 100));
	printf("offset now %ld, file position %ld\n", (long)off, (long)lseek(f, 0, SEEK_CUR));
	show("sendfile from the position, 50 bytes", sendfile(s, f, NULL, 50));
	printf("file position %ld\n", (long)lseek(f, 0, SEEK_CUR));
	char got[200] = {0};
	size_t have = 0;
	while (have < 150) {
		ssize_t k = recv(c, got + have, 150 - have, 0);
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	printf("received %zu: %.20s...%.10s\n", have, got, got + have - 10);

	/* into a pipe, then through tee and splice into a second file */
	int p[2], q[2];
	pipe(p);
	pipe(q);
	off = 200;
	show("sendfile to a pipe", sendfile(p[1], f, &off, 40));
	show("tee", tee(p[0], q[1], 40, 0));
	char path2[] = "/tmp/sendfile_io2.XXXXXX";
	int g = mkstemp(path2);
	unlink(path2);
	show("splice pipe to file", splice(p[0], NULL, g, NULL, 40, 0));
	char teed[41] = {0};
	show("read the tee'd copy", read(q[0], teed, 40));
	printf("teed: %s\n", teed);
	off_t from = 0, to = 40;
	show("copy_file_range", copy_file_range(f, &from, g, &to, 30, 0));
	char back[71] = {0};
	show("pread the copy", pread(g, back, 70, 0));
	printf("copy: %s\n", back);
	off_t zero = 0;
	show("sendfile from the copy", sendfile(s, g, &zero, 70));
	memset(got, 0, sizeof(got));
	have = 0;
	while (have < 70) {
		ssize_t k = recv(c, got + have, 70 - have, 0);
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	printf("received %zu: %s\n", have, got);
	return 0;
}
