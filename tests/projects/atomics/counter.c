/* tests/projects/atomics/counter.c - a tiny library whose only
 * synchronization is C11 atomics: what det-cc must turn into events. */
#include <stdatomic.h>

#include "counter.h"

static atomic_long total;

void counter_add(long n)
{
	atomic_fetch_add(&total, n);
}

long counter_get(void)
{
	return atomic_load(&total);
}
