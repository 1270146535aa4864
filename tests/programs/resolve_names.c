/*
 * tests/programs/resolve_names.c - what the file system says a name is,
 * asked in a thread beside another: realpath of a file the program makes
 * itself (missing before, there after), canonicalize_file_name of it, and
 * readlink of the link "link" in the working directory. A replay runs where
 * the file now exists and the link may point elsewhere: it must see what
 * the recording saw.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void *resolve(void *arg)
{
	(void)arg;
	char buf[PATH_MAX];
	pthread_mutex_lock(&m);
	if (realpath("made.txt", buf))
		printf("before: %s exists\n", base(buf));
	else
		printf("before: %s\n", strerror(errno));
	FILE *f = fopen("made.txt", "w");
	if (f)
		fclose(f);
	char *p = canonicalize_file_name("made.txt");
	printf("after: %s\n", p ? base(p) : strerror(errno));
	free(p);
	ssize_t n = readlink("link", buf, sizeof(buf) - 1);
	if (n >= 0)
		printf("link: %.*s\n", (int)n, buf);
	else
		printf("link: %s\n", strerror(errno));
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t th;
	pthread_create(&th, NULL, resolve, NULL);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_join(th, NULL);
	return 0;
}
