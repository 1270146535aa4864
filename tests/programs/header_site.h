/* tests/programs/header_site.h - a function defined in a header, not
 * inlined: its calls into det are sites in this file, not in the .c file
 * that includes it (see header_site.c). */
#include <pthread.h>

static __attribute__((noinline)) long header_add(pthread_mutex_t *m, long *v)
{
	pthread_mutex_lock(m); /* header_site.h: the site det must name */
	long now = ++*v;
	pthread_mutex_unlock(m);
	return now;
}
