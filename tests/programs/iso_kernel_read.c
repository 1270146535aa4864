/*
 * iso_kernel_read - memory the kernel writes: a thread read()s a file into
 * a global buffer and pread()s it into a heap buffer; the main thread
 * prints both after the join. Under detrun --isolated both buffers are
 * write-protected isolated memory, which the kernel cannot fault on: det
 * touches the buffer first (a read that failed with EFAULT printed -1).
 *
 * Usage: iso_kernel_read FILE. Output: "read N, pread M: <the first line twice>".
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char global_buf[256];
static char *heap_buf;
static long got_read, got_pread;
static const char *path;

static void *reader(void *arg)
{
	(void)arg;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	got_read = read(fd, global_buf, sizeof global_buf - 1);
	got_pread = pread(fd, heap_buf, 255, 0);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: iso_kernel_read FILE\n");
		return 2;
	}
	path = argv[1];
	heap_buf = calloc(1, 256);
	pthread_t t;
	pthread_create(&t, NULL, reader, NULL);
	pthread_join(t, NULL);
	global_buf[strcspn(global_buf, "\n")] = 0;
	heap_buf[strcspn(heap_buf, "\n")] = 0;
	printf("read %ld, pread %ld: %s %s\n", got_read, got_pread, global_buf, heap_buf);
	return 0;
}
