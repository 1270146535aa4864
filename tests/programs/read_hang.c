/*
 * tests/programs/read_hang.c - hangs where det cannot tell a deadlock: a
 * worker waits in a read of a pipe nobody writes (input could still come,
 * as far as det knows) while main joins it. The first run (the one that
 * finds no file at PATH, and creates it) passes; each later run hangs
 * with probability 1/2, drawn from getrandom (recorded: its replay hangs
 * too). Usage: read_hang PATH.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

static int pipe_fds[2];

static void *reader(void *arg)
{
	char c;
	if (arg)
		(void)!read(pipe_fds[0], &c, 1); /* nobody writes: blocks for ever */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int hang = 0;
	if (access(argv[1], F_OK) == 0) {
		unsigned char r = 0;
		if (getrandom(&r, 1, 0) == 1)
			hang = r & 1;
	} else {
		int fd = open(argv[1], O_CREAT | O_WRONLY, 0600);
		if (fd >= 0)
			close(fd);
	}
	if (pipe(pipe_fds) != 0)
		return 2;
	pthread_t t;
	pthread_create(&t, NULL, reader, hang ? (void *)1 : NULL);
	pthread_join(t, NULL);
	return 0;
}
