/*
 * tests/programs/packed/main.c - a program that needs its own directory:
 * libfoo.so (linked, found through RUNPATH $ORIGIN), libbar.so (dlopen'ed
 * from beside the program) and data.txt / copy.txt (read with read() and
 * stdio). tests/e2e/test_pack.py builds it in a directory it then deletes,
 * and replays a packed trace of it.
 *
 * Output: what the program saw of itself (/proc/self/exe, argv[0], cwd),
 * what it read, and a sum that threads computed under a lock.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int foo_value(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static int (*bar_value)(void);

static void *worker(void *arg)
{
	long add = (long)arg * bar_value();
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&lock);
		total += add + foo_value();
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	char exe[512] = {0}, cwd[512] = {0}, data[128] = {0}, copy[128] = {0};
	if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0 || !getcwd(cwd, sizeof(cwd)))
		return 2;
	int fd = open("data.txt", O_RDONLY);
	if (fd < 0 || read(fd, data, sizeof(data) - 1) < 0)
		return 3;
	close(fd);
	FILE *f = fopen("copy.txt", "r");
	if (!f || !fgets(copy, sizeof(copy), f))
		return 4;
	fclose(f);
	char lib[600];
	snprintf(lib, sizeof(lib), "%.*s/libbar.so", (int)(strrchr(exe, '/') - exe), exe);
	void *h = dlopen(lib, RTLD_NOW);
	if (!h || !(bar_value = (int (*)(void))dlsym(h, "bar_value"))) {
		fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
		return 5;
	}
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("exe=%s argv0=%s cwd=%s\ndata=%scopy=%stotal=%ld\n", exe, argv[0], cwd, data, copy, total);
	return 0;
}
