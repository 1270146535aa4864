/*
 * iso_mapped_input - the Phoenix kernels' way with input: the file is
 * mmap'ed PROT_READ | PROT_WRITE, MAP_PRIVATE (its size + 1 bytes) before
 * the threads, which read it and write into it (reverse_index ends each
 * link with a 0 in place); an anonymous private writable mapping made
 * before the threads is their shared scratch. Under detrun --isolated both
 * must be memory the threads share (each thread's writes seen by the
 * others after a join), and munmap after the threads must work. main
 * writes a byte of the file's mapping before the threads too.
 *
 * Usage: iso_mapped_input FILE (its bytes: any; 8192 or more to span pages).
 * Output: "sums A B, upper U, scratch S1 S2, second round R", the same as
 * natively.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char *data;
static long *scratch;
static size_t len;

struct part {
	size_t from, to;
	long sum;
	int slot;
};

/* sums its part, then upper-cases it in place, and leaves its sum in the
 * scratch mapping */
static void *worker(void *arg)
{
	struct part *p = arg;
	for (size_t i = p->from; i < p->to; i++) {
		p->sum += data[i];
		if (data[i] >= 'a' && data[i] <= 'z')
			data[i] = (unsigned char)(data[i] - 'a' + 'A');
	}
	scratch[p->slot * 512] = p->sum; /* (a page apart) */
	return NULL;
}

static void *count_upper(void *arg)
{
	long *n = arg;
	for (size_t i = 0; i < len; i++)
		*n += data[i] >= 'A' && data[i] <= 'Z';
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return 2;
	len = (size_t)st.st_size;
	data = mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	scratch = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (data == MAP_FAILED || scratch == MAP_FAILED)
		return 3;
	scratch[3 * 512] = 7; /* written before the threads: must survive */
	if (len > 4096)
		data[4097] = 'q'; /* so must this, in the file's mapping (the worker upper-cases it) */
	struct part parts[2] = {{0, len / 2, 0, 0}, {len / 2, len, 0, 1}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &parts[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	long upper = 0;
	for (size_t i = 0; i < len; i++)
		upper += data[i] >= 'A' && data[i] <= 'Z';
	printf("sums %ld %ld, upper %ld, scratch %ld %ld %ld", parts[0].sum, parts[1].sum, upper, scratch[0],
	       scratch[512], scratch[3 * 512]);
	munmap(scratch, 4 * 4096);
	/* a thread after the other mapping is gone still sees the file's */
	long again = 0;
	pthread_create(&t[0], NULL, count_upper, &again);
	pthread_join(t[0], NULL);
	munmap(data, len + 1);
	close(fd);
	printf(", second round %ld\n", again);
	return 0;
}
